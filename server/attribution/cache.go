package attribution

import (
	"context"
	"sync"
	"time"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/txunit"
)

// DefaultCacheTTL is how long the SDK endpoints reuse an app record or an
// SDK key read from the store. A key revoked on this instance is forgotten
// at once; on another instance of the same database it stops verifying
// within this long. Only keys that exist are cached, so a key registered a
// moment ago works on its first use.
const DefaultCacheTTL = 30 * time.Second

// appCache keeps recently read apps and SDK keys: fills and claims read the
// same few rows again and again.
type appCache struct {
	apps recent[apps.App]
	keys recent[SDKKey]
}

func (s *Service) cacheTTL() time.Duration {
	if s.CacheTTL > 0 {
		return s.CacheTTL
	}
	return DefaultCacheTTL
}

// app returns an app (false when it does not exist).
func (s *Service) app(ctx context.Context, id string) (apps.App, bool, error) {
	return s.cache.apps.get(ctx, id, s.cacheTTL(), func(ctx context.Context) (a apps.App, found bool, err error) {
		err = s.View(ctx, func(ctx context.Context, tx Tx) error {
			a, found, err = tx.GetApp(ctx, id, false)
			return err
		})
		return a, found, err
	})
}

// sdkKey returns a registered key (false when there is none).
func (s *Service) sdkKey(ctx context.Context, kid string) (SDKKey, bool, error) {
	return s.cache.keys.get(ctx, kid, s.cacheTTL(), func(ctx context.Context) (k SDKKey, found bool, err error) {
		err = s.View(ctx, func(ctx context.Context, tx Tx) error {
			k, found, err = tx.SDKKey(ctx, kid)
			return err
		})
		return k, found, err
	})
}

// ForgetApp drops the app's cached record, so that this instance's SDK
// endpoints see a status change at once (other instances within
// DefaultCacheTTL): the lifecycle review calls it after a suspension.
func (s *Service) ForgetApp(id string) { s.cache.apps.forget(id) }

// recent keeps records read from the store, by id, for a TTL, so that the
// SDK endpoints' hot path (a fill: the publisher, its key, the winner) does
// not take a store connection, which it would queue for behind the claims'
// and sweeps' transactions (BENCHMARKS.md, "The fills' cache misses").
//
//   - Ages are real time (time.Now, monotonic), not the service's clock:
//     the test clock's jumps move business time, not how long ago a row
//     was read, and must not empty the cache of every instance at once.
//   - A record read in use is read again in the background once it is half
//     its TTL old, while callers keep the cached copy: a hot record never
//     expires under its callers. Nothing is served past its TTL.
//   - Callers that miss the same id at once share one read (a fill stampede
//     after an expiry is one query, not one a fill). Only a found record is
//     shared: a caller that joined a read answering "not found" reads for
//     itself, since the row may have committed after that read began (a
//     key registered a moment ago works on its first use).
//   - forget wins over every read in flight: their results are not kept.
//   - A caller whose unit of work holds a transaction reads through it (it
//     may see its own uncommitted writes) and caches the record only once
//     the unit commits; nobody joins such a read.
//
// The zero value is ready to use.
type recent[T any] struct {
	now func() time.Time // nil: time.Now

	mu      sync.Mutex
	entries map[string]entry[T]
	reads   map[string]*read[T] // in flight, shared
	epoch   uint64              // bumped by forget: reads begun before it are not kept
}

type entry[T any] struct {
	v  T
	at time.Time // when it was read
}

// read is a shared read in flight.
type read[T any] struct {
	done  chan struct{}
	v     T
	found bool
	err   error
}

// maxCached bounds each map; past it the cache is emptied and refilled.
const maxCached = 100_000

// readTimeout bounds a shared or background read: it runs apart from the
// caller's context, which may be cancelled while others wait on it.
const readTimeout = 10 * time.Second

func (c *recent[T]) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func fresh(at, now time.Time, ttl time.Duration) bool {
	return !now.Before(at) && now.Sub(at) < ttl
}

