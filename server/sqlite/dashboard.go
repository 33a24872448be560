package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/xpromo/xpromo/server/dashboard/session"
)

// The dashboard's sessions and sign-in links (server/dashboard/session,
// migration 00031) on SQLite.

var _ session.Tx = (*tx)(nil)

func (t *tx) InsertDashboardSession(ctx context.Context, s session.Session) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO dashboard_sessions (token_hash, role, app_id, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?)`,
		s.TokenHash, s.Role, nullString(s.AppID), micros(s.CreatedAt), micros(s.LastSeenAt))
	return wrap(err)
}

func (t *tx) DashboardSession(ctx context.Context, tokenHash []byte) (session.Session, bool, error) {
	var (
		s              session.Session
		app            sql.NullString
		created, lastS int64
	)
	err := t.tx.QueryRowContext(ctx, `SELECT token_hash, role, app_id, created_at, last_seen_at FROM dashboard_sessions WHERE token_hash = ?`, tokenHash).
		Scan(&s.TokenHash, &s.Role, &app, &created, &lastS)
	if errors.Is(err, sql.ErrNoRows) {
		return session.Session{}, false, nil
	}
	if err != nil {
		return session.Session{}, false, wrap(err)
	}
	s.AppID, s.CreatedAt, s.LastSeenAt = app.String, fromMicros(created), fromMicros(lastS)
	return s, true, nil
}

func (t *tx) TouchDashboardSession(ctx context.Context, tokenHash []byte, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE dashboard_sessions SET last_seen_at = ? WHERE token_hash = ?`, micros(at), tokenHash)
	return wrap(err)
}

func (t *tx) DeleteDashboardSession(ctx context.Context, tokenHash []byte) error {
	_, err := t.tx.ExecContext(ctx, `DELETE FROM dashboard_sessions WHERE token_hash = ?`, tokenHash)
	return wrap(err)
}

func (t *tx) InsertSignInLink(ctx context.Context, l session.Link) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO dashboard_sign_in_links (token_hash, app_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		l.TokenHash, l.AppID, micros(l.CreatedAt), micros(l.ExpiresAt))
	return wrap(err)
}

func (t *tx) UseSignInLink(ctx context.Context, tokenHash []byte) (session.Link, bool, error) {
	var (
		l                session.Link
		created, expires int64
	)
	err := t.tx.QueryRowContext(ctx, `DELETE FROM dashboard_sign_in_links WHERE token_hash = ? RETURNING token_hash, app_id, created_at, expires_at`, tokenHash).
		Scan(&l.TokenHash, &l.AppID, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return session.Link{}, false, nil
	}
	if err != nil {
		return session.Link{}, false, wrap(err)
	}
	l.CreatedAt, l.ExpiresAt = fromMicros(created), fromMicros(expires)
	return l, true, nil
}

func (t *tx) PurgeDashboardSessions(ctx context.Context, idleBefore, createdBefore, now time.Time) (int, error) {
	a, err := t.tx.ExecContext(ctx, `DELETE FROM dashboard_sessions WHERE last_seen_at <= ? OR created_at <= ?`, micros(idleBefore), micros(createdBefore))
	if err != nil {
		return 0, wrap(err)
	}
	b, err := t.tx.ExecContext(ctx, `DELETE FROM dashboard_sign_in_links WHERE expires_at <= ?`, micros(now))
	if err != nil {
		return 0, wrap(err)
	}
	na, _ := a.RowsAffected()
	nb, _ := b.RowsAffected()
	return int(na + nb), nil
}

// nullString stores "" as NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
