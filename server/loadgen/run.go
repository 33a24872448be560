package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The scenarios.
const (
	ScenarioFill   = "fill"   // POST /v1/sdk/fill
	ScenarioClaim  = "claim"  // POST /v1/sdk/install of clicks made beforehand
	ScenarioLedger = "ledger" // GET /v1/apps/{id}/ledger, page after page
	ScenarioMixed  = "mixed"  // fills, claims and ledger reads at once
)

// Scenarios lists them in the order `make loadgen` runs them (the open-loop
// ones: open.go).
var Scenarios = []string{ScenarioFill, ScenarioClaim, ScenarioLedger, ScenarioMixed, ScenarioOpenFill, ScenarioOpenMixed}

// fillingScenarios are the scenarios that fill slots: each has publishers
// of its own (Fixture.Fillers).
var fillingScenarios = []string{ScenarioFill, ScenarioClaim, ScenarioMixed}

// The measured operations, and the endpoint of each.
const (
	OpFill    = "fill"
	OpInstall = "install"
	OpLedger  = "ledger"
)

// Endpoints maps a measured operation to its endpoint.
var Endpoints = map[string]string{
	OpFill:      "POST /v1/sdk/fill",
	OpInstall:   "POST /v1/sdk/install",
	OpLedger:    "GET /v1/apps/{id}/ledger",
	OpStatsRead: "GET /v1/apps/{id}/stats",
	OpSweep:     "POST /v1/admin/attribution/sweep",
	OpClockHold: "(fills held for a clock jump)",
}

// installDelay is how far the test clock moves between the clicks of a
// batch and their claims: the server refuses an install claimed under 10
// seconds after its click (fraud_ctit_too_short).
const installDelay = 15 * time.Second

// RunConfig is one load run.
type RunConfig struct {
	Scenario    string
	Duration    time.Duration // measured time
	Concurrency int           // workers sending requests
	// Rate caps the requests per second over all workers; 0: no cap.
	Rate float64
	// ClaimBatch is how many clicks are made (unmeasured) before each
	// round of claims.
	ClaimBatch int
	// LedgerPage is the page size of the ledger reads.
	LedgerPage int
	// Lean sends the fill scenario's requests with the lean generator
	// (Blast) instead of the SDK's client: pre-signed and serialized, so the
	// client's own cost (JSON, the SDK's request building) stays off the
	// cores the server shares. BaseURL is then the server's root URL.
	Lean    bool
	BaseURL string
	// ForwardedFor sends a distinct X-Forwarded-For address per simulated
	// device, so that the per-address install velocity rule (20 per hour)
	// does not refuse the claims. The server must trust the load
	// generator's address (--trusted-proxies 127.0.0.1).
	ForwardedFor bool
	// FillRate is the open-loop scenarios' fills a second (open.go).
	FillRate float64
	// ReadRate is the open-loop scenarios' reads a second beside the
	// fills: an advertiser's stats and ledger page in turn (open.go); 0:
	// none.
	ReadRate float64
	// FillURL, when set, is the root URL of another instance on the same
	// store that the open-loop fills go to (one started with
	// --background=none, docs/operations.md); everything else goes to
	// BaseURL. FillOp is an admin client of that instance: the generator
	// reads its clock once, at the start, which catches it up with the
	// setup's moves; the claim rounds' jumps of the test clock are not
	// passed on to it, so its fills are never held for a jump (open.go).
	FillURL string
	FillOp  *xpromo.Client
}

// Report is the outcome of a run.
type Report struct {
	Scenario    string  `json:"scenario"`
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate_limit,omitempty"`
	FillRate    float64 `json:"fill_rate,omitempty"` // the open-loop scenarios' fixed rate
	ReadRate    float64 `json:"read_rate,omitempty"` // … and their reads'

	MeasuredSec float64   `json:"measured_seconds"`
	Ops         []OpStats `json:"operations"`
	// Server is what the open-loop fills' server measured over the run
	// (scrape.go): its time on the fills, its goroutines' wait for a core.
	Server []ServerHistogram `json:"server,omitempty"`
	// Total sums the operations (latencies are not merged: see Ops).
	Requests   int64   `json:"requests"`
	Errors     int64   `json:"errors"`
	Throughput float64 `json:"requests_per_second"`
}

