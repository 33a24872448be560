package txunit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/xpromo/xpromo/server/txunit"
)

// fakeTxn records how it was ended; conflict makes a failed end retryable.
type fakeTxn struct {
	ended    int
	cause    error
	conflict bool
	commit   error
}

func (f *fakeTxn) End(cause error) (bool, error) {
	f.ended++
	f.cause = cause
	if cause != nil {
		return f.conflict, nil
	}
	return false, f.commit
}

func open(t *fakeTxn) func() (txunit.Txn, error) {
	return func() (txunit.Txn, error) { return t, nil }
}

func TestAfterCommit(t *testing.T) {
	var ran []string
	txunit.AfterCommit(context.Background(), func() { ran = append(ran, "no unit") })

	ctx, u := txunit.Begin(context.Background())
	txn := &fakeTxn{}
	if _, err := u.Join(open(txn)); err != nil {
		t.Fatal(err)
	}
	txunit.AfterCommit(ctx, func() { ran = append(ran, "a") })
	txunit.AfterCommit(txunit.Detached(ctx), func() { ran = append(ran, "detached") })
	txunit.AfterCommit(ctx, func() { ran = append(ran, "b") })
	if len(ran) != 2 || ran[1] != "detached" {
		t.Fatalf("before the commit: %v", ran)
	}
	if retry, err := u.Commit(); retry || err != nil || txn.ended != 1 || txn.cause != nil {
		t.Fatalf("Commit = %v, %v; txn %+v", retry, err, txn)
	}
	if got := ran[2:]; len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("after the commit: %v", ran)
	}
	if txunit.From(ctx) != nil {
		t.Fatal("an ended unit is still joined")
	}
	txunit.AfterCommit(ctx, func() { ran = append(ran, "after") })
	if ran[len(ran)-1] != "after" {
		t.Fatal("a hook after the end did not run at once")
	}
}

func TestRollbackDropsHooks(t *testing.T) {
	ctx, u := txunit.Begin(context.Background())
	txn := &fakeTxn{}
	u.Join(open(txn))
	ran := false
	txunit.AfterCommit(ctx, func() { ran = true })
	if u.Rollback() || ran || txn.ended != 1 || txn.cause == nil {
		t.Fatalf("rollback: hook ran %v, txn %+v", ran, txn)
	}
	if _, err := u.Commit(); !errors.Is(err, txunit.ErrEnded) {
		t.Fatalf("Commit after Rollback = %v", err)
	}
}

func TestFailedUnit(t *testing.T) {
	for _, conflict := range []bool{false, true} {
		ctx, u := txunit.Begin(context.Background())
		txn := &fakeTxn{conflict: conflict}
		u.Join(open(txn))
		if !txunit.Holding(ctx) || !txunit.Holding(txunit.Detached(ctx)) || txunit.From(txunit.Detached(ctx)) != nil {
			t.Fatal("Holding/Detached")
		}
		boom := errors.New("boom")
		u.Fail(boom)
		u.Fail(errors.New("later"))
		if _, err := u.Join(open(&fakeTxn{})); !errors.Is(err, boom) {
			t.Fatalf("Join after a failure = %v", err)
		}
		ran := false
		txunit.AfterCommit(ctx, func() { ran = true })
		retry, err := u.Commit()
		if !errors.Is(err, boom) || retry != conflict || ran || !errors.Is(txn.cause, boom) {
			t.Fatalf("Commit of a failed unit = %v, %v (hook ran %v, txn %+v)", retry, err, ran, txn)
		}
		if txunit.Holding(ctx) {
			t.Fatal("an ended unit holds its transaction")
		}
	}
}

func TestFailedCommitRunsNoHooks(t *testing.T) {
	ctx, u := txunit.Begin(context.Background())
	u.Join(open(&fakeTxn{commit: errors.New("disk full")}))
	ran := false
	txunit.AfterCommit(ctx, func() { ran = true })
	if _, err := u.Commit(); err == nil || ran {
		t.Fatalf("Commit = %v, hook ran %v", err, ran)
	}
}

// A unit that never wrote commits nothing and still runs its hooks.
func TestUnitWithoutWrites(t *testing.T) {
	ctx, u := txunit.Begin(context.Background())
	ran := false
	txunit.AfterCommit(ctx, func() { ran = true })
	if txunit.Holding(ctx) || u.Txn() != nil {
		t.Fatal("a unit without writes holds a transaction")
	}
	if _, err := u.Commit(); err != nil || !ran {
		t.Fatalf("Commit = %v, hook ran %v", err, ran)
	}
}
