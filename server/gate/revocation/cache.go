package revocation

import (
	"sync"
	"time"
)

// Bounds of the caches: OCSP answers are small and one per certificate;
// a CRL may hold many thousand entries, so few are kept.
const (
	maxOCSPCached = 4096
	maxCRLsCached = 16
)

// cache keeps values until their expiry, forgetting the oldest entry beyond
// its bound. The zero value is empty and usable.
type cache[V any] struct {
	mu    sync.Mutex
	m     map[string]cached[V]
	order []string
}

type cached[V any] struct {
	v       V
	expires time.Time
}

func (c *cache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *cache[V]) put(key string, v V, expires time.Time, max int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cached[V]{}
	}
	if _, ok := c.m[key]; !ok {
		for len(c.order) >= max {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, key)
	}
	c.m[key] = cached[V]{v: v, expires: expires}
}
