package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/jobs"
)

// The job runner's Tx methods (server/jobs).

var _ jobs.Tx = (*tx)(nil)

// jobColumns are the columns scanJob reads, in its order.
const jobColumns = `id, app_id, kind, status, result, created_at, run_after, finished_at, attempts, holder, locked_until, last_error, last_error_message`

func scanJob(rows pgx.Rows) (apps.Job, error) {
	var j apps.Job
	var kind, status string
	var result []byte
	if err := rows.Scan(&j.ID, &j.AppID, &kind, &status, &result, &j.CreatedAt, &j.RunAfter, &j.FinishedAt,
		&j.Attempts, &j.Holder, &j.LockedUntil, &j.LastError, &j.LastErrorMessage); err != nil {
		return apps.Job{}, err
	}
	j.Kind, j.Status = xpromo.JobKind(kind), xpromo.JobStatus(status)
	if result != nil {
		j.Result = json.RawMessage(result)
	}
	j.CreatedAt, j.RunAfter = j.CreatedAt.UTC(), j.RunAfter.UTC()
	j.FinishedAt, j.LockedUntil = utcPtr(j.FinishedAt), utcPtr(j.LockedUntil)
	return j, nil
}

// ClaimJobs locks the due rows with FOR UPDATE SKIP LOCKED: concurrent
// claims (other instances) take disjoint jobs and never wait for each
// other. At READ COMMITTED a row another claim updated and committed
// meanwhile is re-checked against the condition on its new version, so a
// job just claimed (running, lease in the future) is not claimed again.
func (t *tx) ClaimJobs(ctx context.Context, c jobs.Claim) ([]apps.Job, error) {
	var out []apps.Job
	err := t.query(ctx, `UPDATE jobs SET status = 'running', holder = $1, locked_until = $2, attempts = attempts + 1
WHERE id IN (
  SELECT id FROM jobs WHERE kind = $3 AND ((status = 'queued' AND run_after <= $4) OR (status = 'running' AND locked_until <= $4))
  ORDER BY run_after, id LIMIT $5 FOR UPDATE SKIP LOCKED)
RETURNING `+jobColumns,
		[]any{c.Holder, c.Until, string(c.Kind), c.Now, c.Limit}, func(rows pgx.Rows) error {
			j, err := scanJob(rows)
			out = append(out, j)
			return err
		})
	return out, wrap(err, "claiming jobs")
}

func (t *tx) FinishJob(ctx context.Context, f jobs.Finish) (bool, error) {
	n, err := t.exec(ctx, `UPDATE jobs SET status = $1, result = $2, attempts = $3, run_after = $4, finished_at = $5,
  holder = '', locked_until = NULL, last_error = $6, last_error_message = $7
WHERE id = $8 AND status = 'running' AND holder = $9 AND attempts = $10`,
		string(f.Status), jsonArg(f.Result), f.Attempts, f.RunAfter, f.FinishedAt, f.LastError, f.LastErrorMessage,
		f.ID, f.Holder, f.Attempt)
	if err != nil {
		return false, wrap(err, "finishing a job")
	}
	return n == 1, nil
}
