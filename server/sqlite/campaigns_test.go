package sqlite_test

import (
	"testing"

	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storetest"
)

func TestCampaignStore(t *testing.T) {
	storetest.Campaigns(t, func(t *testing.T) storage.Store { return open(t) })
}
