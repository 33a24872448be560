package attribution

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/txunit"
)

// store is a row the loads read, counting them; gate, when set, holds each
// load until it is closed.
type store struct {
	mu    sync.Mutex
	v     string
	found bool
	n     atomic.Int64
	gate  chan struct{}
}

func (s *store) set(v string, found bool) { s.mu.Lock(); s.v, s.found = v, found; s.mu.Unlock() }

func (s *store) load(ctx context.Context) (string, bool, error) {
	s.n.Add(1)
	s.mu.Lock()
	v, found, gate := s.v, s.found, s.gate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
	}
	return v, found, nil
}

const ttl = 30 * time.Second

// waitReads waits until c has no read in flight.
func waitReads[T any](t *testing.T, c *recent[T]) {
	t.Helper()
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.reads) == 0
	}, 5*time.Second, time.Millisecond)
}

func TestRecentServesWithinTTLAndReadsAfter(t *testing.T) {
	clk := clocktest.New(time.Unix(1e9, 0))
	c := &recent[string]{now: clk.Now}
	s := &store{v: "a", found: true}
	ctx := context.Background()

	v, found, err := c.get(ctx, "id", ttl, s.load)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, "a", v)
	s.set("b", true)
	clk.Advance(ttl/2 - time.Second)
	v, _, _ = c.get(ctx, "id", ttl, s.load)
	assert.Equal(t, "a", v, "cached within the TTL")
	assert.EqualValues(t, 1, s.n.Load())

	clk.Advance(ttl)
	v, _, _ = c.get(ctx, "id", ttl, s.load)
	assert.Equal(t, "b", v, "past the TTL the record is read again, never served")
	assert.EqualValues(t, 2, s.n.Load())
}

// A record in use is read again in the background from half its TTL on:
// callers get the cached copy meanwhile, and the fresh one once read, so it
// never expires under them.
func TestRecentRefreshesAhead(t *testing.T) {
	clk := clocktest.New(time.Unix(1e9, 0))
	c := &recent[string]{now: clk.Now}
	s := &store{v: "a", found: true}
	ctx := context.Background()
	_, _, err := c.get(ctx, "id", ttl, s.load)
	require.NoError(t, err)

	s.set("b", true)
	gate := make(chan struct{})
	s.gate = gate
	clk.Advance(ttl / 2)
	for range 10 {
		v, found, err := c.get(ctx, "id", ttl, s.load)
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, "a", v, "the cached copy while the refresh reads")
	}
	close(gate)
	waitReads(t, c)
	assert.EqualValues(t, 2, s.n.Load(), "one refresh for ten callers")

	// The first read's TTL is long past; the refreshed record is served at
	// once (the refresh ahead it starts in turn is held: had this caller
	// waited for a read, it would not return).
	clk.Advance(ttl - time.Second)
	s.mu.Lock()
	held := make(chan struct{})
	s.gate = held
	s.mu.Unlock()
	v, _, _ := c.get(ctx, "id", ttl, s.load)
	assert.Equal(t, "b", v, "the refreshed record, read without waiting")
	close(held)
	waitReads(t, c)
}

// Callers that miss at once share one read; a caller whose context ends
// stops waiting without failing the others.
func TestRecentMissesShareOneRead(t *testing.T) {
	c := &recent[string]{}
	s := &store{v: "a", found: true, gate: make(chan struct{})}
	gone, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	results := make(chan string, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if i == 0 {
				ctx = gone
			}
			v, found, err := c.get(ctx, "id", ttl, s.load)
			if i == 0 {
				// Cancelled while it waits (or, scheduled late, served
				// from the cache once the read is in).
				if err != nil {
					assert.ErrorIs(t, err, context.Canceled)
				}
				return
			}
			if assert.NoError(t, err) && assert.True(t, found) {
				results <- v
			}
		}()
	}
	require.Eventually(t, func() bool { return s.n.Load() >= 1 }, 5*time.Second, time.Millisecond)
	cancel()
	time.Sleep(10 * time.Millisecond) // let the others queue on the read
	close(s.gate)
	wg.Wait()
	close(results)
	n := 0
	for v := range results {
		assert.Equal(t, "a", v)
		n++
	}
	assert.Equal(t, 49, n)
	assert.EqualValues(t, 1, s.n.Load(), "one read for fifty callers")
}

