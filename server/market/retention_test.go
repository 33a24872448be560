package market_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/market"
)

// TestHoldStatsRetention: charged / resolved, with the holds refunded
// because their publisher was suspended for fraud counted neither way; 0
// while nothing else is resolved.
func TestHoldStatsRetention(t *testing.T) {
	for _, c := range []struct {
		name string
		hs   market.HoldStats
		want float64
	}{
		{"nothing resolved", market.HoldStats{Opened: 3}, 0},
		{"charged and released", market.HoldStats{Opened: 5, Resolved: 4, Charged: 3}, 0.75},
		{"publisher_suspended left out", market.HoldStats{Opened: 30, Resolved: 30, Charged: 10, PublisherSuspended: 20}, 1},
		{"not_activated still count", market.HoldStats{Opened: 46, Resolved: 46, Charged: 10, PublisherSuspended: 20}, 10.0 / 26},
		{"only publisher_suspended", market.HoldStats{Opened: 2, Resolved: 2, PublisherSuspended: 2}, 0},
	} {
		assert.Equal(t, c.want, c.hs.Retention(), c.name)
	}
}
