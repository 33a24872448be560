package ledger_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/ledger"
)

// panicStore panics in its first transaction and fails the others with
// errNoStore: the group commit must turn the panic into the caller's error
// and keep serving posts.
type panicStore struct {
	ledger.Store
	calls atomic.Int32
}

var errNoStore = errors.New("no store")

func (s *panicStore) InTx(context.Context, func(context.Context, ledger.Tx) error) error {
	if s.calls.Add(1) == 1 {
		panic("boom")
	}
	return errNoStore
}

func TestGroupCommitSurvivesPanic(t *testing.T) {
	l := &ledger.Ledger{Store: &panicStore{}, Now: time.Now}
	op, err := ledger.TopUp("t1", "app", 100, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Post(context.Background(), op); err == nil || errors.Is(err, errNoStore) {
		t.Fatalf("first post: got %v, want the panic as an error", err)
	}
	if _, err := l.Post(context.Background(), op); !errors.Is(err, errNoStore) {
		t.Fatalf("second post: got %v, want the store's error (the committer still runs)", err)
	}
}

// A post whose context is done before its batch starts is never posted.
func TestGroupCommitCanceledBeforeBatch(t *testing.T) {
	s := &panicStore{}
	s.calls.Store(1) // no panic: any transaction fails with errNoStore
	l := &ledger.Ledger{Store: s, Now: time.Now}
	op, _ := ledger.TopUp("t1", "app", 100, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Post(ctx, op); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if n := s.calls.Load(); n != 1 {
		t.Fatalf("%d transactions started, want none", n-1)
	}
}
