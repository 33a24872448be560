package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The open-loop scenarios (BENCHMARKS.md, "Fills while money moves"): fills
// sent at a fixed rate whatever the server's answers, as publishers' SDKs
// send them, each timed from the moment it was due to leave, so a server
// that stalls is charged for every fill that waited behind the stall
// (coordinated omission counted), not only for the one in flight.
const (
	ScenarioOpenFill  = "open-fill"  // fills at RunConfig.FillRate, alone
	ScenarioOpenMixed = "open-mixed" // the same fills while claims and sweeps run as fast as they can
	OpSweep           = "sweep"
	OpStatsRead       = "stats" // the open-loop reads (RunConfig.ReadRate), with OpLedger
	// OpClockHold is not a request: it is how long each jump of the test
	// clock held the open-loop fills (a test-mode pause no production
	// server has; its fills count it in their latency).
	OpClockHold = "clock-hold"
)

// MaxOpenInFlight bounds the fills in flight: past it the dispatcher waits,
// and the wait counts in the latency of the fills it delays. It stays
// under the server's default --body-readers (256), so that a stall shows
// as latency rather than as the server's 503s.
const MaxOpenInFlight = 200

// refundAfter moves the test clock past the installs' 72-hour activation
// window, so the sweep after a round of claims refunds the round's
// installs (an escrow release each: money moves).
const refundAfter = 73 * time.Hour

// openFillers are the publishers the open-loop fills come from: the fill
// scenario's, sized so that none spends its per-minute fill budget at
// MaxFillRate over the run.
func (g *generator) openFillers() []*App { return g.f.Fillers[ScenarioFill] }

// open runs an open-loop scenario for d: fills at cfg.FillRate and, for
// open-mixed, rounds of claims and sweeps beside them. It returns the time
// measured.
func (g *generator) open(ctx context.Context, d time.Duration) (time.Duration, error) {
	target := g.cfg.BaseURL
	if g.cfg.FillURL != "" {
		if g.cfg.FillOp == nil {
			return 0, errors.New("loadgen: a fill URL needs an admin client of its instance (FillOp) to keep its test clock")
		}
		target = g.cfg.FillURL
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return 0, fmt.Errorf("loadgen: the open-loop fills need an http:// URL, not %q", target)
	}
	g.host = u.Host
	if g.cfg.FillURL != "" {
		// The setup moved the clock through BaseURL's instance: reading
		// the fills' instance's clock catches it up, once. From here on its
		// clock runs on its own (the jumps below go to BaseURL's only), and
		// the fills are signed by it.
		state, err := g.cfg.FillOp.AdminGetClock(ctx)
		if err != nil {
			return 0, fmt.Errorf("loadgen: reading the fills' instance's clock: %w", err)
		}
		g.fillsApart = true
		g.signed.clock = &serverClock{}
		g.signed.clock.follow(state.Now)
	}
	if _, err := g.signed.next(g); err != nil { // signed before the clock starts
		return 0, err
	}
	metrics := &http.Client{Timeout: 30 * time.Second}
	before, err := scrapeServer(ctx, metrics, target)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var claimErr error
	var wg sync.WaitGroup
	if g.cfg.Scenario == ScenarioOpenMixed {
		wg.Go(func() { claimErr = g.moneyRounds(ctx) })
	}
	if g.cfg.ReadRate > 0 {
		wg.Go(func() { g.openReads(ctx, start) })
	}
	g.openFills(ctx, start)
	cancel()
	wg.Wait()
	measured := time.Since(start)
	if errors.Is(claimErr, context.DeadlineExceeded) || errors.Is(claimErr, context.Canceled) {
		claimErr = nil // the round cut by the end of the run
	}
	if claimErr != nil {
		return measured, claimErr
	}
	after, err := scrapeServer(context.WithoutCancel(ctx), metrics, target)
	if err != nil {
		return measured, err
	}
	g.server = serverDelta(before, after)
	return measured, nil
}

