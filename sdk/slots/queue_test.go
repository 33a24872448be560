package slots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// fakeServer is the receiving end of the property test: it records every
// delivery it processed, by idempotency key, like a server would.
type fakeServer struct {
	mu        sync.Mutex
	delivered []string // keys, in the order the server processed them
}

func (s *fakeServer) process(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delivered = append(s.delivered, e.IdempotencyKey)
}

var errNetwork = errors.New("network unreachable")

// flakySender fails in the ways a network does: before the server sees the
// request, after the server processed it (answer lost), or with a final
// refusal (a 4xx: the server saw it and said no).
func flakySender(s *fakeServer, r *rand.Rand) Sender {
	return func(ctx context.Context, e Event) (json.RawMessage, error) {
		switch r.IntN(6) {
		case 0:
			return nil, errNetwork
		case 1:
			s.process(e)
			return nil, fmt.Errorf("reading answer: %w", errNetwork)
		case 2:
			return nil, &xpromo.Error{Status: 503, Code: xpromo.CodeUnavailable}
		case 3:
			s.process(e)
			return nil, &xpromo.Error{Status: 403, Code: "fraud_token_expired"}
		default:
			s.process(e)
			return json.RawMessage(`{"ok":true}`), nil
		}
	}
}

// Property: across random enqueues, flushes over a flaky network, crashes
// (some in the middle of an append) and restarts, every event whose
// Enqueue returned is delivered at least once, first deliveries come in
// enqueue order, and nothing that was not enqueued is delivered.
func TestQueueDeliversEveryEventAtLeastOnceInOrder(t *testing.T) {
	for seed := range uint64(100) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			srv := &fakeServer{}
			path := filepath.Join(t.TempDir(), "events.journal")
			open := func() *Queue {
				q, err := OpenQueue(path, QueueOptions{
					Send: flakySender(srv, r), CompactAfter: 1 + r.IntN(6),
				})
				if err != nil {
					t.Fatal(err)
				}
				return q
			}
			q := open()
			var enqueued []string
			for step := 0; step < 60; step++ {
				switch op := r.IntN(10); {
				case op < 5:
					e, err := q.Enqueue(EventKind([]string{"click", "install", "heartbeat"}[r.IntN(3)]), "/v1/sdk/x", map[string]int{"step": step})
					if err != nil {
						t.Fatal(err)
					}
					enqueued = append(enqueued, e.IdempotencyKey)
				case op < 8:
					q.Flush(context.Background()) // errors are the flaky network's
				case op < 9:
					// Crash: the process dies; nothing is closed cleanly.
					q.j.f.Close()
					q = open()
				default:
					// Crash in the middle of an append: a torn record
					// follows the complete ones. Its Enqueue never returned.
					q.j.f.Close()
					torn, _ := encodeRecord(journalRecord{Op: opEvent, Event: testEvent(999999, 10)})
					f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
					if err != nil {
						t.Fatal(err)
					}
					f.Write(torn[:1+r.IntN(len(torn)-1)])
					f.Close()
					q = open()
				}
			}
			// The network comes back for good.
			q.j.f.Close()
			q, err := OpenQueue(path, QueueOptions{Send: func(ctx context.Context, e Event) (json.RawMessage, error) {
				srv.process(e)
				return nil, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			if q.Len() != 0 {
				t.Fatalf("%d events still pending", q.Len())
			}
			q.Close()

			var first []string
			seen := map[string]bool{}
			for _, k := range srv.delivered {
				if !seen[k] {
					seen[k] = true
					first = append(first, k)
				}
			}
			if !slices.Equal(first, enqueued) {
				t.Fatalf("first deliveries %v\nwant enqueue order %v", first, enqueued)
			}
		})
	}
}

