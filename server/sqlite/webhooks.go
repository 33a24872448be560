package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/webhooks"
)

// webhooks.Tx. SQLite has one writer, so a claim (an UPDATE … RETURNING in a
// write transaction) never overlaps another: no SKIP LOCKED is needed.

const endpointColumns = `id, app_id, url, events, description, status, coalesce(disabled_reason, ''), coalesce(disabled_at, 0),
  secret, coalesce(previous_secret, ''), coalesce(previous_secret_expires_at, 0), created_at, updated_at`

func scanEndpoint(r scanner) (webhooks.Endpoint, error) {
	var e webhooks.Endpoint
	var events, status, reason string
	var disabledAt, prevExpires, created, updated int64
	if err := r.Scan(&e.ID, &e.AppID, &e.URL, &events, &e.Description, &status, &reason, &disabledAt,
		&e.Secret, &e.PreviousSecret, &prevExpires, &created, &updated); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(events), &e.Events); err != nil {
		return e, err
	}
	e.Status, e.DisabledReason = xpromo.WebhookEndpointStatus(status), xpromo.WebhookDisabledReason(reason)
	e.DisabledAt, e.PreviousSecretExpiresAt = optMicros(disabledAt), optMicros(prevExpires)
	e.CreatedAt, e.UpdatedAt = fromMicros(created), fromMicros(updated)
	return e, nil
}

// optMicros maps 0 (NULL) to the zero time.
func optMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return fromMicros(us)
}

// optTime maps the zero time to NULL.
func optTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return micros(t)
}

func eventsJSON(ts []xpromo.EventType) string {
	b, _ := json.Marshal(ts) // strings: cannot fail
	return string(b)
}

func (t *tx) InsertWebhookEndpoint(ctx context.Context, e webhooks.Endpoint) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO webhook_endpoints (id, app_id, url, events, description, status, disabled_reason, disabled_at,
  secret, previous_secret, previous_secret_expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.AppID, e.URL, eventsJSON(e.Events), e.Description, string(e.Status), null(string(e.DisabledReason)), optTime(e.DisabledAt),
		e.Secret, null(e.PreviousSecret), optTime(e.PreviousSecretExpiresAt), micros(e.CreatedAt), micros(e.UpdatedAt))
	return wrap(err)
}

func (t *tx) WebhookEndpoint(ctx context.Context, appID, id string) (webhooks.Endpoint, bool, error) {
	e, err := scanEndpoint(t.tx.QueryRowContext(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE id = ? AND app_id = ?`, id, appID))
	if err == sql.ErrNoRows {
		return webhooks.Endpoint{}, false, nil
	}
	return e, err == nil, wrap(err)
}

func (t *tx) WebhookEndpoints(ctx context.Context, appID string) ([]webhooks.Endpoint, error) {
	return t.endpoints(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE app_id = ? ORDER BY created_at, id`, appID)
}

func (t *tx) EnabledWebhookEndpoints(ctx context.Context, appIDs []string) ([]webhooks.Endpoint, error) {
	if len(appIDs) == 0 {
		return nil, nil
	}
	var out []webhooks.Endpoint
	for start := 0; start < len(appIDs); start += rowsPerInsert {
		chunk := appIDs[start:min(len(appIDs), start+rowsPerInsert)]
		eps, err := t.endpoints(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE status = 'enabled' AND app_id IN (`+placeholders(len(chunk))+`) ORDER BY created_at, id`, anys(chunk)...)
		if err != nil {
			return nil, err
		}
		out = append(out, eps...)
	}
	return out, nil
}

func (t *tx) endpoints(ctx context.Context, q string, args ...any) ([]webhooks.Endpoint, error) {
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []webhooks.Endpoint
	for rows.Next() {
		e, err := scanEndpoint(rows)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, e)
	}
	return out, wrap(rows.Err())
}

func (t *tx) UpdateWebhookEndpoint(ctx context.Context, e webhooks.Endpoint) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE webhook_endpoints SET url = ?, events = ?, description = ?, status = ?, disabled_reason = ?,
  disabled_at = ?, secret = ?, previous_secret = ?, previous_secret_expires_at = ?, updated_at = ? WHERE id = ?`,
		e.URL, eventsJSON(e.Events), e.Description, string(e.Status), null(string(e.DisabledReason)),
		optTime(e.DisabledAt), e.Secret, null(e.PreviousSecret), optTime(e.PreviousSecretExpiresAt), micros(e.UpdatedAt), e.ID)
	return wrap(err)
}

// DeleteWebhookEndpoint deletes the row; its deliveries and attempts go
// with it (ON DELETE CASCADE; foreign keys are on).
func (t *tx) DeleteWebhookEndpoint(ctx context.Context, appID, id string) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE id = ? AND app_id = ?`, id, appID)
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

func (t *tx) DropWebhookDeliveries(ctx context.Context, endpointID string) error {
	_, err := t.tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE endpoint_id = ?`, endpointID)
	return wrap(err)
}

