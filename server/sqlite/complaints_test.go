package sqlite_test

import (
	"testing"

	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storetest"
)

func TestComplaintsStore(t *testing.T) {
	storetest.Complaints(t, func(t *testing.T) storage.Store { return open(t) })
}
