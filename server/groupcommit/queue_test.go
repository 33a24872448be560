package groupcommit

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Jobs pushed from many goroutines are each taken exactly once, by at most
// max workers at a time, whatever the interleaving of a worker's last,
// empty take with a push (which then starts a new worker).
func TestQueueTakesEachJobOnceWithinMax(t *testing.T) {
	const pushers, each, max = 16, 500, 3
	var q Queue[int]
	var running, most atomic.Int32
	var mu sync.Mutex
	seen := map[int]int{}
	var wg sync.WaitGroup // the jobs' outcomes
	wg.Add(pushers * each)
	var work func()
	work = func() {
		n := running.Add(1)
		for {
			if m := most.Load(); n > m {
				most.CompareAndSwap(m, n)
			}
			taken := q.Take(true, func(waiting []int) (taken, rest []int) {
				k := min(len(waiting), 7) // a batch of at most 7
				if k == 0 {
					running.Add(-1) // under the queue's lock, as the queue stops counting it
				}
				return waiting[:k:k], waiting[k:]
			})
			if len(taken) == 0 {
				return
			}
			mu.Lock()
			for _, j := range taken {
				seen[j]++
			}
			mu.Unlock()
			for range taken {
				wg.Done()
			}
		}
	}
	var pushersDone sync.WaitGroup
	for p := range pushers {
		pushersDone.Go(func() {
			for i := range each {
				q.Push(p*each+i, max, work)
			}
		})
	}
	pushersDone.Wait()
	wg.Wait()
	if len(seen) != pushers*each {
		t.Fatalf("%d jobs taken, want %d", len(seen), pushers*each)
	}
	for j, n := range seen {
		if n != 1 {
			t.Fatalf("job %d taken %d times", j, n)
		}
	}
	if m := most.Load(); m > max {
		t.Fatalf("%d workers ran at once, want at most %d", m, max)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("%d jobs left waiting", n)
	}
}
