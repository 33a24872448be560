package postgres

import (
	"context"
	"io/fs"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/xpromo/xpromo/server/storage"
)

// ExecIn runs sql in the storage.Tx of Update or View (tests).
func ExecIn(ctx context.Context, in storage.Tx, sql string, args ...any) error {
	_, err := in.(*tx).exec(ctx, sql, args...)
	return err
}

// RedoMigrations rolls the database's migrations back to version from and
// applies them again, as the login role (tests: a later migration's
// backfill rebuilds its rollups from the facts already written).
func RedoMigrations(ctx context.Context, db *DB, from int64) error {
	sqlDB := stdlib.OpenDB(*db.pool.Config().ConnConfig.Copy())
	defer sqlDB.Close()
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, sub)
	if err != nil {
		return err
	}
	if _, err := p.DownTo(ctx, from); err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// ReadPoolSize is the read pool's most connections (tests).
func (db *DB) ReadPoolSize() int32 { return db.readPool.Config().MaxConns }
