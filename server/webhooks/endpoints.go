package webhooks

import (
	"context"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/outbound"
)

// URLPolicy is what an endpoint's URL may be. It mirrors the options of
// the client that delivers (Options), so that a URL accepted here is one
// the client may try.
type URLPolicy struct {
	// Options are the delivering client's: RequireHTTPS (live mode) refuses
	// http URLs, TestOnlyAllowLoopback admits 127.0.0.1 and ::1 (and
	// "localhost") on any port.
	Options outbound.Options
}

// CheckURL validates an endpoint URL: absolute, http(s) (https only when
// required), a host, no user information, no fragment, at most
// MaxURLLength bytes. A host that is an IP literal must be one the client
// may connect to (webhook_url_forbidden); host names are checked when each
// delivery dials, by the client.
func (p URLPolicy) CheckURL(raw string) error {
	bad := func(format string, args ...any) error {
		e := apperr.New(apperr.InvalidURL, format, args...)
		e.Field = "url"
		return e
	}
	if raw == "" {
		e := apperr.New(apperr.MissingField, "url is required")
		e.Field = "url"
		return e
	}
	if len(raw) > MaxURLLength {
		return bad("url is longer than %d bytes", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return bad("url must be an absolute https URL, such as https://example.com/webhooks")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if p.Options.RequireHTTPS {
			return bad("url must be https in live mode")
		}
	default:
		return bad("url must be an https (or, in test mode, http) URL, not %q", u.Scheme)
	}
	if u.User != nil {
		return bad("url must not hold a user name or password")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return bad("url must not have a fragment (#…)")
	}
	host := u.Hostname()
	if host == "" {
		return bad("url must have a host")
	}
	port := uint16(443)
	if u.Scheme == "http" {
		port = 80
	}
	if ps := u.Port(); ps != "" {
		n, err := strconv.ParseUint(ps, 10, 16)
		if err != nil || n == 0 {
			return bad("url has an invalid port %q", ps)
		}
		port = uint16(n)
	}
	forbidden := func(why string) error {
		e := apperr.New(apperr.WebhookURLForbidden, "url %s: webhooks are never sent there", why)
		e.Field = "url"
		return e
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if ip.Zone() != "" {
			return forbidden("names a link-local address with a zone")
		}
		if err := outbound.CheckAddress(p.Options, ip, port); err != nil {
			return forbidden("names an address (or port) the server does not connect to")
		}
		return nil
	}
	if port != 80 && port != 443 && !p.Options.TestOnlyAllowLoopback {
		return forbidden("names a port other than 80 and 443")
	}
	return nil
}

// checkEvents validates an endpoint's event types: 1 to 6, each known and
// listed once.
func checkEvents(events []xpromo.EventType) error {
	bad := func(format string, args ...any) error {
		e := apperr.New(apperr.InvalidEventType, format, args...)
		e.Field = "events"
		return e
	}
	if len(events) == 0 {
		return bad("events must list at least one event type")
	}
	seen := map[xpromo.EventType]bool{}
	for _, t := range events {
		if !t.Valid() {
			return bad("%q is not an event type (docs/webhooks.md lists them)", t)
		}
		if seen[t] {
			return bad("events lists %q twice", t)
		}
		seen[t] = true
	}
	return nil
}

func checkDescription(d string) error {
	if utf8.RuneCountInString(d) > MaxDescriptionLength {
		e := apperr.New(apperr.TooLong, "description is longer than %d characters", MaxDescriptionLength)
		e.Field = "description"
		return e
	}
	return nil
}

func notFound() error { return apperr.New(apperr.NotFound, "webhook endpoint not found") }

// CreateEndpoint registers an endpoint for the app. The answer holds the
// secret, which is shown this once.
func (s *Service) CreateEndpoint(ctx context.Context, appID string, req xpromo.CreateWebhookEndpointRequest) (xpromo.WebhookEndpoint, error) {
	if err := s.Policy.CheckURL(req.URL); err != nil {
		return xpromo.WebhookEndpoint{}, err
	}
	if err := checkEvents(req.Events); err != nil {
		return xpromo.WebhookEndpoint{}, err
	}
	if err := checkDescription(req.Description); err != nil {
		return xpromo.WebhookEndpoint{}, err
	}
	now := s.now()
	e := Endpoint{
		ID: ids.New("we"), AppID: appID, URL: req.URL, Events: req.Events, Description: req.Description,
		Status: xpromo.WebhookEndpointEnabled, Secret: newSecret(), CreatedAt: now, UpdatedAt: now,
	}
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		if _, ok, err := tx.GetApp(ctx, appID, true); err != nil {
			return err
		} else if !ok {
			return apperr.New(apperr.NotFound, "app not found")
		}
		existing, err := tx.WebhookEndpoints(ctx, appID)
		if err != nil {
			return err
		}
		if len(existing) >= MaxEndpoints {
			return apperr.New(apperr.TooManyWebhookEndpoints, "the app already has %d webhook endpoints; delete one first", len(existing))
		}
		return tx.InsertWebhookEndpoint(ctx, e)
	})
	if err != nil {
		return xpromo.WebhookEndpoint{}, err
	}
	w := e.Wire(now)
	w.Secret = e.Secret
	return w, nil
}

