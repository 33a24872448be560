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
	mu   sync.Mutex
	apps map[string]cached[apps.App]
	keys map[string]cached[SDKKey]
}

type cached[T any] struct {
	v  T
	at time.Time
}

// maxCached bounds each map; past it the cache is emptied and refilled.
const maxCached = 100_000

func (s *Service) cacheTTL() time.Duration {
	if s.CacheTTL > 0 {
		return s.CacheTTL
	}
	return DefaultCacheTTL
}

func fresh(at, now time.Time, ttl time.Duration) bool {
	return !now.Before(at) && now.Sub(at) < ttl
}

// app returns an app (false when it does not exist).
func (s *Service) app(ctx context.Context, id string) (apps.App, bool, error) {
	now := s.Now()
	s.cache.mu.Lock()
	if c, ok := s.cache.apps[id]; ok && fresh(c.at, now, s.cacheTTL()) {
		s.cache.mu.Unlock()
		return c.v, true, nil
	}
	s.cache.mu.Unlock()
	var a apps.App
	var found bool
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		a, found, err = tx.GetApp(ctx, id, false)
		return err
	})
	if err != nil || !found {
		return apps.App{}, false, err
	}
	// Read in a unit of work, the row may be the unit's own uncommitted
	// write: it is cached once the unit commits.
	txunit.AfterCommit(ctx, func() {
		s.cache.mu.Lock()
		if s.cache.apps == nil || len(s.cache.apps) >= maxCached {
			s.cache.apps = map[string]cached[apps.App]{}
		}
		s.cache.apps[id] = cached[apps.App]{a, now}
		s.cache.mu.Unlock()
	})
	return a, true, nil
}

// sdkKey returns a registered key (false when there is none).
func (s *Service) sdkKey(ctx context.Context, kid string) (SDKKey, bool, error) {
	now := s.Now()
	s.cache.mu.Lock()
	if c, ok := s.cache.keys[kid]; ok && fresh(c.at, now, s.cacheTTL()) {
		s.cache.mu.Unlock()
		return c.v, true, nil
	}
	s.cache.mu.Unlock()
	var k SDKKey
	var found bool
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		k, found, err = tx.SDKKey(ctx, kid)
		return err
	})
	if err != nil || !found {
		return SDKKey{}, false, err
	}
	txunit.AfterCommit(ctx, func() { // as in app
		s.cache.mu.Lock()
		if s.cache.keys == nil || len(s.cache.keys) >= maxCached {
			s.cache.keys = map[string]cached[SDKKey]{}
		}
		s.cache.keys[kid] = cached[SDKKey]{k, now}
		s.cache.mu.Unlock()
	})
	return k, true, nil
}

func (c *appCache) forgetKey(kid string) {
	c.mu.Lock()
	delete(c.keys, kid)
	c.mu.Unlock()
}

// ForgetApp drops the app's cached record, so that this instance's SDK
// endpoints see a status change at once (other instances within
// DefaultCacheTTL): the lifecycle review calls it after a suspension.
func (s *Service) ForgetApp(id string) {
	s.cache.mu.Lock()
	delete(s.cache.apps, id)
	s.cache.mu.Unlock()
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