// Run drives the scenario against the fixture's server for cfg.Duration of
// measured time. op must hold the admin token (the claim scenarios advance
// the test clock).
func Run(ctx context.Context, op *xpromo.Client, f *Fixture, cfg RunConfig) (*Report, error) {
	cfg.Concurrency = max(cfg.Concurrency, 1)
	cfg.ClaimBatch = max(cfg.ClaimBatch, cfg.Concurrency)
	if cfg.LedgerPage <= 0 {
		cfg.LedgerPage = 20
	}
	g := &generator{op: op, f: f, cfg: cfg, rec: NewRecorder(), signed: &presigned{clock: &f.clock}}
	g.pace = newPacer(ctx, cfg.Rate)
	var measured time.Duration
	var err error
	switch cfg.Scenario {
	case ScenarioFill:
		if cfg.Lean {
			return g.leanFill(ctx)
		}
		measured = g.measure(ctx, cfg.Duration, nil)
	case ScenarioLedger:
		measured = g.measure(ctx, cfg.Duration, nil)
	case ScenarioClaim, ScenarioMixed:
		measured, err = g.rounds(ctx)
	case ScenarioOpenFill, ScenarioOpenMixed:
		measured, err = g.open(ctx, cfg.Duration)
	default:
		return nil, fmt.Errorf("unknown scenario %q (want fill, claim, ledger, mixed, open-fill or open-mixed)", cfg.Scenario)
	}
	if err != nil {
		return nil, err
	}
	r := &Report{Scenario: cfg.Scenario, Concurrency: cfg.Concurrency, Rate: cfg.Rate, FillRate: cfg.FillRate, ReadRate: cfg.ReadRate, MeasuredSec: measured.Seconds(), Ops: g.rec.Stats(measured), Server: g.server}
	for _, o := range r.Ops {
		if o.Op == OpClockHold {
			continue // not a request
		}
		r.Requests += o.Requests
		r.Errors += o.Errors
	}
	if measured > 0 {
		r.Throughput = float64(r.Requests) / measured.Seconds()
	}
	return r, nil
}

type generator struct {
	op     *xpromo.Client
	f      *Fixture
	cfg    RunConfig
	rec    *Recorder
	pace   func(context.Context) bool
	signed *presigned // the measured fills' requests
	// fillsApart: the open-loop fills go to an instance of their own, whose
	// test clock the claim rounds' jumps leave where it was.
	fillsApart bool
	server     []ServerHistogram // the fills' server's histograms over the run
	// clockGate holds the open-loop fills while the test clock jumps
	// (open.go: jumpClock).
	clockGate sync.RWMutex
	host      string // the server's host:port, for the open-loop fills
}

// publisher is one of the scenario's publishers, at random.
func (g *generator) publisher() *App {
	pubs := g.f.Fillers[g.cfg.Scenario]
	if g.cfg.Scenario == ScenarioOpenMixed {
		pubs = g.f.Fillers[ScenarioMixed] // the clicks to claim
	}
	return pubs[rand.IntN(len(pubs))]
}

// click is a reported click, waiting for its install claim.
type click struct {
	token, device, addr string
	adv                 *App
}

// rounds runs the claim and mixed scenarios: make a batch of clicks
// (unmeasured), move the test clock past the click-to-install minimum,
// then measure until the batch is claimed; again until cfg.Duration of
// measured time.
func (g *generator) rounds(ctx context.Context) (time.Duration, error) {
	var measured time.Duration
	for measured < g.cfg.Duration && ctx.Err() == nil {
		pool, err := g.makeClicks(ctx, g.cfg.ClaimBatch)
		if err != nil {
			return measured, err
		}
		if err := g.advance(ctx, installDelay); err != nil {
			return measured, err
		}
		measured += g.measure(ctx, g.cfg.Duration-measured, pool)
	}
	return measured, nil
}

