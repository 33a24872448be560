package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
)

// TestThroughput measures posting rates; it runs only when
// XPROMO_PG_THROUGHPUT is set (to the seconds each measurement lasts), e.g.
//
//	XPROMO_PG_THROUGHPUT=5 go test -run Throughput -v ./postgres/
//
// The workload is the escrow flow over 1,000 apps: a top-up, then holds that
// are cleared or released, so platform shards and advertisers contend as in
// production. Every run ends with a full verify.
func TestThroughput(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("XPROMO_PG_THROUGHPUT"))
	if secs <= 0 {
		t.Skip("XPROMO_PG_THROUGHPUT not set")
	}
	d := time.Duration(secs) * time.Second
	for _, posters := range []int{8, 16, 32} {
		t.Run(fmt.Sprintf("single/%d", posters), func(t *testing.T) { measure(t, posters, 1, d) })
	}
	for _, size := range []int{100, 1000} {
		for _, posters := range []int{1, 4} {
			t.Run(fmt.Sprintf("batch%d/%d", size, posters), func(t *testing.T) { measure(t, posters, size, d) })
		}
	}
}

func measure(t *testing.T, posters, batch int, d time.Duration) {
	measureURL(t, pgtest.NewTestDatabase(t), posters, batch, d)
}

func measureURL(t *testing.T, url string, posters, batch int, d time.Duration) {
	ctx := context.Background()
	db := open(t, url)
	l := &ledger.Ledger{Store: db, Now: time.Now}
	const apps = 1000
	// Fund every advertiser first.
	var fund []ledger.Operation
	for i := range apps {
		op, err := ledger.TopUp(fmt.Sprintf("fund:%d", i), fmt.Sprintf("app%d", i), 1_000_000_000, "")
		require.NoError(t, err)
		fund = append(fund, op)
	}
	_, errs, err := l.PostBatch(ctx, fund)
	require.NoError(t, err)
	for _, e := range errs {
		require.NoError(t, e)
	}

	var ops, failed atomic.Int64
	serverCPU0, clientCPU0 := serverCPU(), clientCPU()
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := range posters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			var open []ledger.Hold
			for i := 0; time.Now().Before(deadline); i++ {
				var batchOps []ledger.Operation
				for j := range batch {
					key := fmt.Sprintf("g%d-%d-%d", g, i, j)
					var op ledger.Operation
					var err error
					if len(open) > 0 && rng.IntN(2) == 0 {
						h := open[0]
						open = open[1:]
						if rng.IntN(4) == 0 {
							op, err = ledger.EscrowRelease("release:"+key, h)
						} else {
							op, err = ledger.Clear("clear:"+key, h, ledger.EarnCash)
						}
					} else {
						adv := rng.IntN(apps)
						h := ledger.Hold{ID: "ch_" + key, Advertiser: fmt.Sprintf("app%d", adv), Publisher: fmt.Sprintf("app%d", (adv+1+rng.IntN(apps-1))%apps), Amount: 100 + rng.Int64N(900), ChainID: "ch_" + key}
						open = append(open, h)
						op, err = ledger.EscrowHold("hold:"+key, h)
					}
					require.NoError(t, err)
					batchOps = append(batchOps, op)
				}
				var errs []error
				var err error
				if batch == 1 {
					_, err = l.Post(ctx, batchOps[0])
					errs = []error{err}
				} else {
					_, errs, err = l.PostBatch(ctx, batchOps)
				}
				if err != nil && batch > 1 {
					failed.Add(int64(batch))
					continue
				}
				for _, e := range errs {
					if e != nil {
						failed.Add(1)
					} else {
						ops.Add(1)
					}
				}
			}
		})
	}
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start)
	server, client := serverCPU()-serverCPU0, clientCPU()-clientCPU0
	rep, err := ledger.Verify(ctx, db)
	require.NoError(t, err)
	require.Empty(t, rep.Violations)
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(max(1, ops.Load())) }
	t.Logf("%d posters, %d op(s) per transaction: %d operations in %s = %.0f ops/s (%d failed); CPU per op: server %.0f µs, client %.0f µs; verify OK over %d lines",
		posters, batch, ops.Load(), elapsed.Round(time.Millisecond), float64(ops.Load())/elapsed.Seconds(), failed.Load(),
		perOp(server), perOp(client), rep.Lines)
}

// clientCPU is this process's CPU time.
func clientCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the CPU time of the local PostgreSQL processes, live and
// exited (exited backends count in the postmaster's children times), or 0
// where /proc cannot tell (another OS, a remote server).
func serverCPU() time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var ticks int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		stat := string(b)
		open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
		if open < 0 || end < 0 || !strings.HasPrefix(stat[open+1:end], "postgres") {
			continue
		}
		f := strings.Fields(stat[end+2:])
		// Fields after the name: utime, stime, cutime, cstime are 12-15 (1-based from state).
		for _, i := range []int{11, 12, 13, 14} {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
