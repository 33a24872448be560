package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisTimeout bounds one Allow against Redis, so a hung cache delays
// a request by at most this much before the caller fails open.
const DefaultRedisTimeout = 250 * time.Millisecond

// Redis is a Limiter shared by every server instance using the same Redis:
// one hash per (policy, bucket) holding the window's start and count,
// updated atomically by a Lua script.
//
// The time comes from the caller's clock (Now), not from Redis, so tests can
// move it; instances' clocks only need to agree to well within a window
// (NTP does). A window whose start lies more than a window in the future (a
// clock stepped back) is restarted rather than trusted.
type Redis struct {
	client  redis.Scripter
	prefix  string
	now     func() time.Time
	timeout time.Duration
}

// NewRedis returns a limiter storing its windows under keys starting with
// prefix (e.g. "xpromo:rl:"), on the clock now (time.Now if nil).
func NewRedis(client redis.Scripter, prefix string, now func() time.Time) *Redis {
	if now == nil {
		now = time.Now
	}
	return &Redis{client: client, prefix: prefix, now: now, timeout: DefaultRedisTimeout}
}

// fixedWindow: KEYS[1] = the window's hash; ARGV = now (ms), window (ms),
// limit. Returns {allowed (0|1), count, ms until the window closes}. The key
// expires when its window closes (plus a second of slack for clock skew), so
// Redis holds only open windows.
var fixedWindow = redis.NewScript(`
local now = tonumber(ARGV[1])
local win = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local w = redis.call('HMGET', KEYS[1], 's', 'n')
local s = tonumber(w[1])
local n = tonumber(w[2])
if s == nil or n == nil or now >= s + win or now < s - win then
  s = now
  n = 0
end
local allowed = 0
if n < limit then
  n = n + 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 's', s, 'n', n)
redis.call('PEXPIRE', KEYS[1], s + win - now + 1000)
return {allowed, n, s + win - now}
`)

// Allow implements Limiter.
func (l *Redis) Allow(ctx context.Context, bucket string, p Policy) (Decision, error) {
	if err := p.Validate(); err != nil {
		return Decision{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	key := l.prefix + p.Name + ":" + bucket
	res, err := fixedWindow.Run(ctx, l.client, []string{key}, l.now().UnixMilli(), p.Window.Milliseconds(), p.Limit).Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	if len(res) != 3 {
		return Decision{}, fmt.Errorf("ratelimit: redis: unexpected script reply %v", res)
	}
	reset := time.Duration(res[2]) * time.Millisecond
	return Decision{
		Allowed:   res[0] == 1,
		Limit:     p.Limit,
		Remaining: max(0, p.Limit-int(res[1])),
		Reset:     min(max(0, reset), p.Window),
	}, nil
}