// openFills sends fills at the fixed rate until ctx ends: the i-th is due
// at start + i/rate, and its latency runs from then to its answer.
func (g *generator) openFills(ctx context.Context, start time.Time) {
	pool := &leanPool{host: g.host, idle: make(chan *leanConn, MaxOpenInFlight)}
	defer pool.close()
	paced(ctx, start, max(g.cfg.FillRate, 1), MaxOpenInFlight, func(_ int, due time.Time) {
		g.clockGate.RLock() // held off only while the test clock jumps
		err := g.leanFillOnce(ctx, pool)
		g.clockGate.RUnlock()
		if err != nil && ctx.Err() != nil {
			return // cut by the end of the run
		}
		g.rec.Record(OpFill, time.Since(due), err)
	})
}

// paced calls send at rate a second from start until ctx ends, each in a
// goroutine of its own: the i-th is due at start + i/rate whatever the
// answers to the ones before (open loop). At most inFlight run at once;
// past that the next waits for a slot, and the wait counts in its latency,
// which send measures from due. paced returns once every send has.
func paced(ctx context.Context, start time.Time, rate float64, inFlight int, send func(i int, due time.Time)) {
	interval := time.Duration(float64(time.Second) / rate)
	slots := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		wg.Go(func() {
			defer func() { <-slots }()
			send(i, due)
		})
	}
}

// maxOpenReads bounds the open-loop reads in flight: past it a read waits
// for a slot, and its latency (from when it was due) shows the wait.
const maxOpenReads = 64

// openReads sends a person's reads at cfg.ReadRate until ctx ends, the i-th
// due at start + i/rate and timed from then: in turn an advertiser's stats
// of the last 7 days and its ledger's first page, round the advertisers,
// through the SDK's client to BaseURL's instance. They are what a dashboard
// asks while money moves: on PostgreSQL each is a read-only transaction,
// which must not wait for a connection the claims and sweeps hold.
func (g *generator) openReads(ctx context.Context, start time.Time) {
	advertisers := make([]*App, 0, len(g.f.Advertisers))
	for _, a := range g.f.Advertisers {
		advertisers = append(advertisers, a)
	}
	if len(advertisers) == 0 {
		return
	}
	slices.SortFunc(advertisers, func(a, b *App) int { return strings.Compare(a.ID, b.ID) })
	paced(ctx, start, g.cfg.ReadRate, maxOpenReads, func(i int, due time.Time) {
		a := advertisers[(i/2)%len(advertisers)]
		op, err := OpStatsRead, error(nil)
		if i%2 == 0 {
			_, err = a.Client.GetStats(ctx, a.ID, &xpromo.StatsParams{Period: xpromo.PeriodLast7Days})
		} else {
			op = OpLedger
			_, err = a.Client.GetLedger(ctx, a.ID, &xpromo.LedgerParams{Limit: g.cfg.LedgerPage})
		}
		if err != nil && ctx.Err() != nil {
			return // cut by the end of the run
		}
		g.rec.Record(op, time.Since(due), err)
	})
}

