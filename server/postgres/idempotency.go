package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/idempotency"
)

// The idempotency domain's Tx methods (table idempotency_keys).
//
// Concurrent claims of one key serialise on its primary key: INSERT … ON
// CONFLICT DO NOTHING waits for a concurrent inserter to commit or roll back,
// and SELECT … FOR UPDATE then locks the row it left, so at READ COMMITTED
// every claimant sees the latest committed state of the key.

func (t *tx) InsertIdempotencyKey(ctx context.Context, r idempotency.Record) (bool, error) {
	n, err := t.exec(ctx, `INSERT INTO idempotency_keys (scope, key, claim, holder, fingerprint, state, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (scope, key) DO NOTHING`,
		r.Scope, r.Key, r.Claim, r.Holder, r.Fingerprint, string(r.State), r.CreatedAt, r.ExpiresAt)
	if err != nil {
		return false, wrap(err, "claiming an idempotency key")
	}
	return n == 1, nil
}

func (t *tx) LockIdempotencyKey(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	r := idempotency.Record{Scope: scope, Key: key}
	var state, headers string
	err := t.queryRow(ctx, `SELECT claim, holder, fingerprint, state, status, content_type, headers, body, created_at, expires_at
FROM idempotency_keys WHERE scope = $1 AND key = $2 FOR UPDATE`, []any{scope, key},
		&r.Claim, &r.Holder, &r.Fingerprint, &state, &r.Status, &r.ContentType, &headers, &r.Body, &r.CreatedAt, &r.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return idempotency.Record{}, false, nil
	}
	if err != nil {
		return idempotency.Record{}, false, wrap(err, "reading an idempotency key")
	}
	if r.Headers, err = idempotency.DecodeHeaders(headers); err != nil {
		return idempotency.Record{}, false, err
	}
	r.State, r.CreatedAt, r.ExpiresAt = idempotency.State(state), r.CreatedAt.UTC(), r.ExpiresAt.UTC()
	return r, true, nil
}

func (t *tx) ReplaceIdempotencyKey(ctx context.Context, r idempotency.Record) error {
	headers, err := idempotency.EncodeHeaders(r.Headers)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `UPDATE idempotency_keys SET claim = $3, holder = $12, fingerprint = $4, state = $5, status = $6, content_type = $7,
  headers = $8, body = $9, created_at = $10, expires_at = $11 WHERE scope = $1 AND key = $2`,
		r.Scope, r.Key, r.Claim, r.Fingerprint, string(r.State), r.Status, r.ContentType, headers, idemBody(r.Body),
		r.CreatedAt, r.ExpiresAt, r.Holder)
	return wrap(err, "re-claiming an idempotency key")
}

func (t *tx) FinishIdempotencyKey(ctx context.Context, r idempotency.Record) (bool, error) {
	headers, err := idempotency.EncodeHeaders(r.Headers)
	if err != nil {
		return false, err
	}
	n, err := t.exec(ctx, `UPDATE idempotency_keys SET state = 'done', status = $4, content_type = $5, headers = $6, body = $7
WHERE scope = $1 AND key = $2 AND claim = $3 AND state = 'in_progress'`,
		r.Scope, r.Key, r.Claim, r.Status, r.ContentType, headers, idemBody(r.Body))
	if err != nil {
		return false, wrap(err, "storing an idempotent response")
	}
	return n == 1, nil
}

func (t *tx) ReleaseIdempotencyKey(ctx context.Context, scope, key, claim string) (bool, error) {
	n, err := t.exec(ctx, `UPDATE idempotency_keys SET created_at = $4 WHERE scope = $1 AND key = $2 AND claim = $3 AND state = 'in_progress'`, scope, key, claim, idempotency.ReleasedAt)
	if err != nil {
		return false, wrap(err, "releasing an idempotency key")
	}
	return n == 1, nil
}

// PurgeIdempotencyKeys deletes a batch of expired rows. SKIP LOCKED leaves
// rows a claim is re-taking to that claim, and lets several instances purge
// at once without waiting for each other.
func (t *tx) PurgeIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error) {
	n, err := t.exec(ctx, `DELETE FROM idempotency_keys WHERE (scope, key) IN
  (SELECT scope, key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`, now, limit)
	if err != nil {
		return 0, wrap(err, "purging idempotency keys")
	}
	return int(n), nil
}

// idemBody keeps an empty body a zero-length bytea rather than NULL.
func idemBody(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// IdempotencyHolderAlive tries the holder's instance lock (HoldInstance),
// shared and until the end of the transaction: taken, the holder's session
// is gone. A shared try lets concurrent claims of one dead holder's keys all
// find out; a live holder's exclusive lock refuses every one.
func (t *tx) IdempotencyHolderAlive(ctx context.Context, holder string) (bool, error) {
	if holder == "" {
		return true, nil // claimed before holders were recorded
	}
	var free bool
	if err := t.queryRow(ctx, `SELECT pg_try_advisory_xact_lock_shared($1)`, []any{instanceLockKey(holder)}, &free); err != nil {
		return false, wrap(err, "checking an idempotency claim's holder")
	}
	return !free, nil
}