func (t *tx) events(ctx context.Context, q string, args ...any) ([]outbox.Event, error) {
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []outbox.Event
	for rows.Next() {
		var e outbox.Event
		var kind, payload string
		var at int64
		if err := rows.Scan(&e.ID, &kind, &e.AppID, &payload, &at); err != nil {
			return nil, wrap(err)
		}
		e.Type, e.Data, e.CreatedAt = xpromo.EventType(kind), []byte(payload), fromMicros(at)
		out = append(out, e)
	}
	return out, wrap(rows.Err())
}

// AppEvents merges the app's events of the rows naming it first (index
// outbox_app) with those of the rows naming it as the second app, under
// that app's own id (index outbox_also_app).
func (t *tx) AppEvents(ctx context.Context, q webhooks.EventQuery) ([]outbox.Event, error) {
	kinds := ``
	var kindArgs []any
	if len(q.Types) > 0 {
		kinds = ` AND kind IN (` + placeholders(len(q.Types)) + `)`
		for _, ty := range q.Types {
			kindArgs = append(kindArgs, string(ty))
		}
	}
	after := micros(q.After.CreatedAt)
	args := append([]any{q.AppID, after, q.After.ID}, kindArgs...)
	args = append(args, q.Limit, q.AppID, after, q.After.ID)
	args = append(append(args, kindArgs...), q.Limit, q.Limit)
	return t.events(ctx, `SELECT * FROM (SELECT id, kind, app_id, payload, created_at FROM outbox
  WHERE app_id = ? AND (created_at, id) > (?, ?)`+kinds+` ORDER BY created_at, id LIMIT ?)
UNION ALL
SELECT * FROM (SELECT also_id, kind, also_app_id, payload, created_at FROM outbox
  WHERE also_app_id = ? AND (created_at, also_id) > (?, ?)`+kinds+` ORDER BY created_at, also_id LIMIT ?)
ORDER BY 5, 1 LIMIT ?`, args...)
}

func (t *tx) AppEvent(ctx context.Context, appID, id string) (outbox.Event, bool, error) {
	// "+also_app_id": look up by the id (outbox_also_id), never by walking
	// the app's events in outbox_also_app.
	evs, err := t.events(ctx, `SELECT id, kind, app_id, payload, created_at FROM outbox WHERE id = ? AND app_id = ?
UNION ALL
SELECT also_id, kind, also_app_id, payload, created_at FROM outbox WHERE also_id = ? AND +also_app_id = ?`, id, appID, id, appID)
	if err != nil || len(evs) == 0 {
		return outbox.Event{}, false, err
	}
	return evs[0], true, nil
}