// Endpoints lists the app's endpoints, oldest first.
func (s *Service) Endpoints(ctx context.Context, appID string) ([]xpromo.WebhookEndpoint, error) {
	var list []Endpoint
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		list, err = tx.WebhookEndpoints(ctx, appID)
		return err
	})
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]xpromo.WebhookEndpoint, len(list))
	for i, e := range list {
		out[i] = e.Wire(now)
	}
	return out, nil
}

// Endpoint reads one of the app's endpoints; another app's is not_found.
func (s *Service) Endpoint(ctx context.Context, appID, id string) (xpromo.WebhookEndpoint, error) {
	var e Endpoint
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var found bool
		var err error
		e, found, err = tx.WebhookEndpoint(ctx, appID, id)
		if err == nil && !found {
			err = notFound()
		}
		return err
	})
	if err != nil {
		return xpromo.WebhookEndpoint{}, err
	}
	return e.Wire(s.now()), nil
}

// EndpointUpdate is a change to an endpoint: nil fields stay as they are.
type EndpointUpdate struct {
	URL         *string
	Events      *[]xpromo.EventType
	Description *string
	Status      *xpromo.WebhookEndpointStatus
}

// UpdateEndpoint changes an endpoint. Enabling a disabled endpoint clears
// its reason; disabling one (by_request) drops its queued deliveries.
func (s *Service) UpdateEndpoint(ctx context.Context, appID, id string, u EndpointUpdate) (xpromo.WebhookEndpoint, error) {
	if u.URL != nil {
		if err := s.Policy.CheckURL(*u.URL); err != nil {
			return xpromo.WebhookEndpoint{}, err
		}
	}
	if u.Events != nil {
		if err := checkEvents(*u.Events); err != nil {
			return xpromo.WebhookEndpoint{}, err
		}
	}
	if u.Description != nil {
		if err := checkDescription(*u.Description); err != nil {
			return xpromo.WebhookEndpoint{}, err
		}
	}
	if u.Status != nil && *u.Status != xpromo.WebhookEndpointEnabled && *u.Status != xpromo.WebhookEndpointDisabled {
		e := apperr.New(apperr.InvalidType, "status must be enabled or disabled")
		e.Field = "status"
		return xpromo.WebhookEndpoint{}, e
	}
	now := s.now()
	var e Endpoint
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		var found bool
		var err error
		e, found, err = tx.WebhookEndpoint(ctx, appID, id)
		if err != nil {
			return err
		}
		if !found {
			return notFound()
		}
		changed, drop := false, false
		if u.URL != nil && *u.URL != e.URL {
			e.URL, changed = *u.URL, true
		}
		if u.Events != nil {
			e.Events, changed = *u.Events, true
		}
		if u.Description != nil && *u.Description != e.Description {
			e.Description, changed = *u.Description, true
		}
		if u.Status != nil && *u.Status != e.Status {
			changed = true
			e.Status = *u.Status
			if e.Status == xpromo.WebhookEndpointEnabled {
				e.DisabledReason, e.DisabledAt = "", time.Time{}
			} else {
				e.DisabledReason, e.DisabledAt, drop = xpromo.WebhookDisabledByRequest, now, true
			}
		}
		if !changed {
			return nil
		}
		e.UpdatedAt = now
		if err := tx.UpdateWebhookEndpoint(ctx, e); err != nil {
			return err
		}
		if drop {
			return tx.DropWebhookDeliveries(ctx, e.ID)
		}
		return nil
	})
	if err != nil {
		return xpromo.WebhookEndpoint{}, err
	}
	return e.Wire(now), nil
}

