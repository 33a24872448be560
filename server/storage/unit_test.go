package storage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
	"github.com/xpromo/xpromo/server/txunit"
)

var at = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// topUp posts a top-up of app's wallet under key, through Update.
func topUp(ctx context.Context, s storage.Store, key, app string) error {
	return s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		op, err := ledger.TopUp(key, app, 100, "unit test")
		if err != nil {
			return err
		}
		_, errs, err := ledger.Apply(ctx, tx, at, []ledger.Operation{op})
		if err != nil {
			return err
		}
		return errs[0]
	})
}

// prepare runs fn in units until one does not conflict, and rolls that one
// back: the accounts fn posts to exist then (PostgreSQL creates missing
// accounts between two runs of a transaction, which in a unit means two runs
// of the unit), so that the test's unit runs once.
func prepare(t *testing.T, s storage.Store, fn func(ctx context.Context) error) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ctx, unit := txunit.Begin(context.Background())
		err := fn(ctx)
		retry := unit.Rollback()
		if err == nil {
			return
		}
		if !retry || attempt == 3 {
			t.Fatalf("preparing, attempt %d: %v", attempt, err)
		}
	}
}

// seen returns which of keys ctx's View finds posted.
func seen(t *testing.T, ctx context.Context, s storage.Store, keys ...string) []string {
	t.Helper()
	var out []string
	err := s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		found, err := tx.FindOperations(ctx, keys)
		for _, k := range keys {
			if _, ok := found[k]; ok {
				out = append(out, k)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// balance is the committed balance of app's wallet.
func balance(t *testing.T, s storage.Store, app string) int64 {
	t.Helper()
	a, err := s.Account(context.Background(), ledger.Wallet(app))
	if err != nil {
		t.Fatal(err)
	}
	return a.Balance
}

// Writes in a unit join one transaction: the unit reads its own writes,
// nobody else sees them before the commit, and after it both are there,
// with the AfterCommit hooks run then and only then.
func TestUnitCommitsItsWritesTogether(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, raw storage.Store) {
		s := storage.Units(raw)
		bg := context.Background()
		if err := topUp(bg, s, "before", "app_a"); err != nil {
			t.Fatal(err)
		}
		prepare(t, s, func(ctx context.Context) error {
			return errors.Join(topUp(ctx, s, "one", "app_a"), topUp(ctx, s, "two", "app_a"))
		})
		ctx, unit := txunit.Begin(bg)
		t.Cleanup(func() { unit.Rollback() }) // when the test fails before the commit
		hooks := 0
		txunit.AfterCommit(ctx, func() { hooks++ })
		for _, k := range []string{"one", "two"} {
			if err := topUp(ctx, s, k, "app_a"); err != nil {
				t.Fatal(err)
			}
		}
		if got := seen(t, ctx, s, "one", "two"); len(got) != 2 {
			t.Fatalf("the unit reads %v of its own writes, want both", got)
		}
		if got := seen(t, bg, s, "one", "two"); len(got) != 0 {
			t.Fatalf("outside the unit %v are visible before the commit", got)
		}
		if b := balance(t, s, "app_a"); b != 100 || hooks != 0 {
			t.Fatalf("before the commit: balance %d, %d hooks run; want 100 and 0", b, hooks)
		}
		if retry, err := unit.Commit(); err != nil || retry {
			t.Fatalf("Commit = %v, %v", retry, err)
		}
		if got := seen(t, bg, s, "one", "two"); len(got) != 2 {
			t.Fatalf("after the commit %v are visible, want both", got)
		}
		if b := balance(t, s, "app_a"); b != 300 || hooks != 1 {
			t.Fatalf("after the commit: balance %d, %d hooks run; want 300 and 1", b, hooks)
		}
		// Ended, the unit no longer captures transactions or hooks.
		txunit.AfterCommit(ctx, func() { hooks++ })
		if err := topUp(ctx, s, "after", "app_a"); err != nil || hooks != 2 || balance(t, s, "app_a") != 400 {
			t.Fatalf("after the unit: %v, %d hooks, balance %d", err, hooks, balance(t, s, "app_a"))
		}
	})
}

// A unit that rolls back leaves nothing: not its writes, not its hooks.
func TestUnitRollbackLeavesNothing(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, raw storage.Store) {
		s := storage.Units(raw)
		bg := context.Background()
		if err := topUp(bg, s, "before", "app_a"); err != nil {
			t.Fatal(err)
		}
		prepare(t, s, func(ctx context.Context) error { return topUp(ctx, s, "one", "app_a") })
		ctx, unit := txunit.Begin(bg)
		defer unit.Rollback()
		ran := false
		if err := topUp(ctx, s, "one", "app_a"); err != nil {
			t.Fatal(err)
		}
		txunit.AfterCommit(ctx, func() { ran = true })
		if retry := unit.Rollback(); retry {
			t.Fatal("a plain rollback reported a conflict")
		}
		if got := seen(t, bg, s, "one"); len(got) != 0 || ran || balance(t, s, "app_a") != 100 {
			t.Fatalf("after the rollback: %v posted, hook ran %v, balance %d", got, ran, balance(t, s, "app_a"))
		}
	})
}

