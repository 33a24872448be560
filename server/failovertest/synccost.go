package failovertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/loadgen"
	"github.com/xpromo/xpromo/server/postgres"
)

// SyncCost is the price of synchronous replication on one cluster:
// ledger postings (admin wallet adjustments, each a keyed request whose
// posting commits with its stored answer), then install claims (the load
// generator's claim scenario), each from 8 workers against one
// xpromo-server through haproxy, with synchronous_mode on, then off; the
// apps are the load generator's (server/loadgen).
type SyncCost struct {
	Duration time.Duration
	Sync     []loadgen.OpStats // synchronous_mode on (strict)
	Async    []loadgen.OpStats // off
}

// syncCostPort is the measuring server's port (the failover test's second
// range is 18300-18399).
const syncCostPort = 18350

// measureSyncCost measures both halves, and leaves synchronous
// replication on.
func measureSyncCost(ctx context.Context, c *Cluster, serverBin string, d time.Duration, out io.Writer) (_ *SyncCost, err error) {
	dbURL, drop, err := postgres.ScratchDatabase(ctx, c.HAProxyURL("postgres"), "xpromo_failover_cost_")
	if err != nil {
		return nil, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = drop(ctx)
	}()
	token := randomHex(16)
	log, err := os.CreateTemp("", "xpromo-failovertest-cost-*.log")
	if err != nil {
		return nil, err
	}
	logPath := log.Name()
	defer func() {
		log.Close()
		if err == nil {
			_ = os.Remove(logPath)
		} else {
			err = fmt.Errorf("%w (the server's log: %s)", err, logPath)
		}
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", syncCostPort)
	cmd := exec.CommandContext(ctx, serverBin, "serve", "--addr", addr, "--mode", "test",
		"--base-url=", "--redis-url=", "--categories-file=", "--log-format", "text", "--log-level", "warn",
		"--rate-read", "100000000", "--rate-write", "100000000", "--trusted-proxies", "127.0.0.1",
		// No canaries: the claim scenario signs a click for every fill, and
		// a lapsed canary's click is refused fraud_token_expired (the
		// claims' failure against this server before; docs/apps.md).
		"--canary-rate", "0",
		"--database-url", dbURL)
	// None of the caller's XPROMO_* settings (the server reads them).
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XPROMO_") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "XPROMO_ADMIN_TOKEN="+token, "XPROMO_OFFER_SECRET="+randomHex(32))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	base := "http://" + addr
	if err := waitFor(ctx, time.Minute, "the measuring server to answer /readyz", func() error { return httpOK(base + "/readyz") }); err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	op := xpromo.NewClient(base, xpromo.WithAdminToken(token), xpromo.WithRetries(0),
		xpromo.WithHTTPClient(&http.Client{Transport: tr, Timeout: 30 * time.Second}), xpromo.WithUserAgent("xpromo-failovertest"))
	f, err := loadgen.Setup(ctx, op, loadgen.SetupConfig{Publishers: 4, FillPublishers: loadgen.FillPublishersFor(d), Advertisers: 4, TopUps: 10, ForwardedFor: true})
	if err != nil {
		return nil, fmt.Errorf("load generator setup: %w", err)
	}
	cost := &SyncCost{Duration: d}
	var apps []string
	for id := range f.Advertisers {
		apps = append(apps, id)
	}
	measure := func(label string) ([]loadgen.OpStats, error) {
		fmt.Fprintf(out, "failovertest: sync cost: postings for %s, then install claims for %s, %s\n", d, d, label)
		stats := postings(ctx, op, apps, d)
		// The load generator's claim scenario: clicks made unmeasured, the
		// clock moved past the click-to-install minimum, then the claims
		// measured (each a chain, an escrow hold and its keyed answer).
		r, err := loadgen.Run(ctx, op, f, loadgen.RunConfig{Scenario: loadgen.ScenarioClaim, Duration: d, Concurrency: 8, ForwardedFor: true})
		if err != nil {
			return nil, fmt.Errorf("install claims: %w", err)
		}
		return append(stats, r.Ops...), nil
	}
	if cost.Sync, err = measure("synchronous_mode on (strict)"); err != nil {
		return nil, err
	}
	if err := c.SetSync(ctx, false); err != nil {
		return nil, err
	}
	cost.Async, err = measure("synchronous_mode off")
	if err2 := c.SetSync(ctx, true); err == nil {
		err = err2
	}
	return cost, err
}

// Print writes the two halves side by side.
func (s *SyncCost) Print(w io.Writer) {
	fmt.Fprintf(w, "\n== failovertest: cost of synchronous replication (ledger postings and install claims, %s each, 8 workers, one instance through haproxy)\n", s.Duration)
	async := map[string]loadgen.OpStats{}
	for _, o := range s.Async {
		async[o.Op] = o
	}
	for _, o := range s.Sync {
		a := async[o.Op]
		fmt.Fprintf(w, "%-8s %-28s sync %7.1f/s p50 %6.2f ms p99 %7.2f ms (%d errors%s) | async %7.1f/s p50 %6.2f ms p99 %7.2f ms (%d errors%s)\n",
			o.Op, o.Endpoint, o.Throughput, o.P50ms, o.P99ms, o.Errors, codes(o.ErrorsByCode), a.Throughput, a.P50ms, a.P99ms, a.Errors, codes(a.ErrorsByCode))
	}
}

// codes lists the errors by code (", fraud_token_expired ×3"), "" for none.
func codes(m map[string]int64) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s += fmt.Sprintf(", %s ×%d", k, m[k])
	}
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// postings posts wallet adjustments of +1 cent from 8 workers for d, each
// with its own Idempotency-Key, and returns their figures.
func postings(ctx context.Context, op *xpromo.Client, apps []string, d time.Duration) []loadgen.OpStats {
	rec := loadgen.NewRecorder()
	run := randomHex(4)
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				t0 := time.Now()
				_, err := op.AdminAdjustWallet(ctx, apps[(w+i)%len(apps)], xpromo.Adjustment{AmountCents: 1, Note: "failovertest sync cost"},
					xpromo.WithIdempotencyKey(fmt.Sprintf("failover-cost-%s-%d-%d", run, w, i)))
				if ctx.Err() != nil {
					return // cut off by the end of the measurement: not counted
				}
				rec.Record("posting", time.Since(t0), err)
			}
		})
	}
	wg.Wait()
	return rec.Stats(time.Since(start))
}
