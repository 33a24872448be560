package attribution

import (
	"encoding/json"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/ids"
)

// EventPayload is the JSON payload of a chain event (docs/attribution.md):
// the event's kind, the chain as GET /v1/chains/{chain_id} shows it, and
// the state it left ("" for a refused claim recorded as rejected).
type EventPayload struct {
	Type          string       `json:"type"`
	PreviousState string       `json:"previous_state"`
	Chain         xpromo.Chain `json:"chain"`
	CreatedAt     time.Time    `json:"created_at"`
}

// events returns one event of each kind for each app the chain names
// (publisher and advertiser), so that each receives its own webhooks.
func events(c Chain, prev State, now time.Time, kinds ...string) []Event {
	var out []Event
	seen := map[string]bool{}
	for _, app := range []string{c.PublisherAppID, c.AdvertiserAppID} {
		if app == "" || seen[app] {
			continue
		}
		seen[app] = true
		for _, kind := range kinds {
			payload, err := json.Marshal(EventPayload{Type: kind, PreviousState: string(prev), Chain: Wire(c), CreatedAt: now})
			if err != nil {
				panic(err) // plain strings, numbers and times always marshal
			}
			out = append(out, Event{ID: ids.New("evt"), Kind: kind, AppID: app, Payload: payload, CreatedAt: now})
		}
	}
	return out
}

// stateEvents announce a state change: chain.state_changed, plus
// chain.cleared when the chain cleared.
func stateEvents(c Chain, prev State, now time.Time) []Event {
	if c.State == StateCleared {
		return events(c, prev, now, EventStateChanged, EventCleared)
	}
	return events(c, prev, now, EventStateChanged)
}

// rejectionEvents announce a rejection: chain.state_changed (when an
// existing chain was rejected) and chain.rejected. A refused claim's record
// names apps only when the server's MAC vouched for them.
func rejectionEvents(c Chain, prev State, now time.Time) []Event {
	if prev == "" {
		return events(c, prev, now, EventRejected)
	}
	return events(c, prev, now, EventStateChanged, EventRejected)
}
