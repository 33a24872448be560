package assembly_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// timeoutProvider is a processor that never answers a transfer.
type timeoutProvider struct{ payments.Provider }

func (timeoutProvider) Transfer(context.Context, payments.TransferRequest) (payments.TransferResult, error) {
	return payments.TransferResult{}, fmt.Errorf("no answer: %w", payments.ErrTransferUnknown)
}

// The server's recovery loop settles a payout its request left pending, on
// the server's (test) clock, and stops with its context.
func TestRunPayoutRecovery(t *testing.T) {
	store := storagetest.SQLite(t)
	ctx := context.Background()
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	srv, err := assembly.Build(assembly.Config{Now: func() time.Time { return start }}, store)
	if err != nil {
		t.Fatal(err)
	}
	err = store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertApp(ctx, apps.App{ID: "app_pub", Name: "Pub", Platform: xpromo.PlatformMac, BundleID: "com.example.pub",
			Domain: "example.com", DownloadURL: "https://example.com/pub.zip", ContactEmail: "dev@example.com",
			Status: xpromo.AppStatusLive, EarnMode: ledger.EarnCash, CreatedAt: start, UpdatedAt: start})
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &ledger.Ledger{Store: store, Now: srv.Clock.Now}
	hold := ledger.Hold{ID: "h1", Advertiser: "app_adv", Publisher: "app_pub", Amount: 10_000, ChainID: "chn_1"}
	for _, op := range []func() (ledger.Operation, error){
		func() (ledger.Operation, error) { return ledger.TopUp("topup:adv", "app_adv", 10_000, "") },
		func() (ledger.Operation, error) { return ledger.EscrowHold("hold:chn_1", hold) },
		func() (ledger.Operation, error) { return ledger.Clear("clear:chn_1", hold, ledger.EarnCash) },
	} {
		o, err := op()
		if err == nil {
			_, err = l.Post(ctx, o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	real := srv.Payments.Provider
	srv.Payments.Provider = timeoutProvider{real}
	if _, err := srv.Payments.Payout(ctx, "app_pub"); err == nil {
		t.Fatal("the payout did not stay pending")
	}
	srv.Payments.Provider = real
	if _, _, err := srv.Clock.Advance(context.Background(), 2*payments.DefaultPayoutGrace); err != nil {
		t.Fatal(err)
	}
	sent := func() bool {
		var pending bool
		err := store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			var err error
			pending, err = tx.PendingPayout(ctx, "app_pub")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return !pending
	}

	rctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		srv.RunPayoutRecovery(rctx, time.Hour) // the pass at start is the one that counts
		close(stopped)
	}()
	for deadline := time.Now().Add(10 * time.Second); !sent(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the payout is still pending after 10 s")
		}
	}
	cancel()
	<-stopped
	w, err := store.Account(ctx, ledger.Wallet("app_pub"))
	if err != nil {
		t.Fatal(err)
	}
	if w.Balance != 0 {
		t.Fatalf("the wallet holds %d after the payout", w.Balance)
	}
}
