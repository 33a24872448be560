package assembly

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/xpromo/xpromo/server/ratelimit"
)

// redisKeyPrefix namespaces the limiter's keys in a Redis shared with others.
const redisKeyPrefix = "xpromo:ratelimit:"

// rateLimiter builds the limiter: Redis when cfg.RedisURL is set, so that
// limits hold across instances, else in memory (per instance).
//
// A Redis that does not answer at start is only logged: the limiter fails
// open at request time (see docs/limits.md), and Redis may come back. A URL
// that does not parse is a configuration error.
func rateLimiter(cfg Config) (ratelimit.Limiter, ratelimit.Policy, ratelimit.Policy, error) {
	read, write := ratelimit.Read(cfg.ReadLimit), ratelimit.Write(cfg.WriteLimit)
	for _, p := range []ratelimit.Policy{read, write} {
		if err := p.Validate(); err != nil {
			return nil, read, write, err
		}
	}
	if cfg.RedisURL == "" {
		return ratelimit.NewMemory(cfg.Now), read, write, nil
	}
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, read, write, fmt.Errorf("redis URL: %w", err)
	}
	// Let the limiter's per-call deadline bound the socket waits too.
	opts.ContextTimeoutEnabled = true
	client := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		cfg.Logger.Warn("redis does not answer; rate limits fail open until it does", "addr", opts.Addr, "error", err.Error())
	}
	return ratelimit.NewRedis(client, redisKeyPrefix, cfg.Now), read, write, nil
}
