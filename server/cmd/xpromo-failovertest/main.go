// Command xpromo-failovertest is the failover test (`make failovertest`;
// server/failovertest): a 3-node Patroni cluster on loopback, two
// xpromo-server instances under the crash test's money load, one fault of
// the primary per cycle, the crash test's exactly-once and every-event
// checks, and a negative control that must report lost writes.
//
//	xpromo-failovertest -server ./bin/xpromo-server -cycles 20
//
// It needs etcd, patroni, haproxy and PostgreSQL's server binaries
// (scripts/test-deps.sh installs them). Without them it says so and exits
// 0, unless CI=true, where it fails.
//
// Exit status: 0 when everything passed (or the tools are missing outside
// CI), 1 on any violation, 2 for a bad command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/xpromo/xpromo/server/crashtest"
	"github.com/xpromo/xpromo/server/failovertest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("xpromo-failovertest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "", "the xpromo-server binary (required)")
	cycles := fs.Int("cycles", 20, "fault cycles through haproxy; the faults take the kinds in turn")
	multiCycles := fs.Int("multihost-cycles", -1, "fault cycles through a libpq multi-host URL with target_session_attrs=read-write (-1: as many as -cycles)")
	kinds := fs.String("faults", "all", "fault kinds, in turn: all, or some of "+kindNames())
	control := fs.Bool("control", true, "run the negative control (asynchronous replication, standbys held back): it must report lost writes")
	dcs := fs.String("dcs", failovertest.DCSEtcd2, "Patroni's etcd API: etcd (v2) or etcd3 (Debian 12's Patroni 3.0.2 can lose acknowledged writes on etcd3 after a frozen primary: docs/operations.md)")
	basePort := fs.Int("base-port", 15400, "the cluster's ports: base to base+30")
	var load crashtest.LoadFlags
	load.Register(fs, 3*time.Minute, "how long one operation is retried with its key before it counts as unresolved (longer than a failover)")
	syncCost := fs.Duration("sync-cost", 10*time.Second, "measure the cost of synchronous replication: the load generator's claims for this long with synchronous_mode on, then off (0: skip)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "xpromo-failovertest: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q", fs.Arg(0))
	}
	if *server == "" {
		return usage("-server is required: the xpromo-server binary (make failovertest builds it)")
	}
	if _, err := os.Stat(*server); err != nil {
		return usage("-server: %v", err)
	}
	kindList, err := parseKinds(*kinds)
	if err != nil {
		return usage("-faults: %v", err)
	}
	if *multiCycles < 0 {
		*multiCycles = *cycles
	}
	if *dcs != failovertest.DCSEtcd2 && *dcs != failovertest.DCSEtcd3 {
		return usage("-dcs: %q: want %s or %s", *dcs, failovertest.DCSEtcd2, failovertest.DCSEtcd3)
	}
	if err := load.Check(); err != nil {
		return usage("%v", err)
	}
	if *cycles < 0 || *basePort < 1024 || *basePort > 65000 {
		return usage("-cycles must not be negative, -base-port between 1024 and 65000")
	}
	if missing := failovertest.MissingTools(); len(missing) > 0 {
		msg := "missing " + strings.Join(missing, ", ") + " (scripts/test-deps.sh installs them: Debian's patroni, etcd-server, haproxy, iproute2, postgresql)"
		if env("CI") == "true" {
			fmt.Fprintf(stderr, "xpromo-failovertest: FAIL: %s\n", msg)
			return 1
		}
		fmt.Fprintf(stdout, "xpromo-failovertest: SKIPPED: %s\n", msg)
		return 0
	}
	start := time.Now()
	res, err := failovertest.Run(ctx, failovertest.Config{
		Server: *server, BasePort: *basePort,
		Cycles: map[failovertest.Route]int{failovertest.ViaHAProxy: *cycles, failovertest.ViaMultiHost: *multiCycles},
		Kinds:  kindList, Control: *control, SyncCost: *syncCost, DCS: *dcs,
		Workers: load.Workers, Claims: load.Claims, TopUps: load.TopUps, Adjustments: load.Adjustments,
		RetryFor: load.RetryFor, Out: stdout, Verbose: load.Verbose,
	})
	failovertest.Print(stdout, res)
	status := 0
	fmt.Fprintln(stdout)
	for _, r := range res.Runs {
		switch {
		case r.Control && r.ControlCaught() == 0:
			fmt.Fprintf(stdout, "failovertest negative control: FAIL (no loss reported)\n")
			status = 1
		case r.Control:
			fmt.Fprintf(stdout, "failovertest negative control: PASS (%d lost operations reported)\n", r.ControlCaught())
		case r.Failures() > 0:
			fmt.Fprintf(stdout, "failovertest %s: FAIL (%d violations)\n", r.Route, r.Failures())
			status = 1
		default:
			fmt.Fprintf(stdout, "failovertest %s: PASS\n", r.Route)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "xpromo-failovertest: %v\n", err)
		status = 1
	}
	fmt.Fprintf(stdout, "failovertest: %s in all\n", time.Since(start).Round(time.Second))
	return status
}

func kindNames() string {
	var names []string
	for _, k := range failovertest.FaultKinds {
		names = append(names, string(k))
	}
	return strings.Join(names, ",")
}

func parseKinds(s string) ([]failovertest.FaultKind, error) {
	if s == "all" {
		return failovertest.FaultKinds, nil
	}
	var out []failovertest.FaultKind
	for _, name := range strings.Split(s, ",") {
		found := false
		for _, k := range failovertest.FaultKinds {
			if string(k) == strings.TrimSpace(name) {
				out, found = append(out, k), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown fault kind %q (want %s)", name, kindNames())
		}
	}
	return out, nil
}
