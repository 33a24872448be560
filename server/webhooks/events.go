package webhooks

import (
	"context"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/outbox"
)

// Bounds of the events API.
const (
	DefaultEventLimit   = 100
	MaxEventLimit       = 1000
	MaxWait             = 30 * time.Second
	DefaultPollInterval = 250 * time.Millisecond

	DefaultAttemptLimit = 20
	MaxAttemptLimit     = 100
)

// EventParams select a page of events (xpromo.EventParams, as the API
// reads them).
type EventParams struct {
	Types  []xpromo.EventType
	Since  time.Time // zero: Retention ago
	Cursor string    // wins over Since
	Limit  int       // 0: DefaultEventLimit
	Wait   time.Duration
}

// ListEvents returns a page of the app's events, oldest first, from the
// cursor (or since; never earlier than Retention ago). With Wait and no
// event to return, it reads the store again every PollInterval until one
// arrives or Wait passes (then the page is empty): the store is read, not a
// notification of this process, so events written by any instance are seen.
func (s *Service) ListEvents(ctx context.Context, appID string, p EventParams) (xpromo.EventPage, error) {
	if len(p.Types) > len(xpromo.EventTypes) {
		e := apperr.New(apperr.InvalidEventType, "type is given %d times; there are %d event types", len(p.Types), len(xpromo.EventTypes))
		e.Field = "type"
		return xpromo.EventPage{}, e
	}
	for _, t := range p.Types {
		if !t.Valid() {
			e := apperr.New(apperr.InvalidEventType, "%q is not an event type (docs/webhooks.md lists them)", t)
			e.Field = "type"
			return xpromo.EventPage{}, e
		}
	}
	limit := p.Limit
	if limit == 0 {
		limit = DefaultEventLimit
	}
	if limit < 1 || limit > MaxEventLimit {
		e := apperr.New(apperr.InvalidLimit, "limit must be from 1 to %d", MaxEventLimit)
		e.Field = "limit"
		return xpromo.EventPage{}, e
	}
	if p.Wait < 0 || p.Wait > MaxWait {
		e := apperr.New(apperr.InvalidDuration, "wait must be from 0 to %d seconds", int(MaxWait.Seconds()))
		e.Field = "wait"
		return xpromo.EventPage{}, e
	}
	pos := Position{CreatedAt: p.Since}
	if p.Cursor != "" {
		var err error
		if pos, err = cursor.Decode(p.Cursor); err != nil {
			return xpromo.EventPage{}, err
		}
	}
	interval := s.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	var deadline <-chan time.Time
	if p.Wait > 0 {
		t := time.NewTimer(p.Wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		// The floor moves with the clock: a long poll never returns what
		// the purge may already have deleted.
		from := pos
		if floor := s.now().Add(-Retention); from.CreatedAt.Before(floor) {
			from = Position{CreatedAt: floor}
		}
		var evs []outbox.Event
		err := s.View(ctx, func(ctx context.Context, tx Tx) error {
			var err error
			evs, err = tx.AppEvents(ctx, EventQuery{AppID: appID, After: from, Types: p.Types, Limit: limit + 1})
			return err
		})
		if err != nil {
			return xpromo.EventPage{}, err
		}
		if len(evs) > 0 || deadline == nil {
			page := xpromo.EventPage{HasMore: len(evs) > limit}
			if page.HasMore {
				evs = evs[:limit]
			}
			for _, e := range evs {
				page.Events = append(page.Events, e.Wire())
			}
			next := from
			if n := len(evs); n > 0 {
				next = Position{CreatedAt: evs[n-1].CreatedAt, ID: evs[n-1].ID}
			} else if p.Cursor != "" {
				next = pos // repeat the cursor given
			}
			page.NextCursor = cursor.Encode(next)
			return page, nil
		}
		select {
		case <-ctx.Done():
			return xpromo.EventPage{}, ctx.Err()
		case <-deadline:
			deadline = nil // one last read, then answer
		case <-time.After(interval):
		}
	}
}

// Event reads one of the app's events (within Retention).
func (s *Service) Event(ctx context.Context, appID, id string) (xpromo.Event, error) {
	var ev outbox.Event
	var found bool
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		ev, found, err = tx.AppEvent(ctx, appID, id)
		return err
	})
	if err != nil {
		return xpromo.Event{}, err
	}
	if !found || ev.CreatedAt.Before(s.now().Add(-Retention)) {
		return xpromo.Event{}, apperr.New(apperr.NotFound, "event not found (events are kept %d days)", int(Retention.Hours()/24))
	}
	return ev.Wire(), nil
}