// A write that fails fails the unit: later writes in it are refused, and
// the unit rolls back everything, the writes that succeeded before too.
// Only a conflict says "run it again".
func TestUnitFailedWrite(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, raw storage.Store) {
		s := storage.Units(raw)
		bg := context.Background()
		if err := topUp(bg, s, "before", "app_a"); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			fail  error
			retry bool
		}{
			{apperr.New(apperr.NotFound, "no such thing"), false},
			{fmt.Errorf("lost a race: %w", ledger.ErrConflict), true},
		} {
			prepare(t, s, func(ctx context.Context) error { return topUp(ctx, s, "ok", "app_a") })
			ctx, unit := txunit.Begin(bg)
			defer unit.Rollback()
			if err := topUp(ctx, s, "ok", "app_a"); err != nil {
				t.Fatal(err)
			}
			err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return c.fail })
			if !errors.Is(err, c.fail) || !errors.Is(unit.Err(), c.fail) {
				t.Fatalf("Update = %v, unit.Err = %v; want %v", err, unit.Err(), c.fail)
			}
			if err := topUp(ctx, s, "later", "app_a"); !errors.Is(err, c.fail) {
				t.Fatalf("a write after the failure: %v, want the failure", err)
			}
			if retry, err := unit.Commit(); !errors.Is(err, c.fail) || retry != c.retry {
				t.Fatalf("Commit of a failed unit = %v, %v; want %v, %v", retry, err, c.retry, c.fail)
			}
			if got := seen(t, bg, s, "ok", "later"); len(got) != 0 {
				t.Fatalf("%v posted by a failed unit", got)
			}
		}
	})
}

// Inside a unit the store cannot retry a conflicting transaction alone; the
// unit's owner runs the whole unit again. On PostgreSQL a first posting to
// a new account is such a conflict (the accounts are created between the
// runs); the second run then succeeds.
func TestUnitRunsAgainAfterAConflict(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, raw storage.Store) {
		s := storage.Units(raw)
		bg := context.Background()
		for attempt := 1; ; attempt++ {
			ctx, unit := txunit.Begin(bg)
			defer unit.Rollback()
			if err := topUp(ctx, s, "first", "app_new"); err != nil {
				if !unit.Rollback() || attempt == 3 {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
				continue
			}
			if retry, err := unit.Commit(); err != nil {
				t.Fatalf("Commit = %v, %v", retry, err)
			}
			break
		}
		if b := balance(t, s, "app_new"); b != 100 {
			t.Fatalf("balance %d, want 100", b)
		}
	})
}

// A detached transaction commits on its own, whatever the unit does; once
// the unit holds its transaction, a detached write is refused rather than
// left waiting for the unit (SQLite's one writer, PostgreSQL's row locks).
func TestUnitDetached(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, raw storage.Store) {
		s := storage.Units(raw)
		bg := context.Background()
		if err := topUp(bg, s, "before", "app_a"); err != nil {
			t.Fatal(err)
		}
		prepare(t, s, func(ctx context.Context) error { return topUp(ctx, s, "joined", "app_a") })
		ctx, unit := txunit.Begin(bg)
		defer unit.Rollback()
		if err := topUp(txunit.Detached(ctx), s, "detached", "app_a"); err != nil {
			t.Fatal(err)
		}
		if err := topUp(ctx, s, "joined", "app_a"); err != nil {
			t.Fatal(err)
		}
		if err := topUp(txunit.Detached(ctx), s, "too late", "app_a"); err == nil {
			t.Fatal("a detached write started while the unit held its transaction")
		}
		unit.Rollback()
		if got := seen(t, bg, s, "detached", "joined", "too late"); len(got) != 1 || got[0] != "detached" {
			t.Fatalf("posted: %v, want only the detached write", got)
		}
	})
}
