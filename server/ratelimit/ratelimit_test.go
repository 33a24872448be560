package ratelimit_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/ratelimit"
)

// start is where every test's clock starts.
var start = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// each runs fn against every Limiter implementation, each on its own clock.
func each(t *testing.T, fn func(t *testing.T, l ratelimit.Limiter, c *clocktest.Clock)) {
	t.Run("memory", func(t *testing.T) {
		c := clocktest.New(start)
		fn(t, ratelimit.NewMemory(c.Now), c)
	})
	t.Run("redis", func(t *testing.T) {
		c := clocktest.New(start)
		fn(t, ratelimit.NewRedis(testRedis(t), "xpromo-test:"+ids.New("rl")+":", c.Now), c)
	})
}

// testRedis connects to XPROMO_TEST_REDIS_URL (make test sets it). Each test
// uses a key prefix of its own, so tests never see each other's windows.
func testRedis(t *testing.T) *redis.Client {
	t.Helper()
	url := os.Getenv("XPROMO_TEST_REDIS_URL")
	if url == "" {
		t.Skip("XPROMO_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379/0); skipping the Redis limiter tests")
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("XPROMO_TEST_REDIS_URL: %v", err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis at %s: %v", url, err)
	}
	return c
}

func allow(t *testing.T, l ratelimit.Limiter, bucket string, p ratelimit.Policy) ratelimit.Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), bucket, p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAllowUpToTheLimitThenDeny(t *testing.T) {
	each(t, func(t *testing.T, l ratelimit.Limiter, c *clocktest.Clock) {
		p := ratelimit.Policy{Name: "write", Limit: 3, Window: time.Minute}
		for i := 1; i <= 3; i++ {
			d := allow(t, l, "app:a", p)
			want := ratelimit.Decision{Allowed: true, Limit: 3, Remaining: 3 - i, Reset: time.Minute - time.Duration(i-1)*10*time.Second}
			if d != want {
				t.Fatalf("request %d: %+v, want %+v", i, d, want)
			}
			c.Advance(10 * time.Second)
		}
		// 30 s into the window: refused, the window closes in 30 s.
		for range 2 {
			d := allow(t, l, "app:a", p)
			want := ratelimit.Decision{Allowed: false, Limit: 3, Remaining: 0, Reset: 30 * time.Second}
			if d != want {
				t.Fatalf("over the limit: %+v, want %+v", d, want)
			}
		}
	})
}

func TestWindowResets(t *testing.T) {
	each(t, func(t *testing.T, l ratelimit.Limiter, c *clocktest.Clock) {
		p := ratelimit.Policy{Name: "write", Limit: 2, Window: time.Minute}
		allow(t, l, "ip:192.0.2.1", p)
		allow(t, l, "ip:192.0.2.1", p)
		c.Advance(time.Minute - time.Millisecond)
		if d := allow(t, l, "ip:192.0.2.1", p); d.Allowed || d.Reset != time.Millisecond {
			t.Fatalf("1 ms before the window closes: %+v, want refused with 1ms to go", d)
		}
		c.Advance(time.Millisecond)
		d := allow(t, l, "ip:192.0.2.1", p)
		if want := (ratelimit.Decision{Allowed: true, Limit: 2, Remaining: 1, Reset: time.Minute}); d != want {
			t.Fatalf("new window: %+v, want %+v", d, want)
		}
		// Long after, a new window again.
		c.Advance(24 * time.Hour)
		if d := allow(t, l, "ip:192.0.2.1", p); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("a day later: %+v", d)
		}
	})
}

func TestBucketsAndPoliciesAreSeparate(t *testing.T) {
	each(t, func(t *testing.T, l ratelimit.Limiter, c *clocktest.Clock) {
		read := ratelimit.Policy{Name: "read", Limit: 1, Window: time.Minute}
		write := ratelimit.Policy{Name: "write", Limit: 1, Window: time.Minute}
		for _, step := range []struct {
			bucket string
			p      ratelimit.Policy
			want   bool
		}{
			{"app:a", write, true},
			{"app:a", write, false},
			{"app:a", read, true}, // reads have their own budget
			{"app:b", write, true},
			{"ip:192.0.2.1", write, true},
			{"app:b", write, false},
			{"app:a", read, false},
		} {
			if d := allow(t, l, step.bucket, step.p); d.Allowed != step.want {
				t.Fatalf("%s %s: allowed = %v, want %v", step.bucket, step.p.Name, d.Allowed, step.want)
			}
		}
	})
}

