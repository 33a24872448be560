package postgres

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/webhooks"
)

// webhooks.Tx.

const endpointColumns = `id, app_id, url, events, description, status, coalesce(disabled_reason, ''), disabled_at,
  secret, coalesce(previous_secret, ''), previous_secret_expires_at, created_at, updated_at`

func scanEndpoint(row pgx.Row) (webhooks.Endpoint, error) {
	var e webhooks.Endpoint
	var events []string
	var status, reason string
	var disabledAt, prevExpires *time.Time
	err := row.Scan(&e.ID, &e.AppID, &e.URL, &events, &e.Description, &status, &reason, &disabledAt,
		&e.Secret, &e.PreviousSecret, &prevExpires, &e.CreatedAt, &e.UpdatedAt)
	if err != nil {
		return e, err
	}
	for _, t := range events {
		e.Events = append(e.Events, xpromo.EventType(t))
	}
	e.Status, e.DisabledReason = xpromo.WebhookEndpointStatus(status), xpromo.WebhookDisabledReason(reason)
	if disabledAt != nil {
		e.DisabledAt = disabledAt.UTC()
	}
	if prevExpires != nil {
		e.PreviousSecretExpiresAt = prevExpires.UTC()
	}
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	return e, nil
}

func eventTypes(ts []xpromo.EventType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

func (t *tx) InsertWebhookEndpoint(ctx context.Context, e webhooks.Endpoint) error {
	_, err := t.exec(ctx, `INSERT INTO webhook_endpoints (id, app_id, url, events, description, status, disabled_reason, disabled_at,
  secret, previous_secret, previous_secret_expires_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		e.ID, e.AppID, e.URL, eventTypes(e.Events), e.Description, string(e.Status), nullable(string(e.DisabledReason)), optionalTime(e.DisabledAt),
		e.Secret, nullable(e.PreviousSecret), optionalTime(e.PreviousSecretExpiresAt), e.CreatedAt, e.UpdatedAt)
	return wrap(err, "inserting a webhook endpoint")
}

func (t *tx) WebhookEndpoint(ctx context.Context, appID, id string) (webhooks.Endpoint, bool, error) {
	var e webhooks.Endpoint
	found := false
	err := t.query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE id = $1 AND app_id = $2`, []any{id, appID}, func(rows pgx.Rows) error {
		var err error
		e, err = scanEndpoint(rows)
		found = true
		return err
	})
	return e, found, wrap(err, "reading a webhook endpoint")
}

func (t *tx) WebhookEndpoints(ctx context.Context, appID string) ([]webhooks.Endpoint, error) {
	return t.endpoints(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE app_id = $1 ORDER BY created_at, id`, appID)
}

func (t *tx) EnabledWebhookEndpoints(ctx context.Context, appIDs []string) ([]webhooks.Endpoint, error) {
	if len(appIDs) == 0 {
		return nil, nil
	}
	return t.endpoints(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE app_id = ANY($1) AND status = 'enabled' ORDER BY created_at, id`, appIDs)
}

func (t *tx) endpoints(ctx context.Context, q string, args ...any) ([]webhooks.Endpoint, error) {
	var out []webhooks.Endpoint
	err := t.query(ctx, q, args, func(rows pgx.Rows) error {
		e, err := scanEndpoint(rows)
		out = append(out, e)
		return err
	})
	return out, wrap(err, "reading webhook endpoints")
}

func (t *tx) UpdateWebhookEndpoint(ctx context.Context, e webhooks.Endpoint) error {
	_, err := t.exec(ctx, `UPDATE webhook_endpoints SET url = $1, events = $2, description = $3, status = $4, disabled_reason = $5,
  disabled_at = $6, secret = $7, previous_secret = $8, previous_secret_expires_at = $9, updated_at = $10
WHERE id = $11`,
		e.URL, eventTypes(e.Events), e.Description, string(e.Status), nullable(string(e.DisabledReason)),
		optionalTime(e.DisabledAt), e.Secret, nullable(e.PreviousSecret), optionalTime(e.PreviousSecretExpiresAt), e.UpdatedAt, e.ID)
	return wrap(err, "updating a webhook endpoint")
}

// DeleteWebhookEndpoint deletes the row; its deliveries and attempts go
// with it (ON DELETE CASCADE).
func (t *tx) DeleteWebhookEndpoint(ctx context.Context, appID, id string) (bool, error) {
	n, err := t.exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1 AND app_id = $2`, id, appID)
	return n == 1, wrap(err, "deleting a webhook endpoint")
}

func (t *tx) DropWebhookDeliveries(ctx context.Context, endpointID string) error {
	_, err := t.exec(ctx, `DELETE FROM webhook_deliveries WHERE endpoint_id = $1`, endpointID)
	return wrap(err, "dropping webhook deliveries")
}

func scanEvent(rows pgx.Rows) (outbox.Event, error) {
	var e outbox.Event
	var kind, payload string
	err := rows.Scan(&e.ID, &kind, &e.AppID, &payload, &e.CreatedAt)
	e.Type, e.Data, e.CreatedAt = xpromo.EventType(kind), []byte(payload), e.CreatedAt.UTC()
	return e, err
}

// AppEvents pages on the indexes (app_id, created_at, id) and
// (also_app_id, created_at, also_id) with row comparisons: the app's events
// are those of the rows naming it first, merged with those naming it as the
// second app (under that app's own id).
func (t *tx) AppEvents(ctx context.Context, q webhooks.EventQuery) ([]outbox.Event, error) {
	args := []any{q.AppID, q.After.CreatedAt, q.After.ID, q.Limit}
	kinds := ``
	if len(q.Types) > 0 {
		kinds = ` AND kind = ANY($5)`
		args = append(args, eventTypes(q.Types))
	}
	sql := `SELECT id, kind, app_id, payload::text, created_at FROM (
  (SELECT id, kind, app_id, payload, created_at FROM outbox
    WHERE app_id = $1 AND (created_at, id) > ($2, $3)` + kinds + ` ORDER BY created_at, id LIMIT $4)
  UNION ALL
  (SELECT also_id, kind, also_app_id, payload, created_at FROM outbox
    WHERE also_app_id = $1 AND (created_at, also_id) > ($2, $3)` + kinds + ` ORDER BY created_at, also_id LIMIT $4)
) e ORDER BY created_at, id LIMIT $4`
	var out []outbox.Event
	err := t.query(ctx, sql, args, func(rows pgx.Rows) error {
		e, err := scanEvent(rows)
		out = append(out, e)
		return err
	})
	return out, wrap(err, "reading events")
}

func (t *tx) AppEvent(ctx context.Context, appID, id string) (outbox.Event, bool, error) {
	var e outbox.Event
	found := false
	err := t.query(ctx, `SELECT id, kind, app_id, payload::text, created_at FROM outbox WHERE id = $1 AND app_id = $2
UNION ALL
SELECT also_id, kind, also_app_id, payload::text, created_at FROM outbox WHERE also_id = $1 AND also_app_id = $2`, []any{id, appID}, func(rows pgx.Rows) error {
		var err error
		e, err = scanEvent(rows)
		found = true
		return err
	})
	return e, found, wrap(err, "reading an event")
}

// ClaimUndispatched takes the oldest undispatched rows with FOR UPDATE
// SKIP LOCKED, so concurrent dispatchers take disjoint batches, and returns
// each row's events (two for a row naming a second app).
func (t *tx) ClaimUndispatched(ctx context.Context, now time.Time, limit int) ([]outbox.Event, error) {
	var out []outbox.Event
	err := t.query(ctx, `UPDATE outbox SET dispatched_at = $1
WHERE id IN (SELECT id FROM outbox WHERE dispatched_at IS NULL ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
RETURNING id, kind, app_id, created_at, coalesce(also_id, ''), coalesce(also_app_id, '')`, []any{now, limit}, func(rows pgx.Rows) error {
		var e outbox.Event
		var kind string
		err := rows.Scan(&e.ID, &kind, &e.AppID, &e.CreatedAt, &e.Also.ID, &e.Also.AppID)
		e.Type, e.CreatedAt = xpromo.EventType(kind), e.CreatedAt.UTC()
		out = append(out, e.Split()...)
		return err
	})
	if err != nil {
		return nil, wrap(err, "claiming undispatched events")
	}
	slices.SortFunc(out, func(a, b outbox.Event) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func (t *tx) InsertDeliveries(ctx context.Context, ds []webhooks.Delivery) error {
	n := len(ds)
	if n == 0 {
		return nil
	}
	ep, ev, app, created, attempts, next := make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n), make([]int32, n), make([]time.Time, n)
	for i, d := range ds {
		ep[i], ev[i], app[i], created[i], attempts[i], next[i] = d.EndpointID, d.EventID, d.AppID, d.EventCreatedAt, int32(d.Attempts), d.NextAttemptAt
	}
	_, err := t.exec(ctx, `INSERT INTO webhook_deliveries (endpoint_id, event_id, app_id, event_created_at, attempts, next_attempt_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::int[], $6::timestamptz[])
ON CONFLICT (endpoint_id, event_id) DO UPDATE SET attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at`,
		ep, ev, app, created, attempts, next)
	return wrap(err, "queueing webhook deliveries")
}

// ClaimDeliveries locks due rows with FOR UPDATE SKIP LOCKED (another
// worker's claim in progress is skipped; once it commits, its rows are no
// longer due), moves them to the lease's end and reads what sending needs,
// in one statement.
func (t *tx) ClaimDeliveries(ctx context.Context, now, leaseEnd time.Time, limit int) ([]webhooks.Claimed, error) {
	var out []webhooks.Claimed
	var orphanEP, orphanEV []string
	err := t.query(ctx, `WITH due AS (
  SELECT endpoint_id, event_id FROM webhook_deliveries WHERE next_attempt_at <= $1
  ORDER BY next_attempt_at, event_created_at, event_id LIMIT $3 FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE webhook_deliveries d SET next_attempt_at = $2 FROM due
  WHERE d.endpoint_id = due.endpoint_id AND d.event_id = due.event_id
  RETURNING d.endpoint_id, d.event_id, d.app_id, d.event_created_at, d.attempts, d.next_attempt_at
)
SELECT c.endpoint_id, c.event_id, c.app_id, c.event_created_at, c.attempts, c.next_attempt_at,
  o.id IS NOT NULL, coalesce(o.kind, ''), coalesce(o.payload::text, 'null'), coalesce(o.created_at, c.event_created_at),
  e.id, e.app_id, e.url, e.events, e.description, e.status, coalesce(e.disabled_reason, ''), e.disabled_at,
  e.secret, coalesce(e.previous_secret, ''), e.previous_secret_expires_at, e.created_at, e.updated_at
FROM claimed c JOIN webhook_endpoints e ON e.id = c.endpoint_id
LEFT JOIN LATERAL (
  SELECT id, kind, payload, created_at FROM outbox WHERE id = c.event_id
  UNION ALL
  SELECT also_id, kind, payload, created_at FROM outbox WHERE also_id = c.event_id
) o ON true`,
		[]any{now, leaseEnd, limit}, func(rows pgx.Rows) error {
			var c webhooks.Claimed
			var attempts int32
			var exists bool
			var kind, payload string
			var e webhooks.Endpoint
			var events []string
			var status, reason string
			var disabledAt, prevExpires *time.Time
			err := rows.Scan(&c.EndpointID, &c.EventID, &c.AppID, &c.EventCreatedAt, &attempts, &c.NextAttemptAt,
				&exists, &kind, &payload, &c.Event.CreatedAt,
				&e.ID, &e.AppID, &e.URL, &events, &e.Description, &status, &reason, &disabledAt,
				&e.Secret, &e.PreviousSecret, &prevExpires, &e.CreatedAt, &e.UpdatedAt)
			if err != nil {
				return err
			}
			if !exists || status != string(xpromo.WebhookEndpointEnabled) {
				orphanEP, orphanEV = append(orphanEP, c.EndpointID), append(orphanEV, c.EventID)
				return nil
			}
			c.Attempts = int(attempts)
			c.EventCreatedAt, c.NextAttemptAt = c.EventCreatedAt.UTC(), c.NextAttemptAt.UTC()
			c.Event = outbox.Event{ID: c.EventID, Type: xpromo.EventType(kind), AppID: c.AppID, Data: []byte(payload), CreatedAt: c.Event.CreatedAt.UTC()}
			e.Status = xpromo.WebhookEndpointEnabled
			if prevExpires != nil {
				e.PreviousSecretExpiresAt = prevExpires.UTC()
			}
			c.Endpoint = e
			out = append(out, c)
			return nil
		})
	if err != nil {
		return nil, wrap(err, "claiming webhook deliveries")
	}
	if len(orphanEP) > 0 {
		_, err := t.exec(ctx, `DELETE FROM webhook_deliveries d USING unnest($1::text[], $2::text[]) AS v(ep, ev)
WHERE d.endpoint_id = v.ep AND d.event_id = v.ev`, orphanEP, orphanEV)
		if err != nil {
			return nil, wrap(err, "dropping deliveries of purged events")
		}
	}
	return out, nil
}

// RecordResults sends every statement in one round trip (with COMMIT).
// Each change to a delivery applies only while the claim still holds it:
// its next_attempt_at is still the claim's token.
func (t *tx) RecordResults(ctx context.Context, now time.Time, results []webhooks.Result) error {
	b := &pgx.Batch{}
	var at attemptArrays
	var doneEP, doneEV []string
	var doneTok []time.Time
	var movEP, movEV []string
	var movTok, movNext []time.Time
	var movInc []int32
	var disEP, disReason []string
	for _, r := range results {
		d := r.Delivery
		if r.Attempt != nil {
			at.add(*r.Attempt)
		}
		switch {
		case r.Done:
			doneEP, doneEV, doneTok = append(doneEP, d.EndpointID), append(doneEV, d.EventID), append(doneTok, d.NextAttemptAt)
		default:
			inc := int32(1)
			if r.Release {
				inc = 0
			}
			movEP, movEV, movTok, movNext, movInc = append(movEP, d.EndpointID), append(movEV, d.EventID), append(movTok, d.NextAttemptAt), append(movNext, r.NextAttemptAt), append(movInc, inc)
		}
		if r.Disable != "" && !slices.Contains(disEP, d.EndpointID) {
			disEP, disReason = append(disEP, d.EndpointID), append(disReason, string(r.Disable))
		}
	}
	if len(at.id) > 0 {
		b.Queue(`INSERT INTO webhook_attempts (id, endpoint_id, event_id, app_id, attempt, attempted_at, status_code, latency_ms,
  succeeded, error, response_excerpt, next_attempt_at)
SELECT id, endpoint_id, event_id, app_id, attempt, attempted_at, NULLIF(status_code, 0), latency_ms, succeeded, NULLIF(error, ''), excerpt, next_attempt_at
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::timestamptz[], $7::int[], $8::bigint[],
  $9::bool[], $10::text[], $11::text[], $12::timestamptz[])
  AS v(id, endpoint_id, event_id, app_id, attempt, attempted_at, status_code, latency_ms, succeeded, error, excerpt, next_attempt_at)`,
			at.id, at.endpoint, at.event, at.app, at.attempt, at.at, at.status, at.latency, at.succeeded, at.err, at.excerpt, at.next)
	}
	if len(doneEP) > 0 {
		b.Queue(`DELETE FROM webhook_deliveries d USING unnest($1::text[], $2::text[], $3::timestamptz[]) AS v(ep, ev, token)
WHERE d.endpoint_id = v.ep AND d.event_id = v.ev AND d.next_attempt_at = v.token`, doneEP, doneEV, doneTok)
	}
	if len(movEP) > 0 {
		b.Queue(`UPDATE webhook_deliveries d SET attempts = d.attempts + v.inc, next_attempt_at = v.next
FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::int[]) AS v(ep, ev, token, next, inc)
WHERE d.endpoint_id = v.ep AND d.event_id = v.ev AND d.next_attempt_at = v.token`, movEP, movEV, movTok, movNext, movInc)
	}
	if len(disEP) > 0 {
		b.Queue(`UPDATE webhook_endpoints e SET status = 'disabled', disabled_reason = v.reason, disabled_at = $3, updated_at = $3
FROM unnest($1::text[], $2::text[]) AS v(id, reason) WHERE e.id = v.id AND e.status = 'enabled'`, disEP, disReason, now)
		b.Queue(`DELETE FROM webhook_deliveries WHERE endpoint_id = ANY($1)`, disEP)
	}
	if b.Len() == 0 {
		return nil
	}
	return wrap(t.send(ctx, b), "recording webhook attempts")
}

// attemptArrays holds attempts column by column, for unnest.
type attemptArrays struct {
	id, endpoint, event, app, err, excerpt []string
	attempt, status                        []int32
	latency                                []int64
	succeeded                              []bool
	at                                     []time.Time
	next                                   []*time.Time
}

func (a *attemptArrays) add(x webhooks.Attempt) {
	a.id, a.endpoint, a.event, a.app = append(a.id, x.ID), append(a.endpoint, x.EndpointID), append(a.event, x.EventID), append(a.app, x.AppID)
	a.err, a.excerpt = append(a.err, x.Error), append(a.excerpt, x.Excerpt)
	a.attempt, a.status, a.latency = append(a.attempt, int32(x.Attempt)), append(a.status, int32(x.StatusCode)), append(a.latency, x.LatencyMS)
	a.succeeded, a.at, a.next = append(a.succeeded, x.Succeeded), append(a.at, x.AttemptedAt), append(a.next, optionalTime(x.NextAttemptAt))
}

func (t *tx) WebhookAttempts(ctx context.Context, q webhooks.AttemptQuery) ([]webhooks.Attempt, error) {
	sql := `SELECT id, endpoint_id, event_id, app_id, attempt, attempted_at, coalesce(status_code, 0), latency_ms, succeeded,
  coalesce(error, ''), response_excerpt, next_attempt_at
FROM webhook_attempts WHERE endpoint_id = $1`
	args := []any{q.EndpointID, q.Limit}
	if q.EventID != "" {
		args = append(args, q.EventID)
		sql += ` AND event_id = $3`
	}
	if q.Before != nil {
		args = append(args, q.Before.CreatedAt, q.Before.ID)
		n := len(args)
		sql += ` AND (attempted_at, id) < ($` + itoa(n-1) + `, $` + itoa(n) + `)`
	}
	sql += ` ORDER BY attempted_at DESC, id DESC LIMIT $2`
	var out []webhooks.Attempt
	err := t.query(ctx, sql, args, func(rows pgx.Rows) error {
		var a webhooks.Attempt
		var attempt, status int32
		var next *time.Time
		err := rows.Scan(&a.ID, &a.EndpointID, &a.EventID, &a.AppID, &attempt, &a.AttemptedAt, &status, &a.LatencyMS, &a.Succeeded,
			&a.Error, &a.Excerpt, &next)
		a.Attempt, a.StatusCode, a.AttemptedAt = int(attempt), int(status), a.AttemptedAt.UTC()
		if next != nil {
			a.NextAttemptAt = next.UTC()
		}
		out = append(out, a)
		return err
	})
	return out, wrap(err, "reading webhook attempts")
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// PurgeEvents deletes the queued deliveries of old events, then a batch of
// old events; SKIP LOCKED lets several instances purge at once.
func (t *tx) PurgeEvents(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	var n int64
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM webhook_deliveries WHERE event_created_at < $1`, cutoff)
	b.Queue(`DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE created_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff, limit).
		Exec(func(ct pgconn.CommandTag) error {
			n = ct.RowsAffected()
			return nil
		})
	err := t.send(ctx, b)
	return int(n), wrap(err, "purging events")
}

func (t *tx) PurgeWebhookAttempts(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	n, err := t.exec(ctx, `DELETE FROM webhook_attempts WHERE id IN
  (SELECT id FROM webhook_attempts WHERE attempted_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff, limit)
	return int(n), wrap(err, "purging webhook attempts")
}
