package ids

import (
	"strings"
	"sync"
	"testing"
)

func TestNewIsStrictlyIncreasingWithinAProcess(t *testing.T) {
	prev := New("evt")
	for i := 0; i < 100000; i++ {
		id := New("evt")
		if id <= prev {
			t.Fatalf("id %d: %s does not sort after %s", i, id, prev)
		}
		prev = id
	}
}

func TestNewAfterTheClockSteppedBackStillIncreases(t *testing.T) {
	var g monotonic
	a := g.next(1_700_000_000_000)
	b := g.next(1_699_999_999_000) // the wall clock stepped back a second
	c := g.next(1_700_000_000_000)
	if !(string(a[:]) < string(b[:]) && string(b[:]) < string(c[:])) {
		t.Fatalf("not increasing: %x %x %x", a, b, c)
	}
}

func TestNewCarriesIntoTheTime(t *testing.T) {
	g := monotonic{ms: 5, hi: 0xffff, lo: ^uint64(0), inited: true}
	b := g.next(5)
	if g.ms != 6 || g.hi != 0 {
		t.Fatalf("after overflow: ms %d hi %d", g.ms, g.hi)
	}
	if b[5] != 6 {
		t.Fatalf("time bytes not carried: %x", b)
	}
}

func TestNewIsUniqueAcrossGoroutines(t *testing.T) {
	const workers, each = 8, 5000
	var mu sync.Mutex
	seen := make(map[string]bool, workers*each)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]string, 0, each)
			for i := 0; i < each; i++ {
				local = append(local, New("x"))
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range local {
				if seen[id] {
					t.Errorf("duplicate id %s", id)
				}
				seen[id] = true
			}
		}()
	}
	wg.Wait()
	for id := range seen {
		if !strings.HasPrefix(id, "x_") || len(id) != 2+26 {
			t.Fatalf("bad shape %q", id)
		}
	}
}
