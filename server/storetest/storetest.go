// Package storetest is the one test suite every store runs: the sqlite and
// postgres packages call Run from their own tests, so both backends are held to
// exactly the same behaviour.
package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/ledger"
)

// Harness is a fresh, empty store plus raw access to its database.
type Harness struct {
	Store ledger.Store
	// Exec runs a statement the way the application's own connections would
	// (same role and settings). Append-only tables must refuse UPDATE/DELETE.
	Exec func(ctx context.Context, sql string) error
	// Tamper runs a statement with the database's append-only protections
	// lifted, as someone with owner or file access could. Verify must notice.
	Tamper func(ctx context.Context, sql string) error
}

// Run runs the whole suite; newHarness must return an empty store each call.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Run("TopUpAndRead", func(t *testing.T) { testTopUpAndRead(t, newHarness(t)) })
	t.Run("IdempotentReplay", func(t *testing.T) { testIdempotentReplay(t, newHarness(t)) })
	t.Run("InsufficientFundsWritesNothing", func(t *testing.T) { testInsufficientFunds(t, newHarness(t)) })
	t.Run("EscrowClearCash", func(t *testing.T) { testEscrowClear(t, newHarness(t), ledger.EarnCash) })
	t.Run("EscrowClearCredits", func(t *testing.T) { testEscrowClear(t, newHarness(t), ledger.EarnCredits) })
	t.Run("EscrowReleaseAndResolveOnce", func(t *testing.T) { testEscrowRelease(t, newHarness(t)) })
	t.Run("ClawbackMayOverdraw", func(t *testing.T) { testClawback(t, newHarness(t)) })
	t.Run("PayoutAndAdjustment", func(t *testing.T) { testPayoutAndAdjustment(t, newHarness(t)) })
	t.Run("ProcessorAdjustmentMayOverdraw", func(t *testing.T) { testProcessorAdjustment(t, newHarness(t)) })
	t.Run("BatchPerOperationOutcome", func(t *testing.T) { testBatch(t, newHarness(t)) })
	t.Run("LinesQuery", func(t *testing.T) { testLinesQuery(t, newHarness(t)) })
	t.Run("LinePagesInTimeOrder", func(t *testing.T) { testLinePagesInTimeOrder(t, newHarness(t)) })
	t.Run("AppendOnly", func(t *testing.T) { testAppendOnly(t, newHarness(t)) })
	t.Run("VerifyDetectsTampering", func(t *testing.T) { testVerifyDetectsTampering(t, newHarness(t)) })
	t.Run("ShardedPlatformVerify", func(t *testing.T) { testShardedPlatformVerify(t, newHarness(t)) })
	t.Run("VerifyOrphanLines", func(t *testing.T) { testVerifyOrphanLines(t, newHarness(t)) })
	t.Run("ConcurrentReplayPostsOnce", func(t *testing.T) { testConcurrentReplay(t, newHarness(t)) })
	t.Run("ConcurrentRandomOperations", func(t *testing.T) { testConcurrentRandom(t, newHarness(t)) })
	t.Run("GroupCommitFailsAlone", func(t *testing.T) { testGroupCommitFailsAlone(t, newHarness(t)) })
	t.Run("GroupCommitTransactionFailure", func(t *testing.T) { testGroupCommitTransactionFailure(t, newHarness(t)) })
	t.Run("GroupCommitConcurrentBatches", func(t *testing.T) { testGroupCommitConcurrentBatches(t, newHarness(t)) })
}

// newLedger is a ledger on the harness's store whose clock the test moves by
// hand, starting at 21 Nov 2026 09:00 UTC.
func newLedger(h Harness) (*ledger.Ledger, *clocktest.Clock) {
	c := clocktest.New(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))
	return &ledger.Ledger{Store: h.Store, Now: c.Now}, c
}

// must returns v, and panics (failing the test run loudly) on err. Go does
// not allow f(t, g()) for a two-result g, hence no testing.TB here.
func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("storetest: unexpected error: %v", err))
	}
	return v
}

// poster returns a function that posts what an operation builder returns,
// failing the test on any error: p(ledger.TopUp(...)).
func poster(t testing.TB, l *ledger.Ledger) func(ledger.Operation, error) ledger.Result {
	return func(op ledger.Operation, err error) ledger.Result {
		t.Helper()
		require.NoError(t, err)
		return must(l.Post(context.Background(), op))
	}
}

// opOf returns a function that unwraps an operation builder's result.
func opOf(t testing.TB) func(ledger.Operation, error) ledger.Operation {
	return func(op ledger.Operation, err error) ledger.Operation {
		t.Helper()
		require.NoError(t, err)
		return op
	}
}

func verifyOK(t testing.TB, s ledger.Store) ledger.Report {
	t.Helper()
	rep := must(ledger.Verify(context.Background(), s))
	require.Empty(t, rep.Violations, "ledger verify must pass")
	return rep
}

// view is a line reduced to what the API shows, for exact comparisons.
type view struct {
	Type         ledger.LineType
	Amount       int64
	BalanceAfter int64
	Counterparty string
	ChainID      string
}

func walletView(t testing.TB, s ledger.Store, app string) []view {
	t.Helper()
	lines := must(s.Lines(context.Background(), ledger.Wallet(app), ledger.LineQuery{}))
	out := make([]view, 0, len(lines))
	for _, l := range lines {
		out = append(out, view{l.Type, l.Amount, l.BalanceAfter, l.Counterparty, l.ChainID})
	}
	return out
}
