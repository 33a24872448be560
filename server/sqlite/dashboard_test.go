package sqlite_test

import (
	"testing"

	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storetest"
)

func TestDashboardSessions(t *testing.T) {
	storetest.DashboardSessions(t, func(t *testing.T) storage.Store { return open(t) })
}
