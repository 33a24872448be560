package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/gate/contact"
)

// The contact challenge store (server/gate/contact). Each method is one
// statement. ConsumeChallenge is a compare-and-set (UPDATE … WHERE used_at
// IS NULL: at READ COMMITTED the second of two concurrent updates re-checks
// the condition on the row the first committed, and changes nothing);
// AddCodeAttempt an atomic increment.

var _ contact.Store = (*tx)(nil)

const challengeColumns = `id, subject, email, token_hash, code_salt, code_hash, created_at, expires_at, used_at, code_attempts`

func (t *tx) InsertChallenge(ctx context.Context, c contact.Challenge) error {
	var used *time.Time
	if !c.UsedAt.IsZero() {
		used = &c.UsedAt
	}
	_, err := t.exec(ctx, `INSERT INTO contact_challenges (`+challengeColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.ID, c.Subject, c.Email, c.TokenHash, c.CodeSalt, c.CodeHash, c.CreatedAt, c.ExpiresAt, used, c.CodeAttempts)
	return wrap(err, "inserting a contact challenge")
}

func (t *tx) challenge(ctx context.Context, where string, args ...any) (contact.Challenge, error) {
	var c contact.Challenge
	var used *time.Time
	err := t.queryRow(ctx, `SELECT `+challengeColumns+` FROM contact_challenges `+where, args,
		&c.ID, &c.Subject, &c.Email, &c.TokenHash, &c.CodeSalt, &c.CodeHash, &c.CreatedAt, &c.ExpiresAt, &used, &c.CodeAttempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return contact.Challenge{}, contact.ErrNotFound
	}
	if err != nil {
		return contact.Challenge{}, wrap(err, "reading a contact challenge")
	}
	c.CreatedAt, c.ExpiresAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC()
	if used != nil {
		c.UsedAt = used.UTC()
	}
	return c, nil
}

func (t *tx) ChallengeByTokenHash(ctx context.Context, h []byte) (contact.Challenge, error) {
	return t.challenge(ctx, `WHERE token_hash = $1`, h)
}

func (t *tx) LatestChallenge(ctx context.Context, subject string) (contact.Challenge, error) {
	return t.challenge(ctx, `WHERE subject = $1 ORDER BY created_at DESC, seq DESC LIMIT 1`, subject)
}

func (t *tx) ChallengesSince(ctx context.Context, subject string, since time.Time) ([]time.Time, error) {
	var out []time.Time
	err := t.query(ctx, `SELECT created_at FROM contact_challenges WHERE subject = $1 AND created_at > $2 ORDER BY created_at, seq`,
		[]any{subject, since}, func(rows pgx.Rows) error {
			var at time.Time
			if err := rows.Scan(&at); err != nil {
				return err
			}
			out = append(out, at.UTC())
			return nil
		})
	return out, wrap(err, "reading recent contact challenges")
}

func (t *tx) ConsumeChallenge(ctx context.Context, id string, at time.Time) (bool, error) {
	n, err := t.exec(ctx, `UPDATE contact_challenges SET used_at = $1 WHERE id = $2 AND used_at IS NULL`, at, id)
	if err != nil {
		return false, wrap(err, "completing a contact challenge")
	}
	return n == 1, nil
}

func (t *tx) AddCodeAttempt(ctx context.Context, id string) (int, error) {
	var n int
	err := t.queryRow(ctx, `UPDATE contact_challenges SET code_attempts = code_attempts + 1 WHERE id = $1 RETURNING code_attempts`, []any{id}, &n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: %s", contact.ErrNotFound, id)
	}
	return n, wrap(err, "counting a code attempt")
}
