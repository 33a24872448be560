package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xpromo/xpromo/sdk/webhook"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The webhook half of the run: every app it plays registers an endpoint
// for every event type at the receiver, a server on 127.0.0.1 in this
// process (the server runs with --webhooks-allow-loopback), which verifies
// each delivery with sdk/webhook and records its webhook-id. Deliveries go
// on while the server is killed and restarted. At the end, once the queue
// has drained, every event the events API listed for those apps must have
// been received (answered 2xx after a valid signature), and nothing may
// have been received that the API does not list.

// drainLimit bounds, in real time, each wait for the deliveries still
// queued (retries, leases of a killed process) to arrive.
const drainLimit = 90 * time.Second

// drainStep moves the test clock when the drain stalls: past the lease a
// killed process left on its claim (one minute) and the first retry delay
// (5 s); two steps pass the second (5 min). It stays under the five
// minutes a receiver tolerates between a delivery's timestamp and its own
// clock, so that a delivery signed just after a step, and checked before
// the receiver's clock has followed it, still verifies.
const drainStep = 4 * time.Minute

// maxAnswerDelay bounds how long the receiver holds each answer, at
// random: deliveries stay in flight long enough for kills to fall in the
// middle of some.
const maxAnswerDelay = 5 * time.Millisecond

// receiver is the run's webhook receiver.
type receiver struct {
	srv *http.Server
	url string // http://127.0.0.1:port
	// failRate is the share of verified deliveries answered 500 on purpose,
	// so that retries happen.
	failRate float64
	now      func() time.Time // the server's test clock, as the devices follow it
	// wall is the clock webhook-timestamp is checked against: the server
	// signs with the wall clock, not its test clock (docs/webhooks.md).
	wall func() time.Time

	mu        sync.Mutex
	verifiers map[string]*webhook.Verifier // by app id
	acked     map[string]received          // event id → the delivery answered 2xx
	rep       WebhookReport
	inFlight  atomic.Int64
}

// received is what a delivery answered 2xx carried.
type received struct {
	app  string // the endpoint's app (the URL's path)
	body xpromo.Event
}

// WebhookReport is what the receiver and the final check found.
type WebhookReport struct {
	Endpoints int
	// Requests counts every request the receiver got; Acked the distinct
	// events answered 2xx; Duplicates the requests of an event already
	// answered 2xx (at least once delivery: a killed sender's lease ran
	// out, or its answer was not recorded).
	Requests, Acked, Duplicates int
	// FailedOnPurpose: verified deliveries answered 500 to exercise
	// retries. Stale: deliveries refused (400) for a timestamp outside the
	// receiver's tolerance (wall clock, as the server signs); the server
	// retries them, re-signed.
	FailedOnPurpose, Stale int
	// Listed: distinct events the events API listed for the run's apps over
	// the run (read every cycle: the server purges what is 30 days old, and
	// the run moves the clock two days a cycle); Required: those written
	// after the app's endpoint existed, which must have arrived.
	Listed, Required int
	// DeliveryKills counts the kills aimed at deliveries (one a cycle);
	// DeliveryKillsHit those that came while the receiver was answering
	// one (the others found no delivery within maxDeliveryWait).
	DeliveryKills, DeliveryKillsHit int
	// DrainTime is how long the run waited for the queue to empty, at the
	// start of each cycle and at the end (LastDrain); ClockMoves how often
	// it moved the test clock meanwhile.
	DrainTime, LastDrain time.Duration
	ClockMoves           int

	// Violations, each listed in Problems.
	BadSignatures int // requests whose signature did not verify (or that did not parse)
	Mismatched    int // a body whose id, type, app or time differs from the webhook-id or the API's event
	Missing       int // required events never answered 2xx
	Unlisted      int // events answered 2xx that the API never listed
	// StampedAtRestart: events answered 2xx that the API never listed,
	// written by a restarted server before its test clock was put back
	// (inWindows): explained, not a violation.
	StampedAtRestart int
	Disabled         int // endpoints disabled by the end (deliveries dropped)
	Problems         []string
}

// Violations counts what must be zero.
func (r *WebhookReport) Violations() int {
	return r.BadSignatures + r.Mismatched + r.Missing + r.Unlisted + r.Disabled
}

