package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// shards spreads buckets over independently locked maps, so concurrent
// requests of different callers rarely wait for each other.
const shards = 64

// sweepEvery is how often a shard drops its closed windows. Memory therefore
// holds the buckets seen within the last window plus sweepEvery.
const sweepEvery = time.Minute

// Memory is an in-process Limiter: limits hold per server instance only.
// The zero value is not usable; call NewMemory.
type Memory struct {
	now    func() time.Time
	seed   maphash.Seed
	shards [shards]shard
}

type shard struct {
	mu        sync.Mutex
	windows   map[string]*window
	nextSweep time.Time
}

type window struct {
	end time.Time
	n   int // requests allowed so far
}

// NewMemory returns an in-memory limiter on the clock now (time.Now if nil).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	m := &Memory{now: now, seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].windows = map[string]*window{}
	}
	return m
}

// Allow implements Limiter.
func (m *Memory) Allow(_ context.Context, bucket string, p Policy) (Decision, error) {
	if err := p.Validate(); err != nil {
		return Decision{}, err
	}
	key := p.Name + "\x00" + bucket
	sh := &m.shards[maphash.String(m.seed, key)%shards]
	now := m.now()

	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !now.Before(sh.nextSweep) {
		for k, w := range sh.windows {
			if !now.Before(w.end) {
				delete(sh.windows, k)
			}
		}
		sh.nextSweep = now.Add(sweepEvery)
	}
	w := sh.windows[key]
	if w == nil || !now.Before(w.end) {
		w = &window{end: now.Add(p.Window)}
		sh.windows[key] = w
	}
	// Capped, in case the clock stepped back into an older window.
	d := Decision{Limit: p.Limit, Reset: min(w.end.Sub(now), p.Window)}
	if w.n < p.Limit {
		w.n++
		d.Allowed = true
	}
	d.Remaining = max(0, p.Limit-w.n)
	return d, nil
}

// Len returns the number of open windows held (for tests and metrics).
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += len(sh.windows)
		sh.mu.Unlock()
	}
	return n
}
