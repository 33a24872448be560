package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Kind is a kind of money operation the harness issues.
type Kind string

// The kinds, each a state-changing POST sent with an Idempotency-Key the
// harness chose.
const (
	KindTopUp      Kind = "topup"      // POST /v1/apps/{id}/top-up, then POST /test/checkout/{session}
	KindAdjustment Kind = "adjustment" // POST /v1/admin/apps/{id}/adjustments
	KindClaim      Kind = "claim"      // POST /v1/sdk/install
	KindHeartbeat  Kind = "heartbeat"  // POST /v1/sdk/heartbeat
	KindSweep      Kind = "sweep"      // POST /v1/admin/attribution/sweep
	KindPayout     Kind = "payout"     // POST /v1/apps/{id}/payout
)

// Kinds lists every kind, in report order.
var Kinds = []Kind{KindTopUp, KindAdjustment, KindClaim, KindHeartbeat, KindSweep, KindPayout}

// ParseKinds reads a comma-separated list of kinds ("all": every kind).
func ParseKinds(s string) (map[Kind]bool, error) {
	out := map[Kind]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if name == "all" {
			for _, k := range Kinds {
				out[k] = true
			}
			continue
		}
		k := Kind(name)
		known := false
		for _, kk := range Kinds {
			known = known || k == kk
		}
		if !known {
			return nil, fmt.Errorf("unknown operation %q (want all or some of topup, adjustment, claim, heartbeat, sweep, payout)", name)
		}
		out[k] = true
	}
	if len(out) == 0 {
		return nil, errors.New("no operation given")
	}
	return out, nil
}

// Outcome is how an operation ended.
type Outcome string

const (
	// Acknowledged: a 2xx answer. Its effect must be in the ledger exactly once.
	Acknowledged Outcome = "acknowledged"
	// Refused: a definite 4xx answer. Its effect must not be in the ledger.
	Refused Outcome = "refused"
	// Unresolved: no definite answer before the retry budget ran out. A
	// violation in itself; its effect may be there at most once.
	Unresolved Outcome = "unresolved"
)

// Op is one operation the harness issued: what it sent, how it ended, and
// what identifies its effect in the ledgers (see Check).
type Op struct {
	Kind  Kind
	Seq   int  // numbers the run's operations
	Cycle int  // 0: setup; 1..n: the crash cycles; n+1: the final settlement
	Crash bool // sent while the server could be killed
	// Keys are the Idempotency-Keys it sent (a top-up sends two: the
	// checkout session's and its completion's); every retry sends the same.
	Keys []string
	// App is the wallet the effect lands on: the adjusted, topped-up or
	// paid-out app; a claim's and a heartbeat's advertiser.
	App      string
	Outcome  Outcome
	Code     string // the refusal's code; for an unresolved op, its last failure
	Attempts int

	Amount    int64             // adjustment: the amount sent; payout: the amount answered
	Note      string            // adjustment: its note, unique in the run
	Session   string            // topup: the checkout session
	Chain     string            // claim (once answered), heartbeat: the chain
	Publisher string            // claim: the chain's publisher
	State     xpromo.ChainState // claim, heartbeat: the chain's state as answered
	Transfer  string            // payout: the transfer id answered
	Payout    string            // payout: the payout id answered

	// send makes one attempt: the same keys and the same body every time.
	// It records what a 2xx answered in the Op.
	send func(ctx context.Context) error
}

func (o *Op) String() string {
	s := fmt.Sprintf("%s #%d (cycle %d, key %s", o.Kind, o.Seq, o.Cycle, strings.Join(o.Keys, "+"))
	if o.App != "" {
		s += ", app " + o.App
	}
	if o.Chain != "" {
		s += ", chain " + o.Chain
	}
	return s + ")"
}

// verdict is what one attempt's answer means.
type verdict int

const (
	answered verdict = iota // 2xx
	refused                 // a definite 4xx
	retry                   // no definite answer: try again with the same key
)

