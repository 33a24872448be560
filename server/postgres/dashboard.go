package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/dashboard/session"
)

// The dashboard's sessions and sign-in links (server/dashboard/session,
// migration 00031) on PostgreSQL. UseSignInLink is one DELETE … RETURNING:
// of two transactions using one link, the second finds no row.

var _ session.Tx = (*tx)(nil)

func (t *tx) InsertDashboardSession(ctx context.Context, s session.Session) error {
	var app *string
	if s.AppID != "" {
		app = &s.AppID
	}
	_, err := t.exec(ctx, `INSERT INTO dashboard_sessions (token_hash, role, app_id, created_at, last_seen_at) VALUES ($1, $2, $3, $4, $5)`,
		s.TokenHash, s.Role, app, s.CreatedAt, s.LastSeenAt)
	return wrap(err, "inserting a dashboard session")
}

func (t *tx) DashboardSession(ctx context.Context, tokenHash []byte) (session.Session, bool, error) {
	var (
		s   session.Session
		app *string
	)
	err := t.queryRow(ctx, `SELECT token_hash, role, app_id, created_at, last_seen_at FROM dashboard_sessions WHERE token_hash = $1`,
		[]any{tokenHash}, &s.TokenHash, &s.Role, &app, &s.CreatedAt, &s.LastSeenAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Session{}, false, nil
	}
	if err != nil {
		return session.Session{}, false, wrap(err, "reading a dashboard session")
	}
	if app != nil {
		s.AppID = *app
	}
	s.CreatedAt, s.LastSeenAt = s.CreatedAt.UTC(), s.LastSeenAt.UTC()
	return s, true, nil
}

func (t *tx) TouchDashboardSession(ctx context.Context, tokenHash []byte, at time.Time) error {
	_, err := t.exec(ctx, `UPDATE dashboard_sessions SET last_seen_at = $1 WHERE token_hash = $2`, at, tokenHash)
	return wrap(err, "touching a dashboard session")
}

func (t *tx) DeleteDashboardSession(ctx context.Context, tokenHash []byte) error {
	_, err := t.exec(ctx, `DELETE FROM dashboard_sessions WHERE token_hash = $1`, tokenHash)
	return wrap(err, "deleting a dashboard session")
}

func (t *tx) InsertSignInLink(ctx context.Context, l session.Link) error {
	_, err := t.exec(ctx, `INSERT INTO dashboard_sign_in_links (token_hash, app_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
		l.TokenHash, l.AppID, l.CreatedAt, l.ExpiresAt)
	return wrap(err, "inserting a sign-in link")
}

func (t *tx) UseSignInLink(ctx context.Context, tokenHash []byte) (session.Link, bool, error) {
	var l session.Link
	err := t.queryRow(ctx, `DELETE FROM dashboard_sign_in_links WHERE token_hash = $1 RETURNING token_hash, app_id, created_at, expires_at`,
		[]any{tokenHash}, &l.TokenHash, &l.AppID, &l.CreatedAt, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Link{}, false, nil
	}
	if err != nil {
		return session.Link{}, false, wrap(err, "using a sign-in link")
	}
	l.CreatedAt, l.ExpiresAt = l.CreatedAt.UTC(), l.ExpiresAt.UTC()
	return l, true, nil
}

func (t *tx) PurgeDashboardSessions(ctx context.Context, idleBefore, createdBefore, now time.Time) (int, error) {
	a, err := t.exec(ctx, `DELETE FROM dashboard_sessions WHERE last_seen_at <= $1 OR created_at <= $2`, idleBefore, createdBefore)
	if err != nil {
		return 0, wrap(err, "purging dashboard sessions")
	}
	b, err := t.exec(ctx, `DELETE FROM dashboard_sign_in_links WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, wrap(err, "purging sign-in links")
	}
	return int(a + b), nil
}
