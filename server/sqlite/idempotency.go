package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/xpromo/xpromo/server/idempotency"
)

// The idempotency domain's Tx methods (table idempotency_keys). SQLite has
// one writer, so a write transaction already excludes every other: the
// "lock" in LockIdempotencyKey is the transaction itself.

func (t *tx) InsertIdempotencyKey(ctx context.Context, r idempotency.Record) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO idempotency_keys (scope, key, claim, holder, fingerprint, state, created_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope, key) DO NOTHING`,
		r.Scope, r.Key, r.Claim, r.Holder, r.Fingerprint, string(r.State), micros(r.CreatedAt), micros(r.ExpiresAt))
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

func (t *tx) LockIdempotencyKey(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	r := idempotency.Record{Scope: scope, Key: key}
	var state, headers string
	var created, expires int64
	err := t.tx.QueryRowContext(ctx, `SELECT claim, holder, fingerprint, state, status, content_type, headers, body, created_at, expires_at
FROM idempotency_keys WHERE scope = ? AND key = ?`, scope, key).
		Scan(&r.Claim, &r.Holder, &r.Fingerprint, &state, &r.Status, &r.ContentType, &headers, &r.Body, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return idempotency.Record{}, false, nil
	}
	if err != nil {
		return idempotency.Record{}, false, wrap(err)
	}
	if r.Headers, err = idempotency.DecodeHeaders(headers); err != nil {
		return idempotency.Record{}, false, err
	}
	r.State, r.CreatedAt, r.ExpiresAt = idempotency.State(state), fromMicros(created), fromMicros(expires)
	return r, true, nil
}

func (t *tx) ReplaceIdempotencyKey(ctx context.Context, r idempotency.Record) error {
	headers, err := idempotency.EncodeHeaders(r.Headers)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, `UPDATE idempotency_keys SET claim = ?, holder = ?, fingerprint = ?, state = ?, status = ?, content_type = ?,
  headers = ?, body = ?, created_at = ?, expires_at = ? WHERE scope = ? AND key = ?`,
		r.Claim, r.Holder, r.Fingerprint, string(r.State), r.Status, r.ContentType, headers, idemBody(r.Body),
		micros(r.CreatedAt), micros(r.ExpiresAt), r.Scope, r.Key)
	return wrap(err)
}

func (t *tx) FinishIdempotencyKey(ctx context.Context, r idempotency.Record) (bool, error) {
	headers, err := idempotency.EncodeHeaders(r.Headers)
	if err != nil {
		return false, err
	}
	res, err := t.tx.ExecContext(ctx, `UPDATE idempotency_keys SET state = 'done', status = ?, content_type = ?, headers = ?, body = ?
WHERE scope = ? AND key = ? AND claim = ? AND state = 'in_progress'`,
		r.Status, r.ContentType, headers, idemBody(r.Body), r.Scope, r.Key, r.Claim)
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

func (t *tx) ReleaseIdempotencyKey(ctx context.Context, scope, key, claim string) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `UPDATE idempotency_keys SET created_at = ? WHERE scope = ? AND key = ? AND claim = ? AND state = 'in_progress'`, micros(idempotency.ReleasedAt), scope, key, claim)
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

func (t *tx) PurgeIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error) {
	res, err := t.tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE rowid IN
  (SELECT rowid FROM idempotency_keys WHERE expires_at <= ? LIMIT ?)`, micros(now), limit)
	if err != nil {
		return 0, wrap(err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap(err)
}

// idemBody keeps an empty body a zero-length BLOB rather than NULL.
func idemBody(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// IdempotencyHolderAlive: while an instance holds the file (HoldInstance),
// it is the only live holder; every other one, and claims recorded without
// a holder, belong to a process that is gone. Without one, every holder may
// be alive (claims wait out their lease).
func (t *tx) IdempotencyHolderAlive(_ context.Context, holder string) (bool, error) {
	return t.owner == "" || holder == t.owner, nil
}