func (r *WebhookReport) problem(format string, a ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, a...))
}

// startReceiver listens on a free port of 127.0.0.1.
func startReceiver(failRate float64, now func() time.Time) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{
		url: "http://" + ln.Addr().String(), failRate: failRate, now: now, wall: time.Now,
		verifiers: map[string]*webhook.Verifier{}, acked: map[string]received{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/{app}", r.serve)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) close() { _ = r.srv.Close() }

// awaitDelivery returns once the receiver has a request in flight, or
// after limit, and says how long it waited.
func (r *receiver) awaitDelivery(limit time.Duration) time.Duration {
	start := time.Now()
	for r.inFlight.Load() == 0 && time.Since(start) < limit {
		time.Sleep(200 * time.Microsecond)
	}
	return time.Since(start)
}

// endpointURL is where app's deliveries go.
func (r *receiver) endpointURL(app string) string { return r.url + "/hooks/" + app }

// trust sets the secret app's deliveries are verified with.
func (r *receiver) trust(app, secret string) error {
	v, err := webhook.NewVerifier(secret)
	if err != nil {
		return err
	}
	v.Now = r.wall
	r.mu.Lock()
	r.verifiers[app] = v
	r.mu.Unlock()
	return nil
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	app := req.PathValue("app")
	body, err := io.ReadAll(io.LimitReader(req.Body, webhook.DefaultMaxBodyBytes))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.Requests++
	v := r.verifiers[app]
	if err != nil || v == nil {
		r.rep.BadSignatures++
		r.rep.problem("a delivery for %s could not be read or has no endpoint of the run: %v", app, err)
		http.Error(w, "unknown endpoint", http.StatusNotFound)
		return
	}
	id := req.Header.Get(webhook.HeaderID)
	if err := v.Verify(req.Header, body); err != nil {
		if errors.Is(err, webhook.ErrTimestampTooOld) || errors.Is(err, webhook.ErrTimestampTooNew) {
			r.rep.Stale++
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.rep.BadSignatures++
		r.rep.problem("delivery %s to %s does not verify: %v", id, app, err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var ev xpromo.Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID != id || ev.AppID != app {
		r.rep.Mismatched++
		r.rep.problem("delivery %s to %s carries event %q of app %q (%v)", id, app, ev.ID, ev.AppID, err)
		http.Error(w, "mismatch", http.StatusBadRequest)
		return
	}
	if mrand.Float64() < r.failRate {
		r.rep.FailedOnPurpose++
		http.Error(w, "failing on purpose", http.StatusInternalServerError)
		return
	}
	if _, dup := r.acked[id]; dup {
		r.rep.Duplicates++
	} else {
		r.acked[id] = received{app: app, body: ev}
	}
	// Recorded before the answer goes out, as a receiver that processes
	// then answers: a sender killed meanwhile never learns of it and sends
	// the event again once its lease runs out (a duplicate, not a loss).
	r.mu.Unlock()
	time.Sleep(mrand.N(maxAnswerDelay))
	r.mu.Lock()
	w.WriteHeader(http.StatusNoContent)
}

// webhooks is the run's side of the API: the endpoints it registered and
// every event the events API listed.
type webhooks struct {
	recv      *receiver
	endpoints map[string]xpromo.WebhookEndpoint // by app id
	listed    map[string]xpromo.Event           // by event id
	// restarts are the spans of real time from each restart to its clock
	// being put back.
	restarts []window
}

// window is a span of real time.
type window struct{ from, to time.Time }

// inWindows reports whether t falls in one of the restart windows ws. Until
// the harness puts its clock back, a restarted server runs on its own
// clock (real time): an event its background work (the clearing sweep)
// writes then is stamped with real time, which after two weeks of cycles
// lies more than 30 days behind the run's test clock, so the events API,
// which lists 30 days by event time, never shows it (and the purge takes
// it). A test-mode artifact, not a loss: such events are counted apart.
func inWindows(t time.Time, ws []window) bool {
	for _, w := range ws {
		if !t.Before(w.from.Add(-time.Second)) && !t.After(w.to.Add(time.Second)) {
			return true
		}
	}
	return false
}

// registerEndpoint gives app an endpoint for every event type at the
// receiver.
func (h *harness) registerEndpoint(ctx context.Context, a *app) error {
	var ep xpromo.WebhookEndpoint
	err := h.appCall(ctx, a, http.MethodPost, "/v1/apps/"+a.ID+"/webhook-endpoints", nil,
		xpromo.CreateWebhookEndpointRequest{URL: h.hooks.recv.endpointURL(a.ID), Events: xpromo.EventTypes, Description: "crashtest " + h.run}, &ep)
	if err != nil {
		return fmt.Errorf("registering %s's webhook endpoint: %w", a.ID, err)
	}
	if err := h.hooks.recv.trust(a.ID, ep.Secret); err != nil {
		return fmt.Errorf("%s's webhook secret: %w", a.ID, err)
	}
	h.hooks.endpoints[a.ID] = ep
	return nil
}

// collectEvents reads every app's events of the last 30 days, all pages,
// into the run's set. It runs between kills, every cycle, so that events
// the server purges later (the run moves its clock two days a cycle) are
// still known at the end.
func (h *harness) collectEvents(ctx context.Context) error {
	for _, a := range h.apps {
		cursor := ""
		for {
			q := url.Values{"limit": {"1000"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var page xpromo.EventPage
			if err := h.appCall(ctx, a, http.MethodGet, "/v1/apps/"+a.ID+"/events", q, nil, &page); err != nil {
				return fmt.Errorf("reading %s's events: %w", a.ID, err)
			}
			for _, e := range page.Events {
				h.hooks.listed[e.ID] = e
			}
			if !page.HasMore || len(page.Events) == 0 {
				break
			}
			cursor = page.NextCursor
		}
	}
	return nil
}

// required are the listed events that must reach the receiver: those
// written once their app's endpoint existed (an event written before may
// arrive too, if the worker fanned it out after).
func (h *harness) requiredEvents() []xpromo.Event {
	var out []xpromo.Event
	for _, e := range h.hooks.listed {
		ep, ok := h.hooks.endpoints[e.AppID]
		if ok && !e.CreatedAt.Before(ep.CreatedAt) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b xpromo.Event) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// maxDeliveryWait bounds the wait of killDuringDelivery for a delivery.
const maxDeliveryWait = 2 * time.Second

// killDuringDelivery is each cycle's second kill, aimed at the webhook
// worker: once the operations are answered, their events are being
// delivered; as soon as the receiver is answering one (it holds each
// answer up to maxAnswerDelay, the event already recorded), the server is
// killed, verified, started again and verified again, as after the first
// kill. The deliveries it had sent are due again when their lease runs
// out (the next cycle moves the clock past it): duplicates, never losses.
func (h *harness) killDuringDelivery(ctx context.Context, cycle int) (Kill, error) {
	r := h.hooks.recv
	r.awaitDelivery(maxDeliveryWait)
	var none atomic.Int64
	k, err := h.killAndRestart(ctx, cycle, Kill{}, &none)
	r.mu.Lock()
	r.rep.DeliveryKills++
	if k.Delivering > 0 {
		r.rep.DeliveryKillsHit++
	}
	r.mu.Unlock()
	return k, err
}

// drainWebhooks waits, the server up and the operations done, until every
// required event has been answered 2xx at the receiver: it reads the
// events API, then polls the receiver's record until nothing is missing,
// then reads the events API again (PostgreSQL may show an event a moment
// late) and goes on if that brought a missing one. When a round brings no
// new delivery, it moves the test clock drainStep, so that retries (an
// endpoint that failed has the rest of its claim released for 5 s) and the
// leases of killed processes come due without waiting them out. Past
// drainLimit, what is still missing is reported.
func (h *harness) drainWebhooks(ctx context.Context) error {
	r := h.hooks.recv
	start := time.Now()
	defer func() {
		r.mu.Lock()
		r.rep.LastDrain = time.Since(start)
		r.rep.DrainTime += r.rep.LastDrain
		r.mu.Unlock()
	}()
	if err := h.collectEvents(ctx); err != nil {
		return err
	}
	last := -1
	for {
		missing := h.missing()
		if missing == 0 {
			if err := h.collectEvents(ctx); err != nil {
				return err
			}
			if missing = h.missing(); missing == 0 {
				return nil
			}
		}
		if time.Since(start) > drainLimit {
			return nil
		}
		if missing == last {
			if err := h.advance(ctx, drainStep); err != nil {
				return err
			}
			r.mu.Lock()
			r.rep.ClockMoves++
			r.mu.Unlock()
		}
		last = missing
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond): // the worker's idle wait
		}
	}
}

// missing counts the required events not answered 2xx yet.
func (h *harness) missing() int {
	r := h.hooks.recv
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range h.requiredEvents() {
		if _, ok := r.acked[e.ID]; !ok {
			n++
		}
	}
	return n
}

// checkWebhooks compares the receiver's record with the events API and
// reads each endpoint's status; the server must be up.
func (h *harness) checkWebhooks(ctx context.Context) (*WebhookReport, error) {
	eps := map[string]xpromo.WebhookEndpoint{}
	for _, a := range h.apps {
		var ep xpromo.WebhookEndpoint
		if err := h.appCall(ctx, a, http.MethodGet, "/v1/apps/"+a.ID+"/webhook-endpoints/"+h.hooks.endpoints[a.ID].ID, nil, nil, &ep); err != nil {
			return nil, fmt.Errorf("reading %s's webhook endpoint: %w", a.ID, err)
		}
		eps[a.ID] = ep
	}
	r := h.hooks.recv
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := r.rep // a copy: the receiver may still get a late duplicate
	rep.Problems = slices.Clone(rep.Problems)
	compareWebhooks(&rep, h.hooks.listed, h.requiredEvents(), r.acked, eps, h.hooks.restarts)
	return &rep, nil
}

// compareWebhooks fills rep's counts and problems from the events listed,
// those required, those received and the endpoints as they ended.
func compareWebhooks(rep *WebhookReport, listed map[string]xpromo.Event, required []xpromo.Event, acked map[string]received, endpoints map[string]xpromo.WebhookEndpoint, restarts []window) {
	rep.Endpoints = len(endpoints)
	rep.Listed, rep.Required, rep.Acked = len(listed), len(required), len(acked)
	for _, e := range required {
		if _, ok := acked[e.ID]; !ok {
			rep.Missing++
			rep.problem("event %s (%s of %s, %s) was listed but never received", e.ID, e.Type, e.AppID, e.CreatedAt.Format(time.RFC3339Nano))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(acked)) {
		got := acked[id]
		e, ok := listed[id]
		switch {
		case !ok && inWindows(got.body.CreatedAt, restarts):
			rep.StampedAtRestart++
		case !ok:
			rep.Unlisted++
			rep.problem("event %s (%s of %s) was received but the events API never listed it", id, got.body.Type, got.app)
		case e.Type != got.body.Type || e.AppID != got.body.AppID || !e.CreatedAt.Equal(got.body.CreatedAt) || !jsonEqual(e.Data, got.body.Data):
			rep.Mismatched++
			rep.problem("event %s was received as %s of %s at %s, listed as %s of %s at %s (or with other data)",
				id, got.body.Type, got.body.AppID, got.body.CreatedAt, e.Type, e.AppID, e.CreatedAt)
		}
	}
	for _, app := range slices.Sorted(maps.Keys(endpoints)) {
		ep := endpoints[app]
		if ep.Status != xpromo.WebhookEndpointEnabled {
			rep.Disabled++
			reason := ""
			if ep.DisabledReason != nil {
				reason = string(*ep.DisabledReason)
			}
			rep.problem("endpoint %s of %s is %s (%s): its queued deliveries were dropped", ep.ID, app, ep.Status, reason)
		}
	}
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// appCall sends one request with a's API key and decodes a 2xx answer
// into out. The SDK has no webhook methods yet; the wire types are its.
// It runs between kills only: no retries.
func (h *harness) appCall(ctx context.Context, a *app, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	u := h.srv.baseURL() + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.apiKey)
	req.Header.Set("User-Agent", "xpromo-crashtest")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b[:min(len(b), 512)])))
	}
	return json.Unmarshal(b, out)
}
