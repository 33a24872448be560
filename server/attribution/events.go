package attribution

import (
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/outbox"
)

// events returns one event of each type for each app the chain names
// (publisher and advertiser), so that each receives its own webhooks. The
// data is xpromo.ChainEventData: the chain as GET /v1/chains/{chain_id}
// shows it, and the state it left (null for a refused claim recorded as
// rejected).
func events(c Chain, prev State, now time.Time, types ...xpromo.EventType) []outbox.Event {
	data := xpromo.ChainEventData{Chain: Wire(c)}
	if prev != "" {
		ps := xpromo.ChainState(prev)
		data.PreviousState = &ps
	}
	var out []outbox.Event
	seen := map[string]bool{}
	for _, app := range []string{c.PublisherAppID, c.AdvertiserAppID} {
		if app == "" || seen[app] {
			continue
		}
		seen[app] = true
		for _, typ := range types {
			out = append(out, outbox.New(app, typ, data, now))
		}
	}
	return out
}

// stateEvents announce a state change: chain.state_changed, plus
// chain.cleared when the chain cleared.
func stateEvents(c Chain, prev State, now time.Time) []outbox.Event {
	if c.State == StateCleared {
		return events(c, prev, now, xpromo.EventChainStateChanged, xpromo.EventChainCleared)
	}
	return events(c, prev, now, xpromo.EventChainStateChanged)
}

// rejectionEvents announce a rejection: chain.state_changed (when an
// existing chain was rejected) and chain.rejected. A refused claim's record
// names apps only when the server's MAC vouched for them.
func rejectionEvents(c Chain, prev State, now time.Time) []outbox.Event {
	if prev == "" {
		return events(c, prev, now, xpromo.EventChainRejected)
	}
	return events(c, prev, now, xpromo.EventChainStateChanged, xpromo.EventChainRejected)
}