// get returns id's record from the cache, or load's (found false: there is
// none; nothing is cached then).
func (c *recent[T]) get(ctx context.Context, id string, ttl time.Duration, load func(context.Context) (T, bool, error)) (T, bool, error) {
	now := c.clock()
	c.mu.Lock()
	if e, ok := c.entries[id]; ok && fresh(e.at, now, ttl) {
		if now.Sub(e.at) >= ttl/2 && c.reads[id] == nil {
			c.startLocked(ctx, id, load) // refresh ahead; this caller does not wait
		}
		c.mu.Unlock()
		return e.v, true, nil
	}
	if txunit.Holding(ctx) {
		epoch := c.epoch
		c.mu.Unlock()
		v, found, err := load(ctx)
		if err == nil && found {
			txunit.AfterCommit(ctx, func() { c.put(id, v, now, epoch) })
		}
		return v, found, err
	}
	r, joined := c.reads[id], true
	if r == nil {
		r, joined = c.startLocked(ctx, id, load), false
	}
	c.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		var zero T
		return zero, false, ctx.Err()
	}
	if joined && r.err == nil && !r.found {
		return load(ctx)
	}
	return r.v, r.found, r.err
}

// startLocked starts a shared read of id; c.mu is held. The read runs apart
// from ctx's cancellation and unit of work, under readTimeout, and is kept
// when it finds the record and no forget came in between.
func (c *recent[T]) startLocked(ctx context.Context, id string, load func(context.Context) (T, bool, error)) *read[T] {
	r := &read[T]{done: make(chan struct{})}
	if c.reads == nil {
		c.reads = map[string]*read[T]{}
	}
	c.reads[id] = r
	epoch := c.epoch
	go func() {
		rctx, cancel := context.WithTimeout(txunit.Detached(context.WithoutCancel(ctx)), readTimeout)
		defer cancel()
		at := c.clock()
		r.v, r.found, r.err = load(rctx)
		// Kept and retired in one step: a caller never finds neither the
		// record nor its read, and so never reads it a second time.
		c.mu.Lock()
		if r.err == nil && r.found {
			c.putLocked(id, r.v, at, epoch)
		}
		if c.reads[id] == r {
			delete(c.reads, id)
		}
		c.mu.Unlock()
		close(r.done)
	}()
	return r
}

// put caches v, read at at, unless a forget came after the read began or
// a later read is already cached.
func (c *recent[T]) put(id string, v T, at time.Time, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(id, v, at, epoch)
}

func (c *recent[T]) putLocked(id string, v T, at time.Time, epoch uint64) {
	if c.epoch != epoch {
		return
	}
	if e, ok := c.entries[id]; ok && e.at.After(at) {
		return
	}
	if c.entries == nil || len(c.entries) >= maxCached {
		c.entries = map[string]entry[T]{}
	}
	c.entries[id] = entry[T]{v, at}
}

// forget drops id's record; reads in flight (of any id) are not kept.
func (c *recent[T]) forget(id string) {
	c.mu.Lock()
	delete(c.entries, id)
	delete(c.reads, id)
	c.epoch++
	c.mu.Unlock()
}

// clickIDs remembers, by nonce, the chain id of the clicks this instance
// recorded, so that the claim of a reported click can send its escrow
// hold's ledger reads, which name the chain's id, in the round trip that
// finds the chain (ClaimReads). It is a hint only: a claim whose hint is
// missing (the click went to another instance, or was forgotten) or wrong
// reads the hold's state in one more round trip, and the store hands a
// pre-read result only to the call with exactly its arguments.
type clickIDs struct {
	mu        sync.Mutex
	cur, prev map[string]string
	since     time.Time
}

// clickIDsKept is how long a click's id is kept at least: past it, a claim
// of the click is refused as expired before its transaction (ClickTTL plus
// the largest clock skew, with room).
const clickIDsKept = 2 * token.ClickTTL

func (c *clickIDs) put(nonce, id string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || len(c.cur) >= maxCached || now.Sub(c.since) >= clickIDsKept || now.Before(c.since) {
		c.prev, c.cur, c.since = c.cur, make(map[string]string), now
	}
	c.cur[nonce] = id
}

func (c *clickIDs) get(nonce string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.cur[nonce]; ok {
		return id, true
	}
	id, ok := c.prev[nonce]
	return id, ok
}
