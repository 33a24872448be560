package groupcommit

import "sync"

// Queue is the machinery both group commits share (this package's
// committer of units and the ledger's committer of posts): jobs wait in
// arrival order, and at most a bound of worker goroutines drain them, each
// taking what it can whenever its previous transaction has ended. The zero
// value is ready.
type Queue[J any] struct {
	mu      sync.Mutex
	jobs    []J
	workers int
}

// Push queues j, and starts work in a goroutine of its own when fewer than
// max workers run; work must call Take(true, …) until it takes nothing,
// then return.
func (q *Queue[J]) Push(j J, max int, work func()) {
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	start := q.workers < max
	if start {
		q.workers++
	}
	q.mu.Unlock()
	if start {
		go work()
	}
}

// Take calls take with the waiting jobs under the queue's lock (so take may
// also read and change state that lock guards) and returns what it took,
// keeping the rest waiting. A worker that asks with last set and takes
// nothing is no longer counted and must return: a job pushed after that
// starts a new worker.
func (q *Queue[J]) Take(last bool, take func(waiting []J) (taken, rest []J)) []J {
	q.mu.Lock()
	defer q.mu.Unlock()
	var taken []J
	taken, q.jobs = take(q.jobs)
	if len(taken) == 0 && last {
		q.workers--
	}
	return taken
}

// Len is the number of jobs waiting.
func (q *Queue[J]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.jobs)
}
