package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/storage"
)

// Text PostgreSQL cannot store (a NUL, bytes that are not UTF-8) is the
// client's mistake: the store answers invalid_encoding (400), not a 500, if
// anything lets such text past the HTTP edge.
func TestTextTheDatabaseCannotHoldIsInvalidEncoding(t *testing.T) {
	db := open(t, pgtest.NewTestDatabase(t))
	ctx := context.Background()
	for _, id := range []string{"app_\x00", "app_\xff\xfe"} {
		err := db.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			_, _, err := tx.GetApp(ctx, id, false)
			return err
		})
		require.Error(t, err, "%q", id)
		assert.Equal(t, apperr.InvalidEncoding, apperr.Code(err), "%q: %v", id, err)
		assert.Equal(t, 400, apperr.HTTPStatus(err))
		var pe *pgconn.PgError
		assert.ErrorAs(t, err, &pe, "the driver's error stays reachable")
	}
}
