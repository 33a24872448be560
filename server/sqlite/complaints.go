package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/cursor"
)

// complaints.Tx on SQLite.

var _ complaints.Tx = (*tx)(nil)

const complaintColumns = `id, reporter_app_id, app_id, reason, detail, status, created_at, resolved_at, resolution_note`

func scanComplaint(sc interface{ Scan(...any) error }) (complaints.Complaint, error) {
	var c complaints.Complaint
	var reason, status string
	var created int64
	var resolved sql.NullInt64
	if err := sc.Scan(&c.ID, &c.ReporterID, &c.AppID, &reason, &c.Detail, &status, &created, &resolved, &c.Note); err != nil {
		return complaints.Complaint{}, err
	}
	c.Reason, c.Status, c.CreatedAt, c.ResolvedAt = complaints.Reason(reason), complaints.Status(status), fromMicros(created), fromNullMicros(resolved)
	return c, nil
}

func (t *tx) AppsTraded(ctx context.Context, a, b string) (bool, error) {
	var n int
	err := t.tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM chains WHERE publisher_app_id = ? AND advertiser_app_id = ?)
    OR EXISTS (SELECT 1 FROM chains WHERE publisher_app_id = ? AND advertiser_app_id = ?)`, a, b, b, a).Scan(&n)
	return n == 1, wrap(err)
}

func (t *tx) InsertComplaint(ctx context.Context, c complaints.Complaint) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO complaints (`+complaintColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.ReporterID, c.AppID, string(c.Reason), c.Detail, string(c.Status), micros(c.CreatedAt), nullMicros(c.ResolvedAt), c.Note)
	return wrap(err)
}

func (t *tx) oneComplaint(ctx context.Context, where string, args ...any) (complaints.Complaint, bool, error) {
	c, err := scanComplaint(t.tx.QueryRowContext(ctx, `SELECT `+complaintColumns+` FROM complaints WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return complaints.Complaint{}, false, nil
	}
	if err != nil {
		return complaints.Complaint{}, false, wrap(err)
	}
	return c, true, nil
}

func (t *tx) OpenComplaint(ctx context.Context, reporterID, appID string) (complaints.Complaint, bool, error) {
	return t.oneComplaint(ctx, `reporter_app_id = ? AND app_id = ? AND status = 'open'`, reporterID, appID)
}

// GetComplaint needs no row lock: a write transaction holds the database's
// only write lock.
func (t *tx) GetComplaint(ctx context.Context, id string, _ bool) (complaints.Complaint, bool, error) {
	return t.oneComplaint(ctx, `id = ?`, id)
}

func (t *tx) ResolveComplaint(ctx context.Context, id string, status complaints.Status, note string, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE complaints SET status = ?, resolution_note = ?, resolved_at = ? WHERE id = ? AND status = 'open'`,
		string(status), note, micros(at), id)
	return wrap(err)
}

func (t *tx) complaintList(ctx context.Context, where string, args ...any) ([]complaints.Complaint, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+complaintColumns+` FROM complaints `+where, args...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []complaints.Complaint
	for rows.Next() {
		c, err := scanComplaint(rows)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, c)
	}
	return out, wrap(rows.Err())
}

func (t *tx) ReporterComplaints(ctx context.Context, reporterID string, limit int) ([]complaints.Complaint, error) {
	return t.complaintList(ctx, `WHERE reporter_app_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, reporterID, limit)
}

func (t *tx) Complaints(ctx context.Context, status complaints.Status, after *cursor.Position, limit int) ([]complaints.Complaint, error) {
	where, args := `WHERE true`, []any{}
	if status != "" {
		where, args = where+` AND status = ?`, append(args, string(status))
	}
	if after != nil {
		at := micros(after.CreatedAt)
		where, args = where+` AND (created_at < ? OR (created_at = ? AND id < ?))`, append(args, at, at, after.ID)
	}
	return t.complaintList(ctx, where+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit)...)
}

func (t *tx) CountComplaints(ctx context.Context, appID string, status complaints.Status) (int, error) {
	var n int
	err := t.tx.QueryRowContext(ctx, `SELECT count(*) FROM complaints WHERE app_id = ? AND status = ?`, appID, string(status)).Scan(&n)
	return n, wrap(err)
}
