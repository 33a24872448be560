package postgres_test

import (
	"testing"

	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storetest"
)

func TestRetention(t *testing.T) {
	storetest.Retention(t, func(t *testing.T) storage.Store { return open(t, pgtest.NewTestDatabase(t)) })
}
