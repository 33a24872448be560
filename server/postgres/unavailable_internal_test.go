package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/xpromo/xpromo/server/apperr"
)

// A connection pgx had already closed (the primary's socket went away
// while it sat in the pool) is the database being unavailable, answered
// 503 and run again, not a 500: the failover run's sweep got
// "acquiring a connection: conn closed" after SIGKILL of the primary.
func TestConnClosedIsUnavailable(t *testing.T) {
	ctx := context.Background()
	err := wrap(fmt.Errorf("acquire: %w", pgconn.ErrConnClosed), "acquiring a connection")
	if c := unavailableClass(ctx, err, true); c != classConnection {
		t.Fatalf("conn closed on a gone connection: class %q, want %q", c, classConnection)
	}
	if u := unavailable(ctx, err, true, true); u == nil || !u.rerun || apperr.HTTPStatus(u) != 503 {
		t.Fatalf("unavailable(conn closed) = %v, want a re-runnable 503", u)
	}
	if c := unavailableClass(ctx, fmt.Errorf("some other failure"), true); c != "" {
		t.Fatalf("another error on a gone connection: class %q, want none", c)
	}
}
