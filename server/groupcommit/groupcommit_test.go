package groupcommit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/groupcommit"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
	"github.com/xpromo/xpromo/server/txunit"
)

var at = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

// configurable is the stores' group commit setting.
type configurable interface {
	storage.Store
	SetGroupCommit(groupcommit.Config)
}

var errInjected = errors.New("injected failure after the unit's writes")

// op is unit i's ledger operation: a top-up, or a withdrawal (an
// adjustment down) that the wallet may not cover.
func op(t *testing.T, i int) (ledger.Operation, string, int64) {
	app := fmt.Sprintf("app-%d", i%4)
	key := fmt.Sprintf("unit-%d", i)
	amount := int64(10 + i%7)
	var o ledger.Operation
	var err error
	if i%3 == 2 {
		amount = -3 * amount
		o, err = ledger.Adjustment(key, app, amount, "withdrawal")
	} else {
		o, err = ledger.TopUp(key, app, amount, "top-up")
	}
	if err != nil {
		t.Fatal(err)
	}
	return o, app, amount
}

// TestUnitsExactlyOnce runs many concurrent units through the group commit
// of each store, some as plain store writes and some as requests' units of
// work (txunit), with failures injected inside units (after their ledger
// writes) and in the shared COMMIT. Each unit's effect must exist exactly
// when it was answered success, be readable by anyone as soon as it was,
// and the ledger must verify.
func TestUnitsExactlyOnce(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, raw storage.Store) {
		s := raw.(configurable)
		var rmu sync.Mutex
		rng := rand.New(rand.NewPCG(1, 2))
		chance := func(p float64) bool {
			rmu.Lock()
			defer rmu.Unlock()
			return rng.Float64() < p
		}
		var commits, failedCommits atomic.Int64
		s.SetGroupCommit(groupcommit.Config{MaxBatch: 16, BeforeCommit: func() error {
			commits.Add(1)
			if chance(0.2) {
				failedCommits.Add(1)
				return errors.New("injected commit failure")
			}
			return nil
		}})
		units := storage.Units(s)
		ctx := context.Background()

		const n = 240
		answers := make([]error, n)
		inject := make([]bool, n)
		for i := range inject {
			inject[i] = chance(0.2)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				o, _, _ := op(t, i)
				apply := func(ctx context.Context, tx storage.Tx) error {
					_, errs, err := ledger.Apply(ctx, tx, at, []ledger.Operation{o})
					if err != nil {
						return err
					}
					if errs[0] != nil {
						return errs[0]
					}
					if inject[i] {
						return errInjected
					}
					return nil
				}
				gctx := groupcommit.Allow(ctx)
				if i%2 == 0 {
					answers[i] = units.Update(gctx, apply)
				} else {
					answers[i] = runUnit(gctx, units, apply)
				}
				if answers[i] == nil {
					// Answered: committed, visible to every reader.
					if got := posted(t, s, o.Key); !got {
						t.Errorf("unit %d answered success but its operation is not committed", i)
					}
				}
			}()
		}
		close(start)
		wg.Wait()

		balances := map[string]int64{}
		for i := range n {
			o, app, amount := op(t, i)
			got := posted(t, s, o.Key)
			switch {
			case answers[i] == nil && !got:
				t.Errorf("unit %d: success answered, nothing committed", i)
			case answers[i] != nil && got:
				t.Errorf("unit %d: answered %v, yet committed", i, answers[i])
			case inject[i] && !errors.Is(answers[i], errInjected) && !apperr.Is(answers[i], apperr.InsufficientFunds):
				t.Errorf("unit %d: injected failure answered %v", i, answers[i])
			case answers[i] != nil && !inject[i] && !apperr.Is(answers[i], apperr.InsufficientFunds):
				t.Errorf("unit %d: unexpected failure %v", i, answers[i])
			}
			if got {
				balances[app] += amount
			}
		}
		for app, want := range balances {
			a, err := s.Account(ctx, ledger.Wallet(app))
			if err != nil {
				t.Fatal(err)
			}
			if a.Balance != want {
				t.Errorf("%s: balance %d, the committed units add up to %d", app, a.Balance, want)
			}
		}
		rep, err := ledger.Verify(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("ledger verify: %v", rep.Violations)
		}
		if commits.Load() >= int64(n) {
			t.Errorf("%d commits for %d units: no transaction was shared", commits.Load(), n)
		}
		t.Logf("%d units, %d shared commits (%d failed by injection)", n, commits.Load(), failedCommits.Load())
	})
}

// runUnit runs fn as a request's unit of work does (httpapi's runClaimed):
// the write joins the unit; the unit commits, or rolls back on failure, and
// runs again from the start when its store asks for that.
func runUnit(ctx context.Context, s storage.Store, fn func(ctx context.Context, tx storage.Tx) error) error {
	for attempt := 1; ; attempt++ {
		uctx, unit := txunit.Begin(ctx)
		err := s.Update(uctx, fn)
		var retry bool
		if err != nil {
			retry = unit.Rollback()
		} else {
			retry, err = unit.Commit()
		}
		if err == nil || !retry || attempt == 20 {
			return err
		}
	}
}

// posted reports whether key's operation is committed, read outside any
// transaction of the writers.
func posted(t *testing.T, s storage.Store, key string) bool {
	t.Helper()
	var found bool
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		ops, err := tx.FindOperations(ctx, []string{key})
		_, found = ops[key]
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
