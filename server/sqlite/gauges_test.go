package sqlite_test

import (
	"testing"

	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storetest"
)

func TestGaugesStore(t *testing.T) {
	storetest.Gauges(t, func(t *testing.T) storage.Store { return open(t) })
}