// retryableCodes are 4xx answers that are not an answer yet.
var retryableCodes = map[string]bool{
	"idempotency_key_in_use": true, // the first attempt's claim is still held
	"payout_in_progress":     true, // a payout of the app is still being resolved
	"rate_limited":           true,
}

// classify says what an attempt's error means: nil is an answer; a 4xx is
// a refusal unless it says to come back (429, idempotency_key_in_use,
// payout_in_progress); a 5xx, a connection error or an unreadable answer
// is no answer.
func classify(err error) (verdict, string) {
	if err == nil {
		return answered, ""
	}
	if errors.Is(err, errLocal) {
		return refused, err.Error() // nothing was sent, and no retry would send it
	}
	var xe *xpromo.Error
	if !errors.As(err, &xe) {
		return retry, err.Error()
	}
	code := xe.Code
	if code == "" {
		code = fmt.Sprintf("HTTP %d", xe.Status)
	}
	switch {
	case xe.Status >= 500, xe.Status == http.StatusTooManyRequests, retryableCodes[xe.Code]:
		return retry, code
	case xe.Status >= 400:
		return refused, code
	}
	return retry, code
}

// executor runs operations to a definite answer.
type executor struct {
	gate *gate
	// retryFor bounds the time an operation spends on attempts and
	// backoff (waiting for a restarted server does not count).
	retryFor time.Duration

	mu      sync.Mutex
	latency map[Kind]time.Duration // moving average of answered attempts, by kind
}

// run makes attempts until an answer or a refusal, or until the retry
// budget is spent (Unresolved). Before each attempt it waits for the
// server to be up; an attempt the kill cuts short fails and is retried
// with the same keys once the server is back. started, if not nil, is
// called just before the first attempt goes out.
func (e *executor) run(ctx context.Context, op *Op, started func()) {
	var spent time.Duration
	for attempt := 0; ; attempt++ {
		if err := e.gate.wait(ctx); err != nil {
			op.Outcome, op.Code = Unresolved, err.Error()
			return
		}
		if attempt == 0 && started != nil {
			started()
		}
		t0 := time.Now()
		err := op.send(ctx)
		took := time.Since(t0)
		op.Attempts++
		v, code := classify(err)
		switch v {
		case answered:
			e.observe(op.Kind, took)
			op.Outcome, op.Code = Acknowledged, ""
			return
		case refused:
			op.Outcome, op.Code = Refused, code
			return
		}
		op.Code = code
		wait := backoff(attempt)
		spent += took + wait
		if spent > e.retryFor || ctx.Err() != nil {
			op.Outcome = Unresolved
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// observe folds an answered attempt's duration into its kind's average.
func (e *executor) observe(k Kind, d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.latency == nil {
		e.latency = map[Kind]time.Duration{}
	}
	if old, ok := e.latency[k]; ok {
		d = (4*old + d) / 5
	}
	e.latency[k] = d
}

// typical is the usual duration of an attempt of kind k (20 ms until one
// was answered), between 2 and 200 ms.
func (e *executor) typical(k Kind) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, ok := e.latency[k]
	if !ok {
		d = 20 * time.Millisecond
	}
	return min(max(d, 2*time.Millisecond), 200*time.Millisecond)
}

// backoff is 50 ms doubling to 1 s, with jitter over its upper half.
func backoff(attempt int) time.Duration {
	d := time.Second
	if attempt < 5 {
		d = 50 * time.Millisecond << attempt
	}
	return d/2 + rand.N(d/2+1)
}

// gate is open while the server runs: operations wait on it before each
// attempt, so that none is sent to a server being restarted (whose test
// clock is not yet where the run left it).
type gate struct {
	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shut closes the gate; reopen opens it again.
func (g *gate) shut() {
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) reopen() {
	g.mu.Lock()
	close(g.open)
	g.mu.Unlock()
}
