package outbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/outbox"
)

// TestNewEachTwoApps: one event per type carries both apps, each app's
// with its own id, and each app's ids sort in the order of the types.
func TestNewEachTwoApps(t *testing.T) {
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	evs := outbox.NewEach([]string{"app_p", "app_a"}, []xpromo.EventType{xpromo.EventChainStateChanged, xpromo.EventChainCleared}, map[string]int{"n": 1}, at)
	require.Len(t, evs, 2)
	var p, a []outbox.Event
	for _, e := range evs {
		split := e.Split()
		require.Len(t, split, 2)
		p, a = append(p, split[0]), append(a, split[1])
	}
	for i, typ := range []xpromo.EventType{xpromo.EventChainStateChanged, xpromo.EventChainCleared} {
		assert.Equal(t, outbox.Event{ID: evs[i].ID, Type: typ, AppID: "app_p", Data: evs[i].Data, CreatedAt: at}, p[i])
		assert.Equal(t, outbox.Event{ID: evs[i].Also.ID, Type: typ, AppID: "app_a", Data: evs[i].Data, CreatedAt: at}, a[i])
		assert.NotEqual(t, p[i].ID, a[i].ID)
		assert.JSONEq(t, `{"n":1}`, string(a[i].Data))
	}
	assert.Less(t, p[0].ID, p[1].ID, "each app's events in the order of the types")
	assert.Less(t, a[0].ID, a[1].ID, "each app's events in the order of the types")

	one := outbox.NewEach([]string{"app_p"}, []xpromo.EventType{xpromo.EventChainRejected}, nil, at)
	require.Len(t, one, 1)
	assert.Equal(t, outbox.Recipient{}, one[0].Also)
	assert.Equal(t, []outbox.Event{one[0]}, one[0].Split())
	assert.Nil(t, outbox.NewEach(nil, []xpromo.EventType{xpromo.EventChainRejected}, nil, at))
}
