package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/jobs"
)

// The job runner's Tx methods (server/jobs). The transaction began
// IMMEDIATE and holds SQLite's one write lock, so a claim is exclusive
// without row locks.

// jobColumns are the columns scanJob reads, in its order.
const jobColumns = `id, app_id, kind, status, result, created_at, run_after, finished_at, attempts, holder, locked_until, last_error, last_error_message`

func scanJob(row scanner) (apps.Job, error) {
	var j apps.Job
	var kind, status string
	var result sql.NullString
	var created, runAfter int64
	var finished, lockedUntil sql.NullInt64
	if err := row.Scan(&j.ID, &j.AppID, &kind, &status, &result, &created, &runAfter, &finished,
		&j.Attempts, &j.Holder, &lockedUntil, &j.LastError, &j.LastErrorMessage); err != nil {
		return apps.Job{}, err
	}
	j.Kind, j.Status = xpromo.JobKind(kind), xpromo.JobStatus(status)
	if result.Valid {
		j.Result = json.RawMessage(result.String)
	}
	j.CreatedAt, j.RunAfter = fromMicros(created), fromMicros(runAfter)
	j.FinishedAt, j.LockedUntil = fromNullMicros(finished), fromNullMicros(lockedUntil)
	return j, nil
}

func (t *tx) ClaimJobs(ctx context.Context, c jobs.Claim) ([]apps.Job, error) {
	now := micros(c.Now)
	rows, err := t.tx.QueryContext(ctx, `UPDATE jobs SET status = 'running', holder = ?, locked_until = ?, attempts = attempts + 1
WHERE id IN (
  SELECT id FROM jobs WHERE kind = ? AND ((status = 'queued' AND run_after <= ?) OR (status = 'running' AND locked_until <= ?))
  ORDER BY run_after, id LIMIT ?)
RETURNING `+jobColumns,
		c.Holder, micros(c.Until), string(c.Kind), now, now, c.Limit)
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

func (t *tx) FinishJob(ctx context.Context, f jobs.Finish) (bool, error) {
	var result any
	if f.Result != nil {
		result = string(f.Result)
	}
	res, err := t.tx.ExecContext(ctx, `UPDATE jobs SET status = ?, result = ?, attempts = ?, run_after = ?, finished_at = ?,
  holder = '', locked_until = NULL, last_error = ?, last_error_message = ?
WHERE id = ? AND status = 'running' AND holder = ? AND attempts = ?`,
		string(f.Status), result, f.Attempts, micros(f.RunAfter), nullMicros(f.FinishedAt), f.LastError, f.LastErrorMessage,
		f.ID, f.Holder, f.Attempt)
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}