// DeleteEndpoint deletes an endpoint, its queued deliveries and its
// attempts.
func (s *Service) DeleteEndpoint(ctx context.Context, appID, id string) error {
	return s.Update(ctx, func(ctx context.Context, tx Tx) error {
		found, err := tx.DeleteWebhookEndpoint(ctx, appID, id)
		if err == nil && !found {
			err = notFound()
		}
		return err
	})
}

// RotateSecret gives the endpoint a new secret, answered this once; the
// previous one keeps signing alongside it for RotationOverlap. (A second
// rotation within the overlap retires the oldest secret at once.)
func (s *Service) RotateSecret(ctx context.Context, appID, id string) (xpromo.WebhookEndpoint, error) {
	now := s.now()
	var e Endpoint
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		var found bool
		var err error
		e, found, err = tx.WebhookEndpoint(ctx, appID, id)
		if err != nil {
			return err
		}
		if !found {
			return notFound()
		}
		e.PreviousSecret, e.PreviousSecretExpiresAt = e.Secret, now.Add(RotationOverlap)
		e.Secret, e.UpdatedAt = newSecret(), now
		return tx.UpdateWebhookEndpoint(ctx, e)
	})
	if err != nil {
		return xpromo.WebhookEndpoint{}, err
	}
	w := e.Wire(now)
	w.Secret = e.Secret
	return w, nil
}

// Redeliver queues an event again for an endpoint, due now with its
// attempts reset. The endpoint must be enabled; the event must be the
// app's and within Retention.
func (s *Service) Redeliver(ctx context.Context, appID, endpointID, eventID string) (xpromo.WebhookDelivery, error) {
	if eventID == "" {
		e := apperr.New(apperr.MissingField, "event_id is required")
		e.Field = "event_id"
		return xpromo.WebhookDelivery{}, e
	}
	now := s.now()
	var d Delivery
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		ep, found, err := tx.WebhookEndpoint(ctx, appID, endpointID)
		if err != nil {
			return err
		}
		if !found {
			return notFound()
		}
		ev, found, err := tx.AppEvent(ctx, appID, eventID)
		if err != nil {
			return err
		}
		if !found || ev.CreatedAt.Before(now.Add(-Retention)) {
			return apperr.New(apperr.NotFound, "event not found (events are kept %d days)", int(Retention.Hours()/24))
		}
		if ep.Status != xpromo.WebhookEndpointEnabled {
			return apperr.New(apperr.WebhookEndpointDisabled, "the endpoint is disabled (%s); enable it first", ep.DisabledReason)
		}
		d = Delivery{EndpointID: ep.ID, EventID: ev.ID, AppID: appID, EventCreatedAt: ev.CreatedAt, NextAttemptAt: now}
		return tx.InsertDeliveries(ctx, []Delivery{d})
	})
	if err != nil {
		return xpromo.WebhookDelivery{}, err
	}
	return xpromo.WebhookDelivery{EventID: d.EventID, EndpointID: d.EndpointID, NextAttemptAt: d.NextAttemptAt.UTC(), Attempts: 0}, nil
}

// Attempts lists an endpoint's attempts, newest first. after is a
// previous page's next_cursor.
func (s *Service) Attempts(ctx context.Context, appID, endpointID, eventID, after string, limit int) (xpromo.WebhookAttemptPage, error) {
	q := AttemptQuery{EndpointID: endpointID, EventID: eventID, Limit: limit + 1}
	if after != "" {
		p, err := cursor.Decode(after)
		if err != nil {
			return xpromo.WebhookAttemptPage{}, err
		}
		q.Before = &p
	}
	var list []Attempt
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		if _, found, err := tx.WebhookEndpoint(ctx, appID, endpointID); err != nil {
			return err
		} else if !found {
			return notFound()
		}
		var err error
		list, err = tx.WebhookAttempts(ctx, q)
		return err
	})
	if err != nil {
		return xpromo.WebhookAttemptPage{}, err
	}
	page := xpromo.WebhookAttemptPage{}
	if len(list) > limit {
		list = list[:limit]
		last := list[len(list)-1]
		next := cursor.Encode(Position{CreatedAt: last.AttemptedAt, ID: last.ID})
		page.NextCursor = &next
	}
	for _, a := range list {
		page.Attempts = append(page.Attempts, a.Wire())
	}
	return page, nil
}
