package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/cursor"
)

// complaints.Tx on PostgreSQL.

var _ complaints.Tx = (*tx)(nil)

const complaintColumns = `id, reporter_app_id, app_id, reason, detail, status, created_at, resolved_at, resolution_note`

func scanComplaint(row pgx.Row) (complaints.Complaint, error) {
	var c complaints.Complaint
	var reason, status string
	if err := row.Scan(&c.ID, &c.ReporterID, &c.AppID, &reason, &c.Detail, &status, &c.CreatedAt, &c.ResolvedAt, &c.Note); err != nil {
		return complaints.Complaint{}, err
	}
	c.Reason, c.Status, c.CreatedAt, c.ResolvedAt = complaints.Reason(reason), complaints.Status(status), c.CreatedAt.UTC(), utcPtr(c.ResolvedAt)
	return c, nil
}

func (t *tx) AppsTraded(ctx context.Context, a, b string) (bool, error) {
	var traded bool
	err := t.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM chains WHERE publisher_app_id = $1 AND advertiser_app_id = $2)
    OR EXISTS (SELECT 1 FROM chains WHERE publisher_app_id = $2 AND advertiser_app_id = $1)`, []any{a, b}, &traded)
	return traded, wrap(err, "looking for chains between two apps")
}

func (t *tx) InsertComplaint(ctx context.Context, c complaints.Complaint) error {
	_, err := t.exec(ctx, `INSERT INTO complaints (`+complaintColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		c.ID, c.ReporterID, c.AppID, string(c.Reason), c.Detail, string(c.Status), c.CreatedAt, c.ResolvedAt, c.Note)
	return wrap(err, "inserting a complaint")
}

func (t *tx) oneComplaint(ctx context.Context, q string, args ...any) (complaints.Complaint, bool, error) {
	var c complaints.Complaint
	var found bool
	err := t.query(ctx, `SELECT `+complaintColumns+` FROM complaints WHERE `+q, args, func(rows pgx.Rows) error {
		var err error
		c, err = scanComplaint(rows)
		found = true
		return err
	})
	if err != nil {
		return complaints.Complaint{}, false, wrap(err, "reading a complaint")
	}
	return c, found, nil
}

func (t *tx) OpenComplaint(ctx context.Context, reporterID, appID string) (complaints.Complaint, bool, error) {
	return t.oneComplaint(ctx, `reporter_app_id = $1 AND app_id = $2 AND status = 'open'`, reporterID, appID)
}

func (t *tx) GetComplaint(ctx context.Context, id string, lock bool) (complaints.Complaint, bool, error) {
	q := `id = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	return t.oneComplaint(ctx, q, id)
}

func (t *tx) ResolveComplaint(ctx context.Context, id string, status complaints.Status, note string, at time.Time) error {
	_, err := t.exec(ctx, `UPDATE complaints SET status = $1, resolution_note = $2, resolved_at = $3 WHERE id = $4 AND status = 'open'`,
		string(status), note, at, id)
	return wrap(err, "resolving a complaint")
}

func (t *tx) complaintList(ctx context.Context, q string, args ...any) ([]complaints.Complaint, error) {
	var out []complaints.Complaint
	err := t.query(ctx, `SELECT `+complaintColumns+` FROM complaints `+q, args, func(rows pgx.Rows) error {
		c, err := scanComplaint(rows)
		out = append(out, c)
		return err
	})
	return out, wrap(err, "listing complaints")
}

func (t *tx) ReporterComplaints(ctx context.Context, reporterID string, limit int) ([]complaints.Complaint, error) {
	return t.complaintList(ctx, `WHERE reporter_app_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, reporterID, limit)
}

func (t *tx) Complaints(ctx context.Context, status complaints.Status, after *cursor.Position, limit int) ([]complaints.Complaint, error) {
	where, args := `WHERE true`, []any{}
	if status != "" {
		args = append(args, string(status))
		where += fmt.Sprintf(` AND status = $%d`, len(args))
	}
	if after != nil {
		args = append(args, after.CreatedAt, after.ID)
		where += fmt.Sprintf(` AND (created_at, id) < ($%d, $%d)`, len(args)-1, len(args))
	}
	args = append(args, limit)
	return t.complaintList(ctx, where+fmt.Sprintf(` ORDER BY created_at DESC, id DESC LIMIT $%d`, len(args)), args...)
}

func (t *tx) CountComplaints(ctx context.Context, appID string, status complaints.Status) (int, error) {
	var n int64
	err := t.queryRow(ctx, `SELECT count(*) FROM complaints WHERE app_id = $1 AND status = $2`, []any{appID, string(status)}, &n)
	return int(n), wrap(err, "counting complaints")
}
