package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/xpromo/xpromo/server/gate/contact"
)

// The contact challenge store (server/gate/contact). Each method is one
// statement; ConsumeChallenge and AddCodeAttempt are atomic on their own
// (and the write transaction holds SQLite's one write lock anyway).

var _ contact.Store = (*tx)(nil)

const challengeColumns = `id, subject, email, token_hash, code_salt, code_hash, created_at, expires_at, used_at, code_attempts`

func (t *tx) InsertChallenge(ctx context.Context, c contact.Challenge) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO contact_challenges (`+challengeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.Subject, c.Email, c.TokenHash, c.CodeSalt, c.CodeHash, micros(c.CreatedAt), micros(c.ExpiresAt),
		zeroNullMicros(c.UsedAt), c.CodeAttempts)
	return wrap(err)
}

func (t *tx) challenge(ctx context.Context, where string, args ...any) (contact.Challenge, error) {
	var c contact.Challenge
	var created, expires int64
	var used sql.NullInt64
	err := t.tx.QueryRowContext(ctx, `SELECT `+challengeColumns+` FROM contact_challenges `+where, args...).Scan(
		&c.ID, &c.Subject, &c.Email, &c.TokenHash, &c.CodeSalt, &c.CodeHash, &created, &expires, &used, &c.CodeAttempts)
	if errors.Is(err, sql.ErrNoRows) {
		return contact.Challenge{}, contact.ErrNotFound
	}
	if err != nil {
		return contact.Challenge{}, wrap(err)
	}
	c.CreatedAt, c.ExpiresAt = fromMicros(created), fromMicros(expires)
	if used.Valid {
		c.UsedAt = fromMicros(used.Int64)
	}
	return c, nil
}

func (t *tx) ChallengeByTokenHash(ctx context.Context, h []byte) (contact.Challenge, error) {
	return t.challenge(ctx, `WHERE token_hash = ?`, h)
}

func (t *tx) LatestChallenge(ctx context.Context, subject string) (contact.Challenge, error) {
	return t.challenge(ctx, `WHERE subject = ? ORDER BY created_at DESC, seq DESC LIMIT 1`, subject)
}

func (t *tx) ChallengesSince(ctx context.Context, subject string, since time.Time) ([]time.Time, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT created_at FROM contact_challenges WHERE subject = ? AND created_at > ? ORDER BY created_at, seq`,
		subject, micros(since))
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var us int64
		if err := rows.Scan(&us); err != nil {
			return nil, wrap(err)
		}
		out = append(out, fromMicros(us))
	}
	return out, wrap(rows.Err())
}

func (t *tx) ConsumeChallenge(ctx context.Context, id string, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `UPDATE contact_challenges SET used_at = ? WHERE id = ? AND used_at IS NULL`, micros(at), id)
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

func (t *tx) AddCodeAttempt(ctx context.Context, id string) (int, error) {
	var n int
	err := t.tx.QueryRowContext(ctx, `UPDATE contact_challenges SET code_attempts = code_attempts + 1 WHERE id = ? RETURNING code_attempts`, id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: %s", contact.ErrNotFound, id)
	}
	return n, wrap(err)
}

// zeroNullMicros maps the zero time to SQL NULL.
func zeroNullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return micros(t)
}
