// Package failovertest is the failover test (`make failovertest`, issue
// 31): a three-node Patroni cluster on loopback (one etcd, synchronous
// replication in strict mode, haproxy with Patroni's REST health check;
// data on tmpfs), two xpromo-server instances on it under the crash
// test's money load (server/crashtest: top-ups, adjustments, claims,
// heartbeats, sweeps, payouts and webhook deliveries through the SDK,
// with Idempotency-Keys and retries, and its exactly-once and every-event
// checks), and per cycle one fault of the primary: SIGKILL of its Patroni
// and postmaster, SIGKILL of the postmaster alone, SIGSTOP for 30 s.
//
// Before each fault the harness checks that a synchronous standby exists;
// after it, that a write commits through the front door again (the
// recovery time), `ledger verify` on the new primary, that the old node
// rejoins (pg_rewind) and that every node holds the same ledger (a digest
// of ledger_lines on each). Every answer the clients get is watched: a
// 5xx other than 503, a 503 or a retrying 409 without Retry-After, or no
// answer at all, is a violation.
//
// The same runs again through a libpq multi-host URL with
// target_session_attrs=read-write instead of haproxy. Then the negative
// control: replication made asynchronous, the standbys' WAL receivers
// stopped, acknowledged writes on the primary alone, the primary killed:
// the crash test's checks must report lost acknowledged operations, or the
// harness proves nothing and the run fails.
package failovertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/crashtest"
)

// Route is how the xpromo instances reach the primary.
type Route string

// The routes.
const (
	ViaHAProxy   Route = "haproxy"
	ViaMultiHost Route = "multi-host"
)

// Config is a run.
type Config struct {
	// Server is the xpromo-server binary.
	Server string
	// BasePort: the cluster uses BasePort to BasePort+30 (15400 is the
	// failover test's range).
	BasePort int
	// Cycles per route; the faults take Kinds in turn.
	Cycles map[Route]int
	Kinds  []FaultKind
	// DCS is Patroni's etcd API (DCSEtcd2 when empty; see DCSEtcd3 for
	// why).
	DCS string
	// Control runs the negative control after the routes.
	Control bool
	// SyncCost is how long each half of the cost measurement runs
	// (synchronous replication on, then off); 0 skips it.
	SyncCost time.Duration
	// The crash test's load per cycle.
	Workers, Claims, TopUps, Adjustments int
	// RetryFor bounds the time one operation is retried: longer than a
	// failover.
	RetryFor time.Duration
	Out      io.Writer
	Verbose  bool
}

// RouteRun is one route's run.
type RouteRun struct {
	Route    Route
	Control  bool
	Store    *crashtest.StoreReport
	Faults   []*FaultReport
	Seen     map[int][]string // per cycle: what clients saw besides 2xx
	Breaches []string         // answers against the contract
	// Disagreements are the cycles after which the nodes' ledgers
	// differed.
	Disagreements []string
	Err           error
}

// Failures counts what must be zero (for the control: what it must
// find is checked apart, see ControlCaught).
func (r *RouteRun) Failures() int {
	n := len(r.Breaches) + len(r.Disagreements)
	if r.Err != nil {
		n++
	}
	if r.Store != nil {
		n += r.Store.Violations()
		if r.NoTransfers() {
			n++
		}
	}
	return n
}

// minTransferCycles is the shortest run that must see a payout reach a
// transfer: the first cycle's installs clear in the second, so from the
// third on a run without one has not exercised the payout path.
const minTransferCycles = 3

// NoTransfers reports a run of at least minTransferCycles cycles in which
// no payout reached a transfer (every one refused, below_minimum): the
// harness then never tested the payout money path under a fault.
func (r *RouteRun) NoTransfers() bool {
	return !r.Control && r.Store != nil && r.Store.Ops != nil && r.Store.Cycles >= minTransferCycles && r.Store.TransfersTotal() == 0
}

// ControlCaught reports whether the negative control's checks found
// acknowledged operations lost.
func (r *RouteRun) ControlCaught() int {
	if r.Store == nil {
		return 0
	}
	n := 0
	for _, v := range r.Store.Findings.Lost {
		n += v
	}
	return n
}

// Result is a whole run.
type Result struct {
	Runs  []*RouteRun
	Cost  *SyncCost // nil when not measured
	Notes []string  // the cluster's own findings (Cluster.Notes)
	// Skipped says what was asked and not run (the partition fault without
	// network namespaces).
	Skipped []string
	// ClusterLogs is where the cluster's logs were kept (a failed run).
	ClusterLogs string
}

