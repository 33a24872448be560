package assembly_test

import (
	"context"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// The purge loop deletes expired keys and stops with its context.
func TestRunIdempotencyPurge(t *testing.T) {
	store := storagetest.SQLite(t)
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	svc := &idempotency.Service{Update: storage.Updater[idempotency.Tx](store), Now: func() time.Time { return start }}
	claim, _, err := svc.Begin(context.Background(), "app:a", "k", idempotency.Fingerprint("POST", "/v1/x", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Finish(context.Background(), claim, idempotency.Response{Status: 201}); err != nil {
		t.Fatal(err)
	}
	stored := func() bool {
		var found bool
		err := store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			var err error
			_, found, err = tx.LockIdempotencyKey(ctx, "app:a", idempotency.StoredKey("k"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	if !stored() {
		t.Fatal("the key was not stored")
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	later := func() time.Time { return start.Add(idempotency.DefaultTTL) }
	go func() {
		assembly.RunIdempotencyPurge(ctx, assembly.Config{Now: later}, store, time.Millisecond)
		close(stopped)
	}()
	for deadline := time.Now().Add(10 * time.Second); stored(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the expired key is still stored after 10 s of purging")
		}
	}
	cancel()
	<-stopped
}
