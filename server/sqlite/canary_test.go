package sqlite_test

import (
	"testing"

	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storetest"
)

func TestCanaryStore(t *testing.T) {
	storetest.Canary(t, func(t *testing.T) storage.Store { return open(t) })
}
