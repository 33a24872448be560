package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/ledger"
)

// apps.Tx on PostgreSQL.

var _ apps.Tx = (*tx)(nil)

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// jsonArg passes raw JSON to a jsonb parameter, nil as NULL.
func jsonArg(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	return []byte(raw)
}

func (t *tx) InsertApp(ctx context.Context, a apps.App) error {
	_, err := t.exec(ctx, `INSERT INTO apps (id, name, platform, bundle_id, domain, download_url, contact_email, category, status, earn_mode, created_at, updated_at, appcast_url)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		a.ID, a.Name, string(a.Platform), a.BundleID, a.Domain, a.DownloadURL, a.ContactEmail, a.Category,
		string(a.Status), string(a.EarnMode), a.CreatedAt, a.UpdatedAt, a.AppcastURL)
	return wrap(err, "inserting an app")
}

const appColumns = `id, name, platform, bundle_id, domain, download_url, contact_email, category, status, earn_mode, created_at, updated_at, appcast_url`

func scanApp(row pgx.Row) (apps.App, error) {
	var a apps.App
	var platform, status, mode string
	if err := row.Scan(&a.ID, &a.Name, &platform, &a.BundleID, &a.Domain, &a.DownloadURL, &a.ContactEmail,
		&a.Category, &status, &mode, &a.CreatedAt, &a.UpdatedAt, &a.AppcastURL); err != nil {
		return apps.App{}, err
	}
	a.Platform, a.Status, a.EarnMode = xpromo.Platform(platform), xpromo.AppStatus(status), ledger.EarnMode(mode)
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	return a, nil
}

const selectApp = `SELECT ` + appColumns + ` FROM apps WHERE id = $1`

func (t *tx) GetApp(ctx context.Context, id string, lock bool) (apps.App, bool, error) {
	q := selectApp
	if lock {
		q += ` FOR UPDATE`
	}
	var a apps.App
	var platform, status, mode string
	err := t.queryRow(ctx, q, []any{id}, &a.ID, &a.Name, &platform, &a.BundleID, &a.Domain, &a.DownloadURL, &a.ContactEmail,
		&a.Category, &status, &mode, &a.CreatedAt, &a.UpdatedAt, &a.AppcastURL)
	if errors.Is(err, pgx.ErrNoRows) {
		return apps.App{}, false, nil
	}
	if err != nil {
		return apps.App{}, false, wrap(err, "reading an app")
	}
	a.Platform, a.Status, a.EarnMode = xpromo.Platform(platform), xpromo.AppStatus(status), ledger.EarnMode(mode)
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	return a, true, nil
}

func (t *tx) SetAppStatus(ctx context.Context, id string, status xpromo.AppStatus, at time.Time) error {
	_, err := t.exec(ctx, `UPDATE apps SET status = $1, updated_at = $2 WHERE id = $3`, string(status), at, id)
	return wrap(err, "setting an app's status")
}

func (t *tx) SetAppAppcastURL(ctx context.Context, id, url string, at time.Time) error {
	_, err := t.exec(ctx, `UPDATE apps SET appcast_url = $1, updated_at = $2 WHERE id = $3`, url, at, id)
	return wrap(err, "setting an app's appcast URL")
}

func (t *tx) InsertAppStatusChange(ctx context.Context, c apps.StatusChange) error {
	var from any
	if c.From != "" {
		from = string(c.From)
	}
	_, err := t.exec(ctx, `INSERT INTO app_status_history (app_id, from_status, to_status, reason, actor, at) VALUES ($1, $2, $3, $4, $5, $6)`,
		c.AppID, from, string(c.To), c.Reason, c.Actor, c.At)
	return wrap(err, "recording a status change")
}

func (t *tx) AppStatusHistory(ctx context.Context, appID string) ([]apps.StatusChange, error) {
	var out []apps.StatusChange
	err := t.query(ctx, `SELECT app_id, coalesce(from_status, ''), to_status, reason, actor, at FROM app_status_history WHERE app_id = $1 ORDER BY seq`,
		[]any{appID}, func(rows pgx.Rows) error {
			var c apps.StatusChange
			var from, to string
			if err := rows.Scan(&c.AppID, &from, &to, &c.Reason, &c.Actor, &c.At); err != nil {
				return err
			}
			c.From, c.To, c.At = xpromo.AppStatus(from), xpromo.AppStatus(to), c.At.UTC()
			out = append(out, c)
			return nil
		})
	return out, wrap(err, "reading status history")
}

func (t *tx) InsertAPIKey(ctx context.Context, k apps.APIKey) error {
	_, err := t.exec(ctx, `INSERT INTO api_keys (key_hash, app_id, prefix, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		k.Hash, k.AppID, k.Prefix, k.CreatedAt, k.ExpiresAt)
	return wrap(err, "inserting an API key")
}

func (t *tx) APIKeyByHash(ctx context.Context, hash string) (apps.APIKey, bool, error) {
	k := apps.APIKey{Hash: hash}
	err := t.queryRow(ctx, `SELECT app_id, prefix, created_at, expires_at FROM api_keys WHERE key_hash = $1`, []any{hash},
		&k.AppID, &k.Prefix, &k.CreatedAt, &k.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return apps.APIKey{}, false, nil
	}
	if err != nil {
		return apps.APIKey{}, false, wrap(err, "looking up an API key")
	}
	k.CreatedAt, k.ExpiresAt = k.CreatedAt.UTC(), utcPtr(k.ExpiresAt)
	return k, true, nil
}

func (t *tx) ExpireAppAPIKeys(ctx context.Context, appID string, at time.Time) error {
	_, err := t.exec(ctx, `UPDATE api_keys SET expires_at = $2 WHERE app_id = $1 AND (expires_at IS NULL OR expires_at > $2)`, appID, at)
	return wrap(err, "expiring API keys")
}

func (t *tx) InsertJob(ctx context.Context, j apps.Job) error {
	_, err := t.exec(ctx, `INSERT INTO jobs (id, app_id, kind, status, result, created_at, run_after, finished_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		j.ID, j.AppID, string(j.Kind), string(j.Status), jsonArg(j.Result), j.CreatedAt, j.RunAfter, j.FinishedAt)
	return wrap(err, "inserting a job")
}

// RescheduleJob waits for a runner's claim of the row, if one holds it,
// and then finds the job running: nothing is written.
func (t *tx) RescheduleJob(ctx context.Context, jobID string, runAfter time.Time) (bool, error) {
	n, err := t.exec(ctx, `UPDATE jobs SET run_after = $2 WHERE id = $1 AND status = 'queued'`, jobID, runAfter)
	return n == 1, wrap(err, "rescheduling a job")
}

func (t *tx) AppJobs(ctx context.Context, appID string) ([]apps.Job, error) {
	var out []apps.Job
	err := t.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE app_id = $1 ORDER BY created_at, id`,
		[]any{appID}, func(rows pgx.Rows) error {
			j, err := scanJob(rows)
			out = append(out, j)
			return err
		})
	return out, wrap(err, "reading jobs")
}

func (t *tx) InsertAdminAudit(ctx context.Context, e apps.AuditEntry) error {
	_, err := t.exec(ctx, `INSERT INTO admin_audit (id, actor, action, subject, detail, at) VALUES ($1, $2, $3, $4, $5, $6)`,
		e.ID, e.Actor, e.Action, e.Subject, jsonArg(e.Detail), e.At)
	return wrap(err, "recording an audit entry")
}

func (t *tx) SetAppEarnMode(ctx context.Context, id string, mode ledger.EarnMode, at time.Time) error {
	_, err := t.exec(ctx, `UPDATE apps SET earn_mode = $1, updated_at = $2 WHERE id = $3`, string(mode), at, id)
	return wrap(err, "setting an app's earn mode")
}

func (t *tx) InsertEarnModeChange(ctx context.Context, c apps.EarnModeChange) error {
	_, err := t.exec(ctx, `INSERT INTO app_earn_mode_changes (app_id, from_mode, to_mode, at) VALUES ($1, $2, $3, $4)`,
		c.AppID, string(c.From), string(c.To), c.At)
	return wrap(err, "recording an earn mode change")
}

func (t *tx) LastEarnModeChange(ctx context.Context, appID string) (apps.EarnModeChange, bool, error) {
	c := apps.EarnModeChange{AppID: appID}
	var from, to string
	err := t.queryRow(ctx, `SELECT from_mode, to_mode, at FROM app_earn_mode_changes WHERE app_id = $1 ORDER BY seq DESC LIMIT 1`,
		[]any{appID}, &from, &to, &c.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return apps.EarnModeChange{}, false, nil
	}
	if err != nil {
		return apps.EarnModeChange{}, false, wrap(err, "reading the earn mode history")
	}
	c.From, c.To, c.At = ledger.EarnMode(from), ledger.EarnMode(to), c.At.UTC()
	return c, true, nil
}