// ClaimUndispatched marks the oldest undispatched rows and returns each
// row's events (two for a row naming a second app).
func (t *tx) ClaimUndispatched(ctx context.Context, now time.Time, limit int) ([]outbox.Event, error) {
	rows, err := t.tx.QueryContext(ctx, `UPDATE outbox SET dispatched_at = ?
WHERE id IN (SELECT id FROM outbox WHERE dispatched_at IS NULL ORDER BY created_at LIMIT ?)
RETURNING id, kind, app_id, created_at, coalesce(also_id, ''), coalesce(also_app_id, '')`, micros(now), limit)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []outbox.Event
	for rows.Next() {
		var e outbox.Event
		var kind string
		var at int64
		if err := rows.Scan(&e.ID, &kind, &e.AppID, &at, &e.Also.ID, &e.Also.AppID); err != nil {
			return nil, wrap(err)
		}
		e.Type, e.CreatedAt = xpromo.EventType(kind), fromMicros(at)
		out = append(out, e.Split()...)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err)
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
	if len(ds) == 0 {
		return nil
	}
	stmt, err := t.tx.PrepareContext(ctx, `INSERT INTO webhook_deliveries (endpoint_id, event_id, app_id, event_created_at, attempts, next_attempt_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (endpoint_id, event_id) DO UPDATE SET attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at`)
	if err != nil {
		return wrap(err)
	}
	defer stmt.Close()
	for _, d := range ds {
		if _, err := stmt.ExecContext(ctx, d.EndpointID, d.EventID, d.AppID, micros(d.EventCreatedAt), d.Attempts, micros(d.NextAttemptAt)); err != nil {
			return wrap(err)
		}
	}
	return nil
}

