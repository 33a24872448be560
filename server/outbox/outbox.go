// Package outbox is the transactional outbox: what happened to an app,
// written by the operation that made it happen, in that operation's
// transaction, so that an event exists exactly when its state change does.
// The webhook deliverer (server/webhooks) sends them and the events API
// lists them; docs/webhooks.md documents each type's data.
package outbox

import (
	"context"
	"encoding/json"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/ids"
)

// Event is one row of the outbox: one event for one app. An event that
// concerns two apps (a chain's) is written once for each, with its own id.
type Event struct {
	ID        string // evt_…
	Type      xpromo.EventType
	AppID     string
	Data      json.RawMessage // the type's data object (xpromo.ChainEventData, …)
	CreatedAt time.Time
}

// New returns an event of type typ for app, its data marshalled from data
// (one of the xpromo.*EventData types).
func New(app string, typ xpromo.EventType, data any, at time.Time) Event {
	return Event{ID: ids.New("evt"), Type: typ, AppID: app, Data: marshal(typ, data), CreatedAt: at}
}

// NewEach returns one event per app and type (apps outer, types inner), each
// with its own id, sharing one marshalling of data: the events of one change
// carry the same data, and a sweep writes thousands of them.
func NewEach(apps []string, types []xpromo.EventType, data any, at time.Time) []Event {
	if len(apps) == 0 || len(types) == 0 {
		return nil
	}
	raw := marshal(types[0], data)
	out := make([]Event, 0, len(apps)*len(types))
	for _, app := range apps {
		for _, typ := range types {
			out = append(out, Event{ID: ids.New("evt"), Type: typ, AppID: app, Data: raw, CreatedAt: at})
		}
	}
	return out
}

func marshal(typ xpromo.EventType, data any) json.RawMessage {
	raw, err := json.Marshal(data)
	if err != nil {
		// The data types hold strings, numbers and times: they always marshal.
		panic("outbox: marshalling " + string(typ) + ": " + err.Error())
	}
	return raw
}

// Wire is the event as the API and a webhook show it.
func (e Event) Wire() xpromo.Event {
	return xpromo.Event{ID: e.ID, Type: e.Type, AppID: e.AppID, CreatedAt: e.CreatedAt.UTC(), Data: e.Data}
}

// Writer appends events to the outbox in the caller's transaction: the Tx
// of every domain package that causes events embeds it.
type Writer interface {
	InsertOutbox(ctx context.Context, events []Event) error
}