// Run brings the cluster up, runs each route, the cost measurement and
// the control on it, and tears it down.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	res = &Result{}
	dir := fmt.Sprintf("/dev/shm/xpromo-failover-%d-%d", cfg.BasePort, os.Getpid())
	fmt.Fprintf(cfg.Out, "failovertest: starting etcd, 3 Patroni nodes and haproxy on 127.0.0.1:%d-%d, data in %s\n", cfg.BasePort, cfg.BasePort+haproxyOffset, dir)
	netns := false
	if slices.Contains(cfg.Kinds, Partition) {
		if why := NetnsUnavailable(); why != "" {
			// Loud, and in the result: the partition fault is not run.
			note := fmt.Sprintf("the %s fault is SKIPPED: no network namespaces here (%s); the nodes stay on 127.0.0.1 and the other kinds run", Partition, why)
			fmt.Fprintf(cfg.Out, "failovertest: WARNING: %s\n", note)
			res.Skipped = append(res.Skipped, note)
			cfg.Kinds = slices.DeleteFunc(slices.Clone(cfg.Kinds), func(k FaultKind) bool { return k == Partition })
			if len(cfg.Kinds) == 0 {
				return res, errors.New(note + ", and no other kind was asked for")
			}
		} else {
			netns = true
			fmt.Fprintf(cfg.Out, "failovertest: each node in its own network namespace (%s1-3, %s, bridge %s) for the %s fault\n", netnsPrefix+"pg", subnet, bridgeName, Partition)
		}
	}
	t0 := time.Now()
	c, err := StartCluster(ctx, ClusterConfig{BasePort: cfg.BasePort, Dir: dir, Netns: netns, DCS: cfg.DCS, Out: cfg.Out})
	if err != nil {
		return res, fmt.Errorf("starting the cluster: %w", err)
	}
	defer c.Close()
	defer func() {
		res.Notes = c.Notes
		failed := err != nil
		for _, r := range res.Runs {
			failed = failed || (!r.Control && r.Failures() > 0) || (r.Control && r.ControlCaught() == 0)
		}
		if failed {
			// The cluster's side of a failure: what Patroni and PostgreSQL did.
			dir, kerr := c.KeepLogs()
			if kerr != nil {
				fmt.Fprintf(cfg.Out, "failovertest: keeping the cluster's logs: %v\n", kerr)
			}
			fmt.Fprintf(cfg.Out, "failovertest: the cluster's logs are kept in %s\n", dir)
			res.ClusterLogs = dir
		}
	}()
	fmt.Fprintf(cfg.Out, "failovertest: cluster up in %s: %s\n", time.Since(t0).Round(100*time.Millisecond), c.status(ctx))

	for _, route := range []Route{ViaHAProxy, ViaMultiHost} {
		if cfg.Cycles[route] == 0 {
			continue
		}
		r := runRoute(ctx, cfg, c, route, cfg.Cycles[route], false)
		res.Runs = append(res.Runs, r)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	if cfg.SyncCost > 0 {
		// Healthy first: the last fault's node may still be rejoining.
		if _, err := c.WaitHealthy(ctx, recoveryLimit); err != nil {
			return res, err
		}
		cost, err := measureSyncCost(ctx, c, cfg.Server, cfg.SyncCost, cfg.Out)
		if err != nil {
			return res, fmt.Errorf("measuring the cost of synchronous replication: %w", err)
		}
		res.Cost = cost
	}
	if cfg.Control {
		if err := c.SetSync(ctx, false); err != nil {
			return res, fmt.Errorf("turning synchronous replication off for the control: %w", err)
		}
		res.Runs = append(res.Runs, runRoute(ctx, cfg, c, ViaHAProxy, 1, true))
	}
	return res, nil
}

func (c *Cluster) status(ctx context.Context) string {
	ms, err := c.Members(ctx)
	if err != nil {
		return err.Error()
	}
	return describe(ms)
}

