package postgres

import (
	"context"

	"github.com/xpromo/xpromo/server/storage"
)

// ExecIn runs sql in the storage.Tx of Update or View (tests).
func ExecIn(ctx context.Context, in storage.Tx, sql string, args ...any) error {
	_, err := in.(*tx).exec(ctx, sql, args...)
	return err
}
