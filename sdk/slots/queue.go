package slots

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// EventKind says what an SDK event reports.
type EventKind string

// Event kinds: one per SDK endpoint that reports something. (Impressions
// have no event of their own: the server counts each fill as one, and the
// SDK asks for a fill only when the slot is about to be shown.)
const (
	EventClick     EventKind = "click"     // POST /v1/sdk/click
	EventInstall   EventKind = "install"   // POST /v1/sdk/install
	EventHeartbeat EventKind = "heartbeat" // POST /v1/sdk/heartbeat
)

// Event is one report waiting in the offline queue: the API path it is
// POSTed to and its JSON body, exactly as they will be sent.
type Event struct {
	// Seq orders events; it is assigned by Enqueue and never reused.
	Seq  uint64    `json:"seq"`
	Kind EventKind `json:"kind"`
	// Path is the API path from the server root, e.g. "/v1/sdk/click".
	Path string          `json:"path"`
	Body json.RawMessage `json:"body"`
	// IdempotencyKey is sent as the Idempotency-Key header of every
	// attempt, so the server answers a resent event from its first answer
	// instead of acting twice.
	IdempotencyKey string    `json:"idempotency_key"`
	EnqueuedAt     time.Time `json:"enqueued_at"`
}

// Sender delivers one event to the server and returns its answer's body.
// A nil error means the server accepted the event. An error is retried
// later when Retryable says so; otherwise the server has refused the event
// for good and it leaves the queue.
type Sender func(ctx context.Context, e Event) (json.RawMessage, error)

// QueueOptions configure OpenQueue. Send is required.
type QueueOptions struct {
	Send Sender
	// Now stamps EnqueuedAt. Default time.Now.
	Now func() time.Time
	// Retryable classifies a Send error; default DefaultRetryable.
	Retryable func(error) bool
	// OnDone is called when an event leaves the queue: delivered (err nil,
	// resp the answer) or refused for good (err the refusal). It runs
	// before the acknowledgment is journaled, so after a crash it may run
	// again for the same event: make it idempotent.
	OnDone func(e Event, resp json.RawMessage, err error)
	// CompactAfter is how many acknowledgments accumulate before the
	// journal is rewritten without them. Default 64.
	CompactAfter int
	// MaxPending bounds the events waiting; Enqueue refuses more with
	// ErrQueueFull. Default 10,000.
	MaxPending int
	// BackoffMin and BackoffMax bound Run's exponential backoff (with full
	// jitter) after a failed flush. Defaults 1 s and 5 min.
	BackoffMin, BackoffMax time.Duration
	// After makes Run's timers. Default time.After.
	After func(time.Duration) <-chan time.Time
}

// ErrQueueFull is returned by Enqueue when MaxPending events are waiting.
var ErrQueueFull = errors.New("slots: offline queue is full")

// Queue is the durable offline queue of SDK events: an append-only
// journal in the data directory, replayed on open, flushed in order with
// retries. Delivery is at least once: an event is removed only after the
// server answered it, so a crash between the answer and the
// acknowledgment sends it again, with the same Idempotency-Key, and the
// server dedupes it. Events are delivered in the order they were enqueued:
// the head must be answered before the next one is sent.
//
// A Queue is safe for concurrent use.
type Queue struct {
	opts QueueOptions

	mu      sync.Mutex // guards the fields below and the journal
	j       *journal
	pending []Event
	nextSeq uint64
	acks    int // acknowledgments in the journal since the last compaction
	closed  bool

	flushing chan struct{} // a one-slot semaphore: one flush at a time keeps the order
	wake     chan struct{}
}

// OpenQueue opens the queue journaled at path (creating it when missing)
// and replays it: every event enqueued and not acknowledged before is
// pending again, in order.
func OpenQueue(path string, opts QueueOptions) (*Queue, error) {
	if opts.Send == nil {
		return nil, errors.New("slots: QueueOptions.Send is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Retryable == nil {
		opts.Retryable = DefaultRetryable
	}
	if opts.CompactAfter <= 0 {
		opts.CompactAfter = 64
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 10000
	}
	if opts.BackoffMin <= 0 {
		opts.BackoffMin = time.Second
	}
	if opts.BackoffMax < opts.BackoffMin {
		opts.BackoffMax = max(5*time.Minute, opts.BackoffMin)
	}
	if opts.After == nil {
		opts.After = time.After
	}
	j, recs, err := openJournal(path)
	if err != nil {
		return nil, err
	}
	q := &Queue{opts: opts, j: j, nextSeq: 1, wake: make(chan struct{}, 1), flushing: make(chan struct{}, 1)}
	acked := map[uint64]bool{}
	for _, r := range recs {
		switch r.Op {
		case opAck:
			acked[r.Seq] = true
			q.acks++
		case opMeta:
			q.nextSeq = max(q.nextSeq, r.NextSeq)
		}
	}
	for _, r := range recs {
		if r.Op == opEvent && r.Event != nil {
			q.nextSeq = max(q.nextSeq, r.Event.Seq+1)
			if !acked[r.Event.Seq] {
				q.pending = append(q.pending, *r.Event)
			}
		}
	}
	if q.acks >= opts.CompactAfter {
		if err := q.compactLocked(); err != nil {
			j.close()
			return nil, err
		}
	}
	return q, nil
}

// Enqueue journals a new event with a random idempotency key (fsynced
// before it returns) and wakes Run. body is marshalled to JSON now, so
// later changes to it are not seen.
func (q *Queue) Enqueue(kind EventKind, path string, body any) (Event, error) {
	key, err := newIdempotencyKey()
	if err != nil {
		return Event{}, err
	}
	return q.EnqueueWithKey(kind, path, key, body)
}

// EnqueueWithKey is Enqueue with the caller's idempotency key, for events
// that may be enqueued again after a crash (the same key and body make the
// server answer the second copy from the first).
func (q *Queue) EnqueueWithKey(kind EventKind, path, key string, body any) (Event, error) {
	if key == "" || len(key) > 255 {
		return Event{}, errors.New("slots: idempotency key must be 1 to 255 characters")
	}
	b, err := json.Marshal(body)
	if err != nil {
		return Event{}, fmt.Errorf("slots: event body: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return Event{}, errors.New("slots: queue is closed")
	}
	if len(q.pending) >= q.opts.MaxPending {
		return Event{}, ErrQueueFull
	}
	e := Event{
		Seq: q.nextSeq, Kind: kind, Path: path, Body: b,
		IdempotencyKey: key, EnqueuedAt: q.opts.Now().UTC(),
	}
	if err := q.j.append(journalRecord{Op: opEvent, Event: &e}); err != nil {
		return Event{}, err
	}
	q.nextSeq++
	q.pending = append(q.pending, e)
	q.Kick()
	return e, nil
}

// Pending returns the events waiting, in order.
func (q *Queue) Pending() []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]Event(nil), q.pending...)
}