// leanFillOnce sends the next presigned fill raw, on a kept-alive
// connection of pool (as the lean generator does, so the client's own
// cost stays small on the cores the server shares): it counts only if
// answered 200 with a creative.
func (g *generator) leanFillOnce(ctx context.Context, pool *leanPool) error {
	f, err := g.signed.next(g)
	if err != nil {
		return err
	}
	body, err := json.Marshal(&f.req)
	if err != nil {
		return err
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if f.addr != "" {
		h.Set("X-Forwarded-For", f.addr)
	}
	wire := serialize(pool.host, LeanRequest{Method: http.MethodPost, Path: "/v1/sdk/fill", Header: h, Body: body})
	lc, reused, err := pool.get(ctx)
	if err != nil {
		return err
	}
	status, closing, err := roundTrip(lc.c, lc.br, wire, &lc.body)
	if err != nil && reused && ctx.Err() == nil {
		// A kept-alive connection the server closed meanwhile: once more on
		// a new one, as net/http's client does.
		lc.c.Close()
		if lc, _, err = pool.dial(ctx); err != nil {
			return err
		}
		status, closing, err = roundTrip(lc.c, lc.br, wire, &lc.body)
	}
	if err == nil && (status != http.StatusOK || !bytes.Contains(lc.body.Bytes(), []byte(`"filled":true`))) {
		err = &statusError{status}
	}
	if err != nil || closing {
		lc.c.Close()
	} else {
		pool.put(lc)
	}
	return err
}

// leanPool keeps the open-loop fills' connections alive between fills.
type leanPool struct {
	host string
	idle chan *leanConn
}

type leanConn struct {
	c    net.Conn
	br   *bufio.Reader
	body bytes.Buffer
}

// get returns an idle connection (reused) or a new one.
func (p *leanPool) get(ctx context.Context) (lc *leanConn, reused bool, err error) {
	select {
	case lc := <-p.idle:
		return lc, true, nil
	default:
	}
	return p.dial(ctx)
}

func (p *leanPool) dial(ctx context.Context) (*leanConn, bool, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.host)
	if err != nil {
		return nil, false, err
	}
	context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) }) // unblock at the end
	return &leanConn{c: c, br: bufio.NewReaderSize(c, 16<<10)}, false, nil
}

func (p *leanPool) put(lc *leanConn) {
	select {
	case p.idle <- lc:
	default:
		lc.c.Close()
	}
}

func (p *leanPool) close() {
	for {
		select {
		case lc := <-p.idle:
			lc.c.Close()
		default:
			return
		}
	}
}

// moneyRounds makes money move as fast as the server lets it, until ctx
// ends: a batch of clicks (unmeasured), their install claims (each an
// escrow hold; measured, Concurrency at a time), then the test clock past
// their activation window and a sweep that refunds them (measured).
func (g *generator) moneyRounds(ctx context.Context) error {
	for ctx.Err() == nil {
		pool, err := g.makeClicks(ctx, g.cfg.ClaimBatch)
		if err != nil {
			return err
		}
		if err := g.jumpClock(ctx, installDelay); err != nil {
			return err
		}
		var wg sync.WaitGroup
		for range g.cfg.Concurrency {
			wg.Go(func() {
				for c := range pool {
					if ctx.Err() != nil {
						return
					}
					op, req := g.claim(ctx, c)
					t0 := time.Now()
					err := req()
					if err != nil && ctx.Err() != nil {
						return
					}
					g.rec.Record(op, time.Since(t0), err)
				}
			})
		}
		wg.Wait()
		if err := g.jumpClock(ctx, refundAfter); err != nil {
			return err
		}
		t0 := time.Now()
		_, err = g.op.AdminSweep(ctx)
		if err != nil && ctx.Err() != nil {
			return nil
		}
		g.rec.Record(OpSweep, time.Since(t0), err)
	}
	return nil
}

// jumpClock moves the server's test clock by d with the open-loop fills
// held: a fill signed before a jump of more than the clock skew would be
// refused after it. The fills for the new time are signed before the fills
// are held (the generator's own work stays out of their latency); the pause
// is advance's two admin requests (read the clock, move it), and it counts
// in the latency of the fills it held.
//
// Fills sent to an instance of their own (fillsApart) are not held: that
// instance's clock is left where it was, as no production clock jumps.
func (g *generator) jumpClock(ctx context.Context, d time.Duration) error {
	if g.fillsApart {
		return g.advance(ctx, d)
	}
	at := g.f.clock.Now().Add(d)
	fills, err := g.signed.sign(g, at)
	if err != nil {
		return err
	}
	g.clockGate.Lock()
	held := time.Now()
	defer g.clockGate.Unlock()
	if err := g.advance(ctx, d); err != nil {
		return err
	}
	g.signed.install(fills, at)
	g.rec.Record(OpClockHold, time.Since(held), nil)
	return nil
}