// makeClicks fills publisher slots and reports a click on each filled one,
// n in all, unmeasured.
func (g *generator) makeClicks(ctx context.Context, n int) (chan click, error) {
	pool := make(chan click, n)
	var left atomic.Int64
	left.Store(int64(n))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range g.cfg.Concurrency {
		wg.Go(func() {
			for left.Add(-1) >= 0 && ctx.Err() == nil {
				c, err := g.click(ctx)
				if err != nil {
					mu.Lock()
					firstErr = cmp(firstErr, err)
					mu.Unlock()
					return
				}
				pool <- c
			}
		})
	}
	wg.Wait()
	close(pool)
	if firstErr != nil {
		return nil, fmt.Errorf("making clicks to claim: %w", firstErr)
	}
	return pool, ctx.Err()
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// click plays a publisher SDK: a fill, the user's click signed, reported.
func (g *generator) click(ctx context.Context) (click, error) {
	dev, opts := g.device()
	pub := g.publisher()
	req := &xpromo.FillRequest{AppID: pub.ID, Slot: xpromo.SlotOnboardingComplete, Platform: xpromo.PlatformMac, DeviceID: dev.device}
	if err := req.Sign(pub.Key, g.f.clock.Now()); err != nil {
		return click{}, err
	}
	fill, err := g.op.SDKFill(ctx, req, opts...)
	if err != nil {
		return click{}, fmt.Errorf("fill: %w", err)
	}
	if !fill.Filled || fill.Offer == nil {
		return click{}, &noFillError{reason: deref(fill.NoFillReason)}
	}
	adv := g.f.Advertisers[fill.Offer.Advertiser]
	if adv == nil {
		return click{}, fmt.Errorf("fill: won by app %s, not one of the load generator's advertisers: use a fresh server", fill.Offer.Advertiser)
	}
	token, err := attribution.SignClick(pub.Key.Private, pub.Key.ID, attribution.NewClickClaims(*fill.Offer, g.f.clock.Now()))
	if err != nil {
		return click{}, err
	}
	if _, err := g.op.SDKClick(ctx, &xpromo.ClickRequest{Token: token}, opts...); err != nil {
		return click{}, fmt.Errorf("click: %w", err)
	}
	dev.token, dev.adv = token, adv
	return dev, nil
}

// device returns a new simulated device: its id, its address and the call
// options that send it.
func (g *generator) device() (click, []xpromo.CallOption) {
	n := g.f.devices.Add(1)
	c := click{device: fmt.Sprintf("lgdev-%s-%d", randomHex(4), n)}
	opts := []xpromo.CallOption{}
	if g.cfg.ForwardedFor {
		// 10.0.0.0/8 leaves 16 million devices; private, so never a
		// datacenter network.
		b := [4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)}
		c.addr = netip.AddrFrom4(b).String()
		opts = append(opts, xpromo.WithHeader("X-Forwarded-For", c.addr))
	}
	return c, opts
}

