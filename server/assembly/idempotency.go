package assembly

import (
	"context"
	"log/slog"
	"time"

	"github.com/xpromo/xpromo/server/dashboard/session"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/storage"
)

// idempotencyService keeps Idempotency-Keys in the store, its claims
// recording cfg.Instance as their holder.
func idempotencyService(cfg Config, store storage.Store) (*idempotency.Service, error) {
	return &idempotency.Service{
		Update: storage.Updater[idempotency.Tx](store),
		Now:    cfg.Now,
		Holder: cfg.Instance,
	}, nil
}

// HoldInstance draws this process's instance id and holds it in store
// (storage.InstanceHolder: SQLite locks the database file for this process,
// PostgreSQL holds an advisory lock on a connection of its own), so that once
// the process dies, whatever kills it, other processes know its idempotency
// claims were abandoned. Pass id as Config.Instance; call release after the
// last request, at shutdown. A store that cannot tell answers "" and a no-op
// release.
func HoldInstance(ctx context.Context, store storage.Store) (id string, release func() error, err error) {
	h, ok := store.(storage.InstanceHolder)
	if !ok {
		return "", func() error { return nil }, nil
	}
	id = ids.New("inst")
	release, err = h.HoldInstance(ctx, id)
	if err != nil {
		return "", nil, err
	}
	return id, release, nil
}

// DefaultIdempotencyPurgeInterval is how often RunIdempotencyPurge runs.
const DefaultIdempotencyPurgeInterval = time.Hour

// RunIdempotencyPurge deletes expired Idempotency-Keys now and then every
// interval (DefaultIdempotencyPurgeInterval if 0) until ctx ends, and with
// them the dashboard's ended sessions and expired sign-in links. Expired
// keys and sessions are ignored anyway, so this only reclaims space;
// failures are logged and retried at the next tick. Several instances may
// run it at once.
func RunIdempotencyPurge(ctx context.Context, cfg Config, store storage.Store, interval time.Duration) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if interval <= 0 {
		interval = DefaultIdempotencyPurgeInterval
	}
	svc, _ := idempotencyService(cfg, store)
	sessions := &session.Service{Update: session.Txer(storage.Updater[session.Tx](store)), Now: cfg.Now}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		n, err := svc.Purge(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			cfg.Logger.Warn("purging expired idempotency keys", slog.Int("deleted", n), slog.String("error", err.Error()))
		case n > 0:
			cfg.Logger.Info("purged expired idempotency keys", slog.Int("deleted", n))
		}
		n, err = sessions.Purge(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			cfg.Logger.Warn("purging ended dashboard sessions", slog.String("error", err.Error()))
		case n > 0:
			cfg.Logger.Info("purged ended dashboard sessions and sign-in links", slog.Int("deleted", n))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
