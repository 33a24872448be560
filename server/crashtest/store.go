package crashtest

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/sqlite"
	"github.com/xpromo/xpromo/server/storage"
)

// The stores a run can crash.
const (
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
)

// freshDatabase creates an empty PostgreSQL database on the server of
// adminURL (whose user may CREATE DATABASE) and returns its URL and a
// function that drops it.
func freshDatabase(ctx context.Context, adminURL string) (dbURL string, drop func() error, err error) {
	if u, err := url.Parse(adminURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, fmt.Errorf("the PostgreSQL URL must be postgres://…, not %q", redact(adminURL))
	}
	dbURL, dropCtx, err := postgres.ScratchDatabase(ctx, adminURL, "xpromo_crashtest_")
	if err != nil {
		return "", nil, fmt.Errorf("on %s: %w", redact(adminURL), err)
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return dropCtx(ctx)
	}
	return dbURL, drop, nil
}

// redact drops a URL's password, for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// pendingPayouts opens the store of a stopped server and returns the apps
// among appIDs that have a payout still pending. No endpoint lists
// payouts, so this reads the store, through the same transaction interface
// as the server.
func pendingPayouts(ctx context.Context, s *server, appIDs []string) ([]string, error) {
	var st storage.Store
	var err error
	if s.dbURL != "" {
		st, err = postgres.Open(ctx, s.dbURL)
	} else {
		st, err = sqlite.Open(ctx, filepath.Join(s.dataDir, "xpromo.db"))
	}
	if err != nil {
		return nil, fmt.Errorf("opening the store to look for pending payouts: %w", err)
	}
	defer st.Close()
	var pending []string
	err = st.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		pending = pending[:0]
		for _, id := range appIDs {
			p, err := tx.PendingPayout(ctx, id)
			if err != nil {
				return err
			}
			if p {
				pending = append(pending, id)
			}
		}
		return nil
	})
	return pending, err
}

// ParseStores reads a comma-separated list of stores.
func ParseStores(s string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case StoreSQLite, StorePostgres:
			out = append(out, name)
		case "":
		default:
			return nil, fmt.Errorf("unknown store %q (want sqlite or postgres)", name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no store given (want sqlite, postgres or both)")
	}
	return out, nil
}