// measure runs the workers for up to d, recording each request; pool (nil
// for fill and ledger) holds the clicks to claim: the run ends early when
// the claim scenario has claimed them all. It returns the time measured.
func (g *generator) measure(ctx context.Context, d time.Duration, pool chan click) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range g.cfg.Concurrency {
		wg.Go(func() {
			cursors := map[string]string{} // this worker's place in each ledger
			for i := w; ctx.Err() == nil; i++ {
				if !g.pace(ctx) {
					return
				}
				var op string
				var req func() error
				switch g.cfg.Scenario {
				case ScenarioFill:
					op, req = OpFill, func() error { return g.fill(ctx) }
				case ScenarioLedger:
					op, req = OpLedger, func() error { return g.ledger(ctx, g.f.Apps[i%len(g.f.Apps)], cursors) }
				case ScenarioClaim:
					c, ok := <-pool
					if !ok {
						return // the batch is claimed: the round ends with the last claim
					}
					op, req = g.claim(ctx, c)
				case ScenarioMixed:
					// Half fills, a third ledger reads, a sixth claims; a
					// worker that finds the batch claimed ends the round.
					switch r := rand.IntN(6); {
					case r == 0:
						c, ok := <-pool // closed when made: never waits
						if !ok {
							return // the batch is claimed: the next round makes more
						}
						op, req = g.claim(ctx, c)
					case r <= 2:
						op, req = OpLedger, func() error { return g.ledger(ctx, g.f.Apps[i%len(g.f.Apps)], cursors) }
					default:
						op, req = OpFill, func() error { return g.fill(ctx) }
					}
				}
				t0 := time.Now()
				err := req()
				took := time.Since(t0)
				if err != nil && ctx.Err() != nil {
					return // cut by the end of the run: not the server's answer
				}
				g.rec.Record(op, took, err)
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// fill sends one of the requests signed ahead (presigned), so that the
// generator's own signing stays out of the measured time.
func (g *generator) fill(ctx context.Context) error {
	f, err := g.signed.next(g)
	if err != nil {
		return err
	}
	r, err := g.op.SDKFill(ctx, &f.req, f.opts...)
	if err == nil && !r.Filled {
		return &noFillError{reason: deref(r.NoFillReason)}
	}
	return err
}

// presigned holds fill requests signed ahead, devicesPerPublisher for each
// of the scenario's publishers, each from a device of its own (its address
// too), signed again once they are presignedFor old by the server's clock:
// the server refuses a request signed more than the clock skew (2 minutes)
// before its clock, and the claim rounds move that clock. A request may be
// sent many times within the skew: the server keeps no replay cache
// (docs/protocol.md), so this is what a publisher's SDK retrying looks
// like, and each is counted as a fill.
type presigned struct {
	clock    *serverClock // of the server the fills go to
	mu       sync.Mutex
	signedAt time.Time // server clock
	fills    []signedFill
	n        atomic.Uint64
}

type signedFill struct {
	req  xpromo.FillRequest
	opts []xpromo.CallOption
	addr string // the device's X-Forwarded-For address, if any
}

const (
	devicesPerPublisher = 64
	presignedFor        = time.Minute
)

// next returns the next request, signing the set again when it is due.
func (p *presigned) next(g *generator) (signedFill, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := p.clock.Now(); p.fills == nil || now.Sub(p.signedAt) >= presignedFor || now.Before(p.signedAt) {
		fills, err := p.sign(g, now)
		if err != nil {
			return signedFill{}, err
		}
		p.fills, p.signedAt = fills, now
	}
	return p.fills[p.n.Add(1)%uint64(len(p.fills))], nil
}

// sign signs a new set at the server time at, without touching the
// current one.
func (p *presigned) sign(g *generator, at time.Time) ([]signedFill, error) {
	pubs := g.f.Fillers[g.cfg.Scenario]
	if g.cfg.Scenario == ScenarioOpenFill || g.cfg.Scenario == ScenarioOpenMixed {
		pubs = g.openFillers()
	}
	var fills []signedFill
	for _, pub := range pubs {
		for range devicesPerPublisher {
			dev, opts := g.device()
			f := signedFill{req: xpromo.FillRequest{AppID: pub.ID, Slot: xpromo.SlotOnboardingComplete, Platform: xpromo.PlatformMac, DeviceID: dev.device}, opts: opts, addr: dev.addr}
			if err := f.req.Sign(pub.Key, at); err != nil {
				return nil, err
			}
			fills = append(fills, f)
		}
	}
	return fills, nil
}

// install makes fills, signed at at, the current set.
func (p *presigned) install(fills []signedFill, at time.Time) {
	p.mu.Lock()
	p.fills, p.signedAt = fills, at
	p.mu.Unlock()
}

// leanFill runs the fill scenario with the lean generator: every request
// of presigned (signed once: the run is shorter than presignedFor and the
// fill scenario does not move the server's clock) serialized ahead.
func (g *generator) leanFill(ctx context.Context) (*Report, error) {
	if _, err := g.signed.next(g); err != nil {
		return nil, err
	}
	reqs := make([]LeanRequest, len(g.signed.fills))
	for i, f := range g.signed.fills {
		body, err := json.Marshal(&f.req)
		if err != nil {
			return nil, err
		}
		h := http.Header{"Content-Type": {"application/json"}}
		if f.addr != "" {
			h.Set("X-Forwarded-For", f.addr)
		}
		reqs[i] = LeanRequest{Method: http.MethodPost, Path: "/v1/sdk/fill", Header: h, Body: body}
	}
	filled := []byte(`"filled":true`)
	st, err := Blast(ctx, OpFill, BlastConfig{
		URL: g.cfg.BaseURL, Requests: reqs, Concurrency: g.cfg.Concurrency, Duration: g.cfg.Duration,
		OK: func(status int, body []byte) bool { return status == http.StatusOK && bytes.Contains(body, filled) },
	})
	if err != nil {
		return nil, err
	}
	st.Endpoint = Endpoints[OpFill]
	return &Report{Scenario: ScenarioFill, Concurrency: g.cfg.Concurrency, MeasuredSec: g.cfg.Duration.Seconds(),
		Ops: []OpStats{st}, Requests: st.Requests, Errors: st.Errors, Throughput: st.Throughput}, nil
}

// claim countersigns c now (unmeasured) and returns the measured request:
// the advertiser SDK's install claim.
func (g *generator) claim(ctx context.Context, c click) (string, func() error) {
	cs, err := attribution.Countersign(c.adv.Key.Private, c.adv.Key.ID, c.token, c.device, g.f.clock.Now(), c.adv.ID)
	if err != nil {
		return OpInstall, func() error { return err }
	}
	opts := g.addrOpts(c)
	return OpInstall, func() error {
		r, err := g.op.SDKInstall(ctx, &xpromo.InstallRequest{Token: c.token, Countersignature: cs}, opts...)
		if err == nil && r.State != xpromo.ChainInstalled {
			return fmt.Errorf("install: chain %s is %s, not installed", r.ChainID, r.State)
		}
		return err
	}
}

// ledger reads the next page of a's ledger, from the first again after
// the last.
func (g *generator) ledger(ctx context.Context, a *App, cursors map[string]string) error {
	p, err := a.Client.GetLedger(ctx, a.ID, &xpromo.LedgerParams{Limit: g.cfg.LedgerPage, Cursor: cursors[a.ID]})
	if err != nil {
		return err
	}
	if p.NextCursor != nil {
		cursors[a.ID] = *p.NextCursor
	} else {
		delete(cursors, a.ID)
	}
	return nil
}

// noFillError is a fill answered without a creative: the fixture's
// campaigns buy every publisher's category, so it is counted as an error.
type noFillError struct{ reason string }

func (e *noFillError) Error() string { return "no fill: " + e.reason }

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// newPacer returns the gate every request passes: with rate > 0 it lets
// rate requests a second through, over all workers; it reports false once
// ctx is done. A done context always wins: select picks at random among
// ready cases, so a timer that fired by then must not let one more request
// through.
func newPacer(ctx context.Context, rate float64) func(context.Context) bool {
	if rate <= 0 {
		return func(ctx context.Context) bool { return ctx.Err() == nil }
	}
	interval := time.Duration(float64(time.Second) / rate)
	var mu sync.Mutex
	next := time.Now()
	return func(ctx context.Context) bool {
		if ctx.Err() != nil {
			return false // and takes no slot from the other workers
		}
		mu.Lock()
		now := time.Now()
		if next.Before(now) {
			next = now
		}
		at := next
		next = next.Add(interval)
		mu.Unlock()
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return ctx.Err() == nil
		}
	}
}