func (t *tx) ClaimDeliveries(ctx context.Context, now, leaseEnd time.Time, limit int) ([]webhooks.Claimed, error) {
	rows, err := t.tx.QueryContext(ctx, `UPDATE webhook_deliveries SET next_attempt_at = ?
WHERE (endpoint_id, event_id) IN (SELECT endpoint_id, event_id FROM webhook_deliveries WHERE next_attempt_at <= ?
  ORDER BY next_attempt_at, event_created_at, event_id LIMIT ?)
RETURNING endpoint_id, event_id, app_id, event_created_at, attempts, next_attempt_at`, micros(leaseEnd), micros(now), limit)
	if err != nil {
		return nil, wrap(err)
	}
	var claimed []webhooks.Delivery
	for rows.Next() {
		var d webhooks.Delivery
		var created, next int64
		if err := rows.Scan(&d.EndpointID, &d.EventID, &d.AppID, &created, &d.Attempts, &next); err != nil {
			rows.Close()
			return nil, wrap(err)
		}
		d.EventCreatedAt, d.NextAttemptAt = fromMicros(created), fromMicros(next)
		claimed = append(claimed, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrap(err)
	}
	endpoints := map[string]*webhooks.Endpoint{}
	var out []webhooks.Claimed
	for _, d := range claimed {
		ep, ok := endpoints[d.EndpointID]
		if !ok {
			e, found, err := t.WebhookEndpoint(ctx, d.AppID, d.EndpointID)
			if err != nil {
				return nil, err
			}
			if found {
				ep = &e
			}
			endpoints[d.EndpointID] = ep
		}
		ev, found, err := t.AppEvent(ctx, d.AppID, d.EventID)
		if err != nil {
			return nil, err
		}
		if ep == nil || ep.Status != xpromo.WebhookEndpointEnabled || !found {
			if _, err := t.tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE endpoint_id = ? AND event_id = ?`, d.EndpointID, d.EventID); err != nil {
				return nil, wrap(err)
			}
			continue
		}
		out = append(out, webhooks.Claimed{Delivery: d, Event: ev, Endpoint: *ep})
	}
	return out, nil
}

// RecordResults applies each result with prepared statements; changes to
// a delivery apply only while the claim still holds it (its
// next_attempt_at is still the claim's token).
func (t *tx) RecordResults(ctx context.Context, now time.Time, results []webhooks.Result) error {
	prep := func(q string) (*sql.Stmt, error) {
		s, err := t.tx.PrepareContext(ctx, q)
		return s, wrap(err)
	}
	insert, err := prep(`INSERT INTO webhook_attempts (id, endpoint_id, event_id, app_id, attempt, attempted_at, status_code, latency_ms,
  succeeded, error, response_excerpt, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer insert.Close()
	del, err := prep(`DELETE FROM webhook_deliveries WHERE endpoint_id = ? AND event_id = ? AND next_attempt_at = ?`)
	if err != nil {
		return err
	}
	defer del.Close()
	move, err := prep(`UPDATE webhook_deliveries SET attempts = attempts + ?, next_attempt_at = ? WHERE endpoint_id = ? AND event_id = ? AND next_attempt_at = ?`)
	if err != nil {
		return err
	}
	defer move.Close()
	var disable []webhooks.Result
	for _, r := range results {
		d := r.Delivery
		if a := r.Attempt; a != nil {
			var status any
			if a.StatusCode != 0 {
				status = a.StatusCode
			}
			succeeded := 0
			if a.Succeeded {
				succeeded = 1
			}
			if _, err := insert.ExecContext(ctx, a.ID, a.EndpointID, a.EventID, a.AppID, a.Attempt, micros(a.AttemptedAt), status, a.LatencyMS,
				succeeded, null(a.Error), a.Excerpt, optTime(a.NextAttemptAt)); err != nil {
				return wrap(err)
			}
		}
		if r.Done {
			_, err = del.ExecContext(ctx, d.EndpointID, d.EventID, micros(d.NextAttemptAt))
		} else {
			inc := 1
			if r.Release {
				inc = 0
			}
			_, err = move.ExecContext(ctx, inc, micros(r.NextAttemptAt), d.EndpointID, d.EventID, micros(d.NextAttemptAt))
		}
		if err != nil {
			return wrap(err)
		}
		if r.Disable != "" {
			disable = append(disable, r)
		}
	}
	for _, r := range disable {
		if _, err := t.tx.ExecContext(ctx, `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = ?, disabled_at = ?, updated_at = ?
WHERE id = ? AND status = 'enabled'`, string(r.Disable), micros(now), micros(now), r.Delivery.EndpointID); err != nil {
			return wrap(err)
		}
		if err := t.DropWebhookDeliveries(ctx, r.Delivery.EndpointID); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) WebhookAttempts(ctx context.Context, q webhooks.AttemptQuery) ([]webhooks.Attempt, error) {
	sql := `SELECT id, endpoint_id, event_id, app_id, attempt, attempted_at, coalesce(status_code, 0), latency_ms, succeeded,
  coalesce(error, ''), response_excerpt, coalesce(next_attempt_at, 0)
FROM webhook_attempts WHERE endpoint_id = ?`
	args := []any{q.EndpointID}
	if q.EventID != "" {
		sql += ` AND event_id = ?`
		args = append(args, q.EventID)
	}
	if q.Before != nil {
		sql += ` AND (attempted_at, id) < (?, ?)`
		args = append(args, micros(q.Before.CreatedAt), q.Before.ID)
	}
	rows, err := t.tx.QueryContext(ctx, sql+` ORDER BY attempted_at DESC, id DESC LIMIT ?`, append(args, q.Limit)...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []webhooks.Attempt
	for rows.Next() {
		var a webhooks.Attempt
		var at, next int64
		var succeeded int
		if err := rows.Scan(&a.ID, &a.EndpointID, &a.EventID, &a.AppID, &a.Attempt, &at, &a.StatusCode, &a.LatencyMS, &succeeded,
			&a.Error, &a.Excerpt, &next); err != nil {
			return nil, wrap(err)
		}
		a.AttemptedAt, a.NextAttemptAt, a.Succeeded = fromMicros(at), optMicros(next), succeeded == 1
		out = append(out, a)
	}
	return out, wrap(rows.Err())
}

func (t *tx) PurgeEvents(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if _, err := t.tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE event_created_at < ?`, micros(cutoff)); err != nil {
		return 0, wrap(err)
	}
	return t.purge(ctx, `DELETE FROM outbox WHERE rowid IN (SELECT rowid FROM outbox WHERE created_at < ? LIMIT ?)`, micros(cutoff), limit)
}

func (t *tx) PurgeWebhookAttempts(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	return t.purge(ctx, `DELETE FROM webhook_attempts WHERE rowid IN (SELECT rowid FROM webhook_attempts WHERE attempted_at < ? LIMIT ?)`, micros(cutoff), limit)
}

func (t *tx) purge(ctx context.Context, q string, args ...any) (int, error) {
	res, err := t.tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, wrap(err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap(err)
}