func TestQueueRefusedEventLeavesAndFlushGoesOn(t *testing.T) {
	var done []string
	sent := 0
	q, err := OpenQueue(filepath.Join(t.TempDir(), "j"), QueueOptions{
		Send: func(ctx context.Context, e Event) (json.RawMessage, error) {
			sent++
			if e.Kind == EventInstall {
				return nil, &xpromo.Error{Status: 409, Code: "fraud_token_reused"}
			}
			return json.RawMessage(`{"seq":` + itoa(int(e.Seq)) + `}`), nil
		},
		OnDone: func(e Event, resp json.RawMessage, err error) {
			done = append(done, fmt.Sprintf("%d %s %s %v", e.Seq, e.Kind, resp, xpromo.ErrorCode(err)))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	q.Enqueue(EventClick, "/v1/sdk/click", 1)
	q.Enqueue(EventInstall, "/v1/sdk/install", 2)
	q.Enqueue(EventHeartbeat, "/v1/sdk/heartbeat", 3)
	if err := q.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{`1 click {"seq":1} `, `2 install  fraud_token_reused`, `3 heartbeat {"seq":3} `}
	if !slices.Equal(done, want) || sent != 3 {
		t.Fatalf("done %q (sent %d)\nwant %q", done, sent, want)
	}
}

func TestQueueRetryableErrorKeepsHeadAndOrder(t *testing.T) {
	down := true
	var got []uint64
	q, err := OpenQueue(filepath.Join(t.TempDir(), "j"), QueueOptions{
		Send: func(ctx context.Context, e Event) (json.RawMessage, error) {
			if down {
				return nil, &xpromo.Error{Status: 429, Code: xpromo.CodeRateLimited}
			}
			got = append(got, e.Seq)
			return nil, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for i := range 3 {
		q.Enqueue(EventClick, "/v1/sdk/click", i)
	}
	if err := q.Flush(context.Background()); !xpromo.IsCode(err, xpromo.CodeRateLimited) {
		t.Fatalf("flush while rate limited: %v", err)
	}
	if q.Len() != 3 {
		t.Fatalf("%d pending, want 3", q.Len())
	}
	down = false
	if err := q.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("sent %v", got)
	}
}

// Sequence numbers and idempotency keys survive compaction and restarts,
// and numbers are never reused.
func TestQueueReplayKeepsKeysAndNumbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	fail := true
	send := func(ctx context.Context, e Event) (json.RawMessage, error) {
		if fail && e.Seq == 3 {
			return nil, errNetwork
		}
		return nil, nil
	}
	q, err := OpenQueue(path, QueueOptions{Send: send, CompactAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	for i := range 4 {
		e, err := q.Enqueue(EventClick, "/v1/sdk/click", i)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	q.Flush(context.Background()) // 1 and 2 delivered and compacted away; 3 fails
	q.Close()

	q, err = OpenQueue(path, QueueOptions{Send: send})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if p := q.Pending(); !slices.EqualFunc(p, evs[2:], func(a, b Event) bool {
		return a.Seq == b.Seq && a.IdempotencyKey == b.IdempotencyKey && string(a.Body) == string(b.Body) && a.EnqueuedAt.Equal(b.EnqueuedAt)
	}) {
		t.Fatalf("replayed %+v\nwant %+v", p, evs[2:])
	}
	e, err := q.Enqueue(EventClick, "/v1/sdk/click", 5)
	if err != nil {
		t.Fatal(err)
	}
	if e.Seq != 5 {
		t.Fatalf("new event numbered %d, want 5", e.Seq)
	}
}

// Many goroutines enqueue while Run flushes in the background: every event
// arrives, each goroutine's events in its own order.
func TestQueueConcurrentEnqueueWithRun(t *testing.T) {
	var mu sync.Mutex
	var got []Event
	calls := 0
	q, err := OpenQueue(filepath.Join(t.TempDir(), "j"), QueueOptions{
		Send: func(ctx context.Context, e Event) (json.RawMessage, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls%5 == 0 {
				return nil, errNetwork
			}
			got = append(got, e)
			return nil, nil
		},
		BackoffMin: time.Millisecond, BackoffMax: 2 * time.Millisecond,
		CompactAfter: 7,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { q.Run(ctx, nil); close(runDone) }()
	const workers, each = 4, 15
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := q.Enqueue(EventHeartbeat, "/v1/sdk/heartbeat", [2]int{w, i}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for q.Len() > 0 {
		q.Kick()
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-runDone
	q.Close()
	next := make([]int, workers)
	seen := map[uint64]bool{}
	for _, e := range got {
		if seen[e.Seq] {
			continue // a retried event; at-least-once
		}
		seen[e.Seq] = true
		var wi [2]int
		json.Unmarshal(e.Body, &wi)
		if wi[1] != next[wi[0]] {
			t.Fatalf("worker %d: got event %d, want %d", wi[0], wi[1], next[wi[0]])
		}
		next[wi[0]]++
	}
	for w, n := range next {
		if n != each {
			t.Fatalf("worker %d: %d of %d events delivered", w, n, each)
		}
	}
}

func TestQueueFull(t *testing.T) {
	q, err := OpenQueue(filepath.Join(t.TempDir(), "j"), QueueOptions{
		Send:       func(context.Context, Event) (json.RawMessage, error) { return nil, errNetwork },
		MaxPending: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	q.Enqueue(EventClick, "/p", 1)
	q.Enqueue(EventClick, "/p", 2)
	if _, err := q.Enqueue(EventClick, "/p", 3); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third enqueue: %v", err)
	}
}

func TestDefaultRetryable(t *testing.T) {
	for err, want := range map[error]bool{
		errNetwork:                 true,
		context.DeadlineExceeded:   true,
		&xpromo.Error{Status: 500}: true,
		&xpromo.Error{Status: 503}: true,
		&xpromo.Error{Status: 429}: true,
		&xpromo.Error{Status: 408}: true,
		&xpromo.Error{Status: 409, Code: xpromo.CodeIdempotencyKeyInUse}: true,
		&xpromo.Error{Status: 409, Code: "fraud_token_reused"}:           false,
		&xpromo.Error{Status: 403, Code: "fraud_bad_signature"}:          false,
		&xpromo.Error{Status: 400}:                                       false,
		Permanent(errNetwork):                                            false,
	} {
		if got := DefaultRetryable(err); got != want {
			t.Errorf("DefaultRetryable(%v) = %v", err, got)
		}
	}
}

// Enqueue returns only after the event's record is fsynced, and so does
// the acknowledgment.
func TestEnqueueIsDurable(t *testing.T) {
	q, err := OpenQueue(filepath.Join(t.TempDir(), "j"), QueueOptions{
		Send: func(context.Context, Event) (json.RawMessage, error) { return nil, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	before := fsyncs.Load()
	if _, err := q.Enqueue(EventClick, "/v1/sdk/click", 1); err != nil {
		t.Fatal(err)
	}
	if fsyncs.Load() == before {
		t.Fatal("Enqueue returned without an fsync")
	}
	before = fsyncs.Load()
	if err := q.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fsyncs.Load() == before {
		t.Fatal("the acknowledgment was not fsynced")
	}
}

// A Flush waiting behind another one (whose send hangs) gives up when its
// context ends, and the hung flush does not block Close.
func TestFlushWaitsWithinItsContext(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	q, err := OpenQueue(filepath.Join(t.TempDir(), "j"), QueueOptions{
		Send: func(ctx context.Context, e Event) (json.RawMessage, error) {
			close(started)
			<-release
			return nil, errNetwork
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	q.Enqueue(EventClick, "/v1/sdk/click", 1)
	first := make(chan error)
	go func() { first <- q.Flush(context.Background()) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("second flush: %v", err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-first; err == nil {
		t.Fatal("the hung flush succeeded")
	}
}
