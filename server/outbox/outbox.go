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

// Event is one event for one app, as every reader sees it. A writer may
// carry the same event for a second app in Also: a chain's events concern
// its publisher and its advertiser, and are stored as one outbox row for
// both (a sweep writes thousands of them), each app with its own event id.
type Event struct {
	ID        string // evt_…
	Type      xpromo.EventType
	AppID     string
	Data      json.RawMessage // the type's data object (xpromo.ChainEventData, …)
	CreatedAt time.Time
	// Also is the same event (type, data, time) for a second app, with its
	// own id; zero when the event is for one app. Only writers set it:
	// readers return each app's event on its own (Split).
	Also Recipient
}

// Recipient is a second app's copy of an event: its id and the app.
type Recipient struct {
	ID    string // evt_…
	AppID string
}

// New returns an event of type typ for app, its data marshalled from data
// (one of the xpromo.*EventData types).
func New(app string, typ xpromo.EventType, data any, at time.Time) Event {
	return Event{ID: ids.New("evt"), Type: typ, AppID: app, Data: marshal(typ, data), CreatedAt: at}
}

// NewEach returns, for each type, the event for each app (at most two: the
// second rides in Also), each app's with its own id, sharing one
// marshalling of data: the events of one change carry the same data. The
// ids are made type by type, so each app's events sort by (created_at, id)
// in the order of types.
func NewEach(apps []string, types []xpromo.EventType, data any, at time.Time) []Event {
	if len(apps) == 0 || len(types) == 0 {
		return nil
	}
	if len(apps) > 2 {
		panic("outbox: an event row carries at most two apps")
	}
	raw := marshal(types[0], data)
	out := make([]Event, 0, len(types))
	for _, typ := range types {
		e := Event{ID: ids.New("evt"), Type: typ, AppID: apps[0], Data: raw, CreatedAt: at}
		if len(apps) == 2 {
			e.Also = Recipient{ID: ids.New("evt"), AppID: apps[1]}
		}
		out = append(out, e)
	}
	return out
}

// Split returns the event of each app e names: itself, then the Also
// app's (its id and app, the same type, data and time), neither with Also.
func (e Event) Split() []Event {
	one := e
	one.Also = Recipient{}
	if e.Also.AppID == "" {
		return []Event{one}
	}
	two := one
	two.ID, two.AppID = e.Also.ID, e.Also.AppID
	return []Event{one, two}
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

// Writer appends events to the outbox in the caller's transaction, one row
// per Event (its Also app's event included): the Tx of every domain package
// that causes events embeds it.
type Writer interface {
	InsertOutbox(ctx context.Context, events []Event) error
}