// "Not found" is not shared: a record that committed after a read began
// (a key registered a moment ago) is found by the callers who joined it.
func TestRecentNotFoundIsNotShared(t *testing.T) {
	c := &recent[string]{}
	gate := make(chan struct{})
	s := &store{gate: gate}
	first := make(chan bool, 1)
	go func() {
		_, found, err := c.get(context.Background(), "id", ttl, s.load)
		assert.NoError(t, err)
		first <- found
	}()
	require.Eventually(t, func() bool { return s.n.Load() == 1 }, 5*time.Second, time.Millisecond)
	joined := make(chan string, 1)
	go func() {
		v, found, err := c.get(context.Background(), "id", ttl, s.load)
		assert.NoError(t, err)
		assert.True(t, found, "found by the caller who joined a read begun before the row committed")
		joined <- v
	}()
	time.Sleep(20 * time.Millisecond) // let it join the read in flight
	s.mu.Lock()
	s.v, s.found, s.gate = "registered", true, nil // commits while the first read is in flight
	s.mu.Unlock()
	close(gate)
	assert.False(t, <-first, "the first read began before the row committed")
	assert.Equal(t, "registered", <-joined)
	assert.EqualValues(t, 2, s.n.Load())
}

// forget beats a read in flight: the revoked key's old row is not cached.
func TestRecentForgetBeatsReadsInFlight(t *testing.T) {
	clk := clocktest.New(time.Unix(1e9, 0))
	c := &recent[string]{now: clk.Now}
	s := &store{v: "unrevoked", found: true}
	ctx := context.Background()
	_, _, err := c.get(ctx, "id", ttl, s.load)
	require.NoError(t, err)

	gate := make(chan struct{})
	s.gate = gate
	clk.Advance(ttl / 2)
	v, _, _ := c.get(ctx, "id", ttl, s.load) // starts a refresh, which reads the old row
	assert.Equal(t, "unrevoked", v)
	require.Eventually(t, func() bool { return s.n.Load() == 2 }, 5*time.Second, time.Millisecond)
	c.mu.Lock()
	refresh := c.reads["id"]
	c.mu.Unlock()
	require.NotNil(t, refresh)
	s.set("revoked", true)
	c.forget("id") // the revocation committed
	close(gate)
	<-refresh.done
	s.gate = nil
	v, _, _ = c.get(ctx, "id", ttl, s.load)
	assert.Equal(t, "revoked", v, "the refresh that read before forget is not kept")
}

// Inside a unit of work holding a transaction, the read is the caller's own
// (it may see the unit's writes) and is cached only once the unit commits.
func TestRecentInAUnitCachesOnCommit(t *testing.T) {
	c := &recent[string]{}
	s := &store{v: "own write", found: true}
	for _, commit := range []bool{false, true} {
		ctx, u := txunit.Begin(context.Background())
		_, err := u.Join(func() (txunit.Txn, error) { return endTxn{}, nil })
		require.NoError(t, err)
		v, found, err := c.get(ctx, "id", ttl, s.load)
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, "own write", v)
		c.mu.Lock()
		_, cached := c.entries["id"]
		c.mu.Unlock()
		assert.False(t, cached, "not cached before the unit ends")
		if commit {
			_, err := u.Commit()
			require.NoError(t, err)
		} else {
			u.Rollback()
		}
		c.mu.Lock()
		_, cached = c.entries["id"]
		c.mu.Unlock()
		assert.Equal(t, commit, cached, "cached once committed, never when rolled back")
	}
}

type endTxn struct{}

func (endTxn) End(error) (bool, error) { return false, nil }