func TestZeroLimitRefusesEverything(t *testing.T) {
	each(t, func(t *testing.T, l ratelimit.Limiter, c *clocktest.Clock) {
		d := allow(t, l, "app:a", ratelimit.Policy{Name: "write", Limit: 0, Window: time.Minute})
		if d.Allowed || d.Remaining != 0 || d.Reset != time.Minute {
			t.Fatalf("%+v", d)
		}
	})
}

func TestInvalidPolicy(t *testing.T) {
	each(t, func(t *testing.T, l ratelimit.Limiter, c *clocktest.Clock) {
		for _, p := range []ratelimit.Policy{
			{Name: "", Limit: 1, Window: time.Minute},
			{Name: "x", Limit: -1, Window: time.Minute},
			{Name: "x", Limit: 1, Window: 0},
		} {
			if _, err := l.Allow(context.Background(), "app:a", p); err == nil {
				t.Errorf("%+v accepted", p)
			}
		}
	})
}

// Many goroutines at once: exactly Limit are allowed per window, whatever the
// interleaving; the next window allows Limit again.
func TestConcurrentRequestsAllowExactlyTheLimit(t *testing.T) {
	each(t, func(t *testing.T, l ratelimit.Limiter, c *clocktest.Clock) {
		p := ratelimit.Policy{Name: "write", Limit: 25, Window: time.Minute}
		for window := range 2 {
			var allowed atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, 100)
			for range 100 {
				wg.Go(func() {
					d, err := l.Allow(context.Background(), "app:busy", p)
					if err != nil {
						errs <- err
						return
					}
					if d.Allowed {
						allowed.Add(1)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if n := allowed.Load(); n != 25 {
				t.Fatalf("window %d: %d allowed, want exactly 25", window, n)
			}
			c.Advance(time.Minute)
		}
	})
}

// Closed windows are dropped, so memory holds only the recently active
// buckets however many callers came by.
func TestMemorySweepsClosedWindows(t *testing.T) {
	c := clocktest.New(start)
	m := ratelimit.NewMemory(c.Now)
	p := ratelimit.Policy{Name: "read", Limit: 5, Window: time.Minute}
	for i := range 1000 {
		if _, err := m.Allow(context.Background(), fmt.Sprintf("ip:10.0.%d.%d", i/256, i%256), p); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Len(); n != 1000 {
		t.Fatalf("%d windows, want 1000", n)
	}
	c.Advance(2 * time.Minute)
	// 5,000 new callers touch every shard (the chance that one of 64 shards
	// is missed is below 1e-30), and each touched shard drops its closed
	// windows: only the new callers' windows remain.
	for i := range 5000 {
		if _, err := m.Allow(context.Background(), fmt.Sprintf("app:%d", i), p); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Len(); n != 5000 {
		t.Fatalf("%d windows held, want the 5000 open ones only", n)
	}
}

// Redis: the limit is shared by separate limiters (separate instances) on
// the same keys, and windows expire in Redis.
func TestRedisIsSharedAcrossInstances(t *testing.T) {
	rdb := testRedis(t)
	c := clocktest.New(start)
	prefix := "xpromo-test:" + ids.New("rl") + ":"
	a := ratelimit.NewRedis(rdb, prefix, c.Now)
	b := ratelimit.NewRedis(testRedis(t), prefix, c.Now)
	p := ratelimit.Policy{Name: "write", Limit: 2, Window: time.Minute}
	if !allow(t, a, "app:x", p).Allowed || !allow(t, b, "app:x", p).Allowed {
		t.Fatal("first two refused")
	}
	if allow(t, a, "app:x", p).Allowed || allow(t, b, "app:x", p).Allowed {
		t.Fatal("third allowed: the instances do not share the limit")
	}
	ttl, err := rdb.PTTL(context.Background(), prefix+"write:app:x").Result()
	if err != nil || ttl <= 0 || ttl > time.Minute+time.Second {
		t.Fatalf("window key TTL = %v, %v; want it to expire with the window", ttl, err)
	}
}

func TestRedisUnreachable(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	l := ratelimit.NewRedis(rdb, "x:", nil)
	if _, err := l.Allow(context.Background(), "app:a", ratelimit.Write(0)); err == nil {
		t.Fatal("no error from an unreachable Redis")
	}
}
