package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/ledger"
)

// apps.Tx on SQLite. GetApp's lock needs no row lock: a write transaction
// holds the database's only write lock from BEGIN IMMEDIATE.

var _ apps.Tx = (*tx)(nil)

func nullMicros(t *time.Time) any {
	if t == nil {
		return nil
	}
	return micros(*t)
}

func fromNullMicros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

func (t *tx) InsertApp(ctx context.Context, a apps.App) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO apps (id, name, platform, bundle_id, domain, download_url, contact_email, category, status, earn_mode, created_at, updated_at, appcast_url)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.Name, string(a.Platform), a.BundleID, a.Domain, a.DownloadURL, a.ContactEmail, a.Category,
		string(a.Status), string(a.EarnMode), micros(a.CreatedAt), micros(a.UpdatedAt), a.AppcastURL)
	return wrap(err)
}

const appColumns = `id, name, platform, bundle_id, domain, download_url, contact_email, category, status, earn_mode, created_at, updated_at, appcast_url`

func scanApp(sc scanner) (apps.App, error) {
	var a apps.App
	var platform, status, mode string
	var created, updated int64
	if err := sc.Scan(&a.ID, &a.Name, &platform, &a.BundleID, &a.Domain, &a.DownloadURL, &a.ContactEmail, &a.Category, &status, &mode, &created, &updated, &a.AppcastURL); err != nil {
		return apps.App{}, err
	}
	a.Platform, a.Status, a.EarnMode = xpromo.Platform(platform), xpromo.AppStatus(status), ledger.EarnMode(mode)
	a.CreatedAt, a.UpdatedAt = fromMicros(created), fromMicros(updated)
	return a, nil
}

func (t *tx) GetApp(ctx context.Context, id string, lock bool) (apps.App, bool, error) {
	a, err := scanApp(t.tx.QueryRowContext(ctx, `SELECT `+appColumns+` FROM apps WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return apps.App{}, false, nil
	}
	if err != nil {
		return apps.App{}, false, wrap(err)
	}
	return a, true, nil
}

func (t *tx) SetAppStatus(ctx context.Context, id string, status xpromo.AppStatus, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE apps SET status = ?, updated_at = ? WHERE id = ?`, string(status), micros(at), id)
	return wrap(err)
}

func (t *tx) SetAppAppcastURL(ctx context.Context, id, url string, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE apps SET appcast_url = ?, updated_at = ? WHERE id = ?`, url, micros(at), id)
	return wrap(err)
}

func (t *tx) InsertAppStatusChange(ctx context.Context, c apps.StatusChange) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO app_status_history (app_id, from_status, to_status, reason, actor, at) VALUES (?, ?, ?, ?, ?, ?)`,
		c.AppID, null(string(c.From)), string(c.To), c.Reason, c.Actor, micros(c.At))
	return wrap(err)
}

func (t *tx) AppStatusHistory(ctx context.Context, appID string) ([]apps.StatusChange, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT app_id, coalesce(from_status, ''), to_status, reason, actor, at FROM app_status_history WHERE app_id = ? ORDER BY seq`, appID)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []apps.StatusChange
	for rows.Next() {
		var c apps.StatusChange
		var from, to string
		var at int64
		if err := rows.Scan(&c.AppID, &from, &to, &c.Reason, &c.Actor, &at); err != nil {
			return nil, wrap(err)
		}
		c.From, c.To, c.At = xpromo.AppStatus(from), xpromo.AppStatus(to), fromMicros(at)
		out = append(out, c)
	}
	return out, wrap(rows.Err())
}

func (t *tx) InsertAPIKey(ctx context.Context, k apps.APIKey) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO api_keys (key_hash, app_id, prefix, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
		k.Hash, k.AppID, k.Prefix, micros(k.CreatedAt), nullMicros(k.ExpiresAt))
	return wrap(err)
}

func (t *tx) APIKeyByHash(ctx context.Context, hash string) (apps.APIKey, bool, error) {
	k := apps.APIKey{Hash: hash}
	var created int64
	var expires sql.NullInt64
	err := t.tx.QueryRowContext(ctx, `SELECT app_id, prefix, created_at, expires_at FROM api_keys WHERE key_hash = ?`, hash).
		Scan(&k.AppID, &k.Prefix, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return apps.APIKey{}, false, nil
	}
	if err != nil {
		return apps.APIKey{}, false, wrap(err)
	}
	k.CreatedAt, k.ExpiresAt = fromMicros(created), fromNullMicros(expires)
	return k, true, nil
}

func (t *tx) ExpireAppAPIKeys(ctx context.Context, appID string, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE api_keys SET expires_at = ? WHERE app_id = ? AND (expires_at IS NULL OR expires_at > ?)`,
		micros(at), appID, micros(at))
	return wrap(err)
}

func (t *tx) InsertJob(ctx context.Context, j apps.Job) error {
	var result any
	if j.Result != nil {
		result = string(j.Result)
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO jobs (id, app_id, kind, status, result, created_at, run_after, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		j.ID, j.AppID, string(j.Kind), string(j.Status), result, micros(j.CreatedAt), micros(j.RunAfter), nullMicros(j.FinishedAt))
	return wrap(err)
}

func (t *tx) RescheduleJob(ctx context.Context, jobID string, runAfter time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `UPDATE jobs SET run_after = ? WHERE id = ? AND status = 'queued'`, micros(runAfter), jobID)
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

func (t *tx) AppJobs(ctx context.Context, appID string) ([]apps.Job, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE app_id = ? ORDER BY created_at, id`, appID)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []apps.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, j)
	}
	return out, wrap(rows.Err())
}

func (t *tx) InsertAdminAudit(ctx context.Context, e apps.AuditEntry) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO admin_audit (id, actor, action, subject, detail, at) VALUES (?, ?, ?, ?, ?, ?)`,
		e.ID, e.Actor, e.Action, e.Subject, string(e.Detail), micros(e.At))
	return wrap(err)
}

func (t *tx) SetAppEarnMode(ctx context.Context, id string, mode ledger.EarnMode, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE apps SET earn_mode = ?, updated_at = ? WHERE id = ?`, string(mode), micros(at), id)
	return wrap(err)
}

func (t *tx) InsertEarnModeChange(ctx context.Context, c apps.EarnModeChange) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO app_earn_mode_changes (app_id, from_mode, to_mode, at) VALUES (?, ?, ?, ?)`,
		c.AppID, string(c.From), string(c.To), micros(c.At))
	return wrap(err)
}

func (t *tx) LastEarnModeChange(ctx context.Context, appID string) (apps.EarnModeChange, bool, error) {
	c := apps.EarnModeChange{AppID: appID}
	var from, to string
	var at int64
	err := t.tx.QueryRowContext(ctx, `SELECT from_mode, to_mode, at FROM app_earn_mode_changes WHERE app_id = ? ORDER BY seq DESC LIMIT 1`, appID).
		Scan(&from, &to, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return apps.EarnModeChange{}, false, nil
	}
	if err != nil {
		return apps.EarnModeChange{}, false, wrap(err)
	}
	c.From, c.To, c.At = ledger.EarnMode(from), ledger.EarnMode(to), fromMicros(at)
	return c, true, nil
}
