package sqlite

import (
	"context"

	"github.com/pressly/goose/v3"
)

// RedoMigrations rolls the database's migrations back to version from and
// applies them again on the writer (tests: a later migration's backfill
// rebuilds its rollups from the facts already written).
func RedoMigrations(ctx context.Context, db *DB, from int64) error {
	p, err := goose.NewProvider(goose.DialectSQLite3, db.writer, mustSub(migrations, "migrations"))
	if err != nil {
		return err
	}
	if _, err := p.DownTo(ctx, from); err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}