// runRoute is one crash-test run on the cluster through route.
func runRoute(ctx context.Context, cfg Config, c *Cluster, route Route, cycles int, control bool) *RouteRun {
	r := &RouteRun{Route: route, Control: control, Seen: map[int][]string{}}
	const instances = 2
	w := newWatcher(instances)
	// The run's database is created through haproxy either way; the
	// multi-host route then reaches it through the multi-host URL, once
	// every node has it (libpq, like pgx, gives up on the first host that
	// answers "no such database", without trying the next).
	admin := c.HAProxyURL("postgres")
	var serverDB func(ctx context.Context, dbURL string) (string, error)
	if route == ViaMultiHost {
		serverDB = c.everywhere
	}
	kinds := cfg.Kinds
	if control {
		kinds = []FaultKind{KillAll}
	}
	in := &injector{c: c, front: admin, kinds: kinds, control: control, watch: w}
	name := string(route)
	if control {
		name = "negative control (asynchronous, standbys held back)"
	}
	via := admin
	if route == ViaMultiHost {
		via = c.MultiHostURL("…")
	}
	fmt.Fprintf(cfg.Out, "\nfailovertest: %s: %d cycles, 2 xpromo-server instances on %s\n", name, cycles, redact(via))
	claims, adjustments := cfg.Claims, cfg.Adjustments
	if control {
		// More operations under the fault: the control needs
		// acknowledged writes while the standbys are held back.
		claims, adjustments = 3*claims, 3*adjustments
	}
	reports, err := crashtest.Run(ctx, crashtest.Config{
		Server: cfg.Server, Stores: []string{crashtest.StorePostgres}, DatabaseURL: admin,
		Cycles: cycles, CrashOps: allKinds(), Workers: cfg.Workers,
		Claims: claims, TopUps: cfg.TopUps, Adjustments: adjustments,
		RetryFor: cfg.RetryFor, WebhookFailRate: 0.1, Out: cfg.Out, Verbose: cfg.Verbose,
		// Kept: the servers' logs explain a breach the crash test's own
		// checks do not count; removed below when the run passed.
		Keep:      true,
		Instances: instances, Fault: in.fault, FaultEarly: control, Observe: w.observe, ServerDatabase: serverDB,
		AfterCycle: func(ctx context.Context, cycle int, dbURL string) error {
			if n := len(in.reports); n > 0 && in.reports[n-1].Cycle == cycle {
				in.reports[n-1].FirstWrite = w.firstWrites(cycle)
			}
			lags, err := c.agree(ctx, dbURL)
			if n := len(in.reports); n > 0 && in.reports[n-1].Cycle == cycle {
				in.reports[n-1].Lag = lags
			}
			fmt.Fprintf(cfg.Out, "failovertest: cycle %d: replica lag at the digest check: %s\n", cycle, lagsString(lags))
			if err != nil {
				if control {
					// Expected there: the rewound node and the promoted
					// one hold what survived; the check that matters is
					// the crash test's.
					return nil
				}
				r.Disagreements = append(r.Disagreements, fmt.Sprintf("after cycle %d: %v", cycle, err))
			}
			return nil
		},
		// The server's deadlines under the clients' 30 s timeout, so that a
		// request caught by a hung primary is answered (503), not dropped.
		ServerArgs: []string{"--request-timeout", "15s", "--db-statement-timeout", "10s", "--db-connect-timeout", "3s"},
	})
	r.Faults = in.reports
	for _, f := range in.reports {
		r.Seen[f.Cycle] = w.seenIn(f.Cycle)
	}
	r.Breaches = w.breaches()
	if len(reports) > 0 {
		r.Store = reports[0]
	}
	r.Err = err
	if r.Store != nil && r.Store.WorkDir != "" {
		if r.Failures() == 0 || control {
			_ = os.RemoveAll(r.Store.WorkDir)
			r.Store.WorkDir = ""
		} else {
			fmt.Fprintf(cfg.Out, "failovertest: %s: the servers' logs are kept in %s\n", name, r.Store.WorkDir)
		}
	}
	return r
}

func allKinds() map[crashtest.Kind]bool {
	m := map[crashtest.Kind]bool{}
	for _, k := range crashtest.Kinds {
		m[k] = true
	}
	return m
}

// everywhere waits until the database of dbURL exists on every node and
// returns its multi-host URL.
func (c *Cluster) everywhere(ctx context.Context, dbURL string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	db := strings.TrimPrefix(u.Path, "/")
	// Every replica replays up to the leader's position after CREATE
	// DATABASE first: a replica still catching up after the previous
	// route's last fault (or rejoining) has not got the database yet.
	deadline := time.Now().Add(catchUpLimit)
	if _, lags, err := c.caughtUp(ctx, deadline); err != nil {
		return "", fmt.Errorf("the run's database: %w (lag %s)", err, lagsString(lags))
	}
	err = waitFor(ctx, time.Until(deadline), "the run's database on every node", func() error {
		for _, n := range c.Nodes {
			if err := c.exec(ctx, n.URL(db), "SELECT 1"); err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
		}
		return nil
	})
	return c.MultiHostURL(db), err
}

// agree checks that every node holds the same ledger lines: the same
// count and digest of (id, hash) on each, read on each node directly,
// once every replica has replayed the leader's WAL up to its position
// after the cycle's load (caughtUp; a lagging replica is waited for by
// its replay position, not by a fixed time). The servers' background
// work may write meanwhile, so a difference is asked again, with a fresh
// position, until catchUpLimit. It returns the replicas' lag at the first
// look.
func (c *Cluster) agree(ctx context.Context, dbURL string) ([]NodeLag, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, err
	}
	db := strings.TrimPrefix(u.Path, "/")
	deadline := time.Now().Add(catchUpLimit)
	var first []NodeLag
	for {
		_, lags, err := c.caughtUp(ctx, deadline)
		if first == nil {
			first = lags
		}
		if err != nil {
			return first, fmt.Errorf("replicas not caught up: %w (lag %s)", err, lagsString(lags))
		}
		var want string
		var parts []string
		differ := false
		for _, n := range c.Nodes {
			d, err := ledgerDigest(ctx, n.URL(db))
			if err != nil {
				d = "error: " + err.Error()
			}
			parts = append(parts, n.Name+" "+d)
			if want == "" {
				want = d
			}
			differ = differ || d != want || err != nil
		}
		if !differ {
			return first, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return first, errors.New(strings.Join(parts, ", "))
		}
	}
}

// ledgerDigest is the count and md5 of every ledger line's id and hash.
func ledgerDigest(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var n int64
	var digest string
	err = conn.QueryRow(ctx, `SELECT count(*), coalesce(md5(string_agg(id || ':' || encode(hash, 'hex'), ',' ORDER BY id)), '')
		FROM ledger_lines`).Scan(&n, &digest)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d lines md5 %s", n, digest), nil
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}
