package sqlite_test

import (
	"testing"

	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storetest"
)

func TestAppsStore(t *testing.T) {
	storetest.Apps(t, func(t *testing.T) storage.Store { return open(t) })
}
