package attribution

import (
	"slices"
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
	return outbox.NewEach(chainApps(c), types, data, now)
}

// Events are the events that announce the chain's change from prev to its
// state at now: rejectionEvents for a rejection, stateEvents otherwise.
// They are what the claim and the sweep write; the history generator
// (loadgen.History) writes a year's with them.
func Events(c Chain, prev State, now time.Time) []outbox.Event {
	if c.State == StateRejected {
		return rejectionEvents(c, prev, now)
	}
	return stateEvents(c, prev, now)
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
// existing chain was rejected), chain.rejected and, when the reason is a
// fraud code, fraud.flagged. A refused claim's record names apps only when
// the server's MAC vouched for them (a record naming none announces
// nothing: there is no app to tell).
func rejectionEvents(c Chain, prev State, now time.Time) []outbox.Event {
	var out []outbox.Event
	if prev == "" {
		out = events(c, prev, now, xpromo.EventChainRejected)
	} else {
		out = events(c, prev, now, xpromo.EventChainStateChanged, xpromo.EventChainRejected)
	}
	if IsFraud(c.Reason) {
		out = append(out, fraudEvents(c, prev, now)...)
	}
	return out
}

// fraudEvents announce a fraud refusal, fraud.flagged, to each app the
// chain names: xpromo.FraudEventData, the reason with the chain.
func fraudEvents(c Chain, prev State, now time.Time) []outbox.Event {
	data := xpromo.FraudEventData{Reason: xpromo.ChainReason(c.Reason), Chain: Wire(c)}
	if prev != "" {
		ps := xpromo.ChainState(prev)
		data.PreviousState = &ps
	}
	return outbox.NewEach(chainApps(c), []xpromo.EventType{xpromo.EventFraudFlagged}, data, now)
}

// chainApps are the distinct apps a chain names: publisher, advertiser.
func chainApps(c Chain) []string {
	var out []string
	for _, app := range []string{c.PublisherAppID, c.AdvertiserAppID} {
		if app != "" && !slices.Contains(out, app) {
			out = append(out, app)
		}
	}
	return out
}