// Len returns the number of events waiting.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// Kick wakes Run to flush now, e.g. when the app learns the network is
// back.
func (q *Queue) Kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Flush sends the waiting events in order until none is left (nil) or one
// fails with a retryable error (returned; the event stays at the head).
// An event the server refuses for good leaves the queue (OnDone sees the
// refusal) and the flush goes on.
//
// Only one flush runs at a time; a Flush that finds another one running
// waits for it, or for ctx to end.
func (q *Queue) Flush(ctx context.Context) error {
	select {
	case q.flushing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-q.flushing }()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return errors.New("slots: queue is closed")
		}
		if len(q.pending) == 0 {
			q.mu.Unlock()
			return nil
		}
		head := q.pending[0]
		q.mu.Unlock()

		resp, err := q.opts.Send(ctx, head)
		if err != nil && (ctx.Err() != nil || q.opts.Retryable(err)) {
			return fmt.Errorf("slots: sending %s event %d: %w", head.Kind, head.Seq, err)
		}
		if q.opts.OnDone != nil {
			q.opts.OnDone(head, resp, err)
		}
		if err := q.ack(head.Seq); err != nil {
			return err
		}
	}
}

// ack journals the acknowledgment of the head event and drops it.
func (q *Queue) ack(seq uint64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errors.New("slots: queue is closed")
	}
	if err := q.j.append(journalRecord{Op: opAck, Seq: seq}); err != nil {
		return err
	}
	if len(q.pending) > 0 && q.pending[0].Seq == seq {
		q.pending = q.pending[1:]
	}
	q.acks++
	if q.acks >= q.opts.CompactAfter {
		return q.compactLocked()
	}
	return nil
}

// compactLocked rewrites the journal with only the pending events.
func (q *Queue) compactLocked() error {
	recs := make([]journalRecord, 0, len(q.pending)+1)
	recs = append(recs, journalRecord{Op: opMeta, NextSeq: q.nextSeq})
	for i := range q.pending {
		recs = append(recs, journalRecord{Op: opEvent, Event: &q.pending[i]})
	}
	if err := q.j.compact(recs); err != nil {
		return err
	}
	q.acks = 0
	return nil
}

// Run flushes the queue whenever an event is enqueued or Kick is called,
// and after a failed flush retries with exponential backoff (BackoffMin
// doubling to BackoffMax, full jitter), until ctx ends. Flush errors are
// passed to onError when it is not nil.
func (q *Queue) Run(ctx context.Context, onError func(error)) {
	attempt := 0
	for {
		err := q.Flush(ctx)
		if ctx.Err() != nil || q.isClosed() {
			return
		}
		var retry <-chan time.Time
		if err != nil {
			if onError != nil {
				onError(err)
			}
			retry = q.opts.After(q.backoff(attempt))
			attempt++
		} else {
			attempt = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		case <-retry:
		}
	}
}

// backoff is a random duration in [0, min(BackoffMax, BackoffMin·2^attempt)].
func (q *Queue) backoff(attempt int) time.Duration {
	d := q.opts.BackoffMax
	if attempt < 30 {
		d = min(d, q.opts.BackoffMin<<attempt)
	}
	return time.Duration(rand.Int64N(int64(d) + 1))
}

func (q *Queue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// Close closes the journal. Pending events stay in it for the next open;
// an event being sent by a flush in progress stays too (its answer is not
// journaled after Close), so it is sent again after the next open.
func (q *Queue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil
	}
	q.closed = true
	return q.j.close()
}

// DefaultRetryable says whether a Send error is worth retrying: no answer
// at all (network down, timeout, context cancelled), 408, 425, 429, 5xx,
// or 409 idempotency_key_in_use (the first attempt is still running).
// Any other API error is the server's final answer.
func DefaultRetryable(err error) bool {
	var perm *permanentError
	if errors.As(err, &perm) {
		return false
	}
	var e *xpromo.Error
	if !errors.As(err, &e) {
		return true
	}
	switch {
	case e.Status == 408, e.Status == 425, e.Status == 429, e.Status >= 500:
		return true
	case e.Code == xpromo.CodeIdempotencyKeyInUse:
		return true
	}
	return false
}

// Permanent marks a Send error as final, so the event is not retried
// (e.g. a body the SDK itself cannot encode).
func Permanent(err error) error { return &permanentError{err} }

type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }

func newIdempotencyKey() (string, error) {
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "", fmt.Errorf("slots: random: %w", err)
	}
	return "xpsdk_" + hex.EncodeToString(b[:]), nil
}
