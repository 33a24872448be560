// Package session is the dashboard's sign-in: single-use sign-in links
// minted with an app's API key, and the server-side sessions a sign-in
// starts. Only the SHA-256 of a link's or a session's token is stored
// (migration 00031), so a copy of the database signs nobody in.
//
// A session ends 30 minutes after its last request (idle) and 12 hours
// after it began (absolute), or at logout. The package does no I/O of its
// own: the store runs its Tx.
package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
)

// Lifetimes.
const (
	LinkLife     = 5 * time.Minute
	IdleLife     = 30 * time.Minute
	AbsoluteLife = 12 * time.Hour
)

// Roles a session has.
const (
	RoleApp      = "app"      // an app team: the app's own pages
	RoleOperator = "operator" // signed in with the admin token
)

// Session is a signed-in browser.
type Session struct {
	TokenHash  []byte
	Role       string
	AppID      string // RoleApp only
	CreatedAt  time.Time
	LastSeenAt time.Time
}

// Link is a minted sign-in link, until it is used or expires.
type Link struct {
	TokenHash []byte
	AppID     string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Tx is what the store does for sessions (sqlite and postgres,
// dashboard_sessions and dashboard_sign_in_links).
type Tx interface {
	InsertDashboardSession(ctx context.Context, s Session) error
	// DashboardSession reads a session by its token's hash; ok is false
	// when there is none.
	DashboardSession(ctx context.Context, tokenHash []byte) (s Session, ok bool, err error)
	// TouchDashboardSession records a request at at.
	TouchDashboardSession(ctx context.Context, tokenHash []byte, at time.Time) error
	DeleteDashboardSession(ctx context.Context, tokenHash []byte) error
	InsertSignInLink(ctx context.Context, l Link) error
	// UseSignInLink deletes the link and returns it, ok false when there
	// is none: of two requests using one link, one gets it.
	UseSignInLink(ctx context.Context, tokenHash []byte) (l Link, ok bool, err error)
	// PurgeDashboardSessions deletes the sessions last seen before
	// idleBefore or created before createdBefore, and the links that
	// expired before now; it returns how many rows went.
	PurgeDashboardSessions(ctx context.Context, idleBefore, createdBefore, now time.Time) (int, error)
}

// Txer runs fn in a transaction (storage.Updater).
type Txer func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

// Service mints links and starts, resumes and ends sessions.
type Service struct {
	Update Txer
	Now    func() time.Time
}

// ErrNoSession is what Resume answers for an unknown, idle-expired or
// absolutely expired session: the browser signs in again.
var ErrNoSession = errors.New("session: no live session")

// Hash is how a token is stored.
func Hash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// newToken draws 256 random bits, URL-safe.
func newToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// MintLink makes a sign-in link's token for appID, usable once within
// LinkLife.
func (s *Service) MintLink(ctx context.Context, appID string) (token string, expires time.Time, err error) {
	now := s.Now().UTC()
	token, expires = newToken(), now.Add(LinkLife)
	err = s.Update(ctx, func(ctx context.Context, tx Tx) error {
		return tx.InsertSignInLink(ctx, Link{TokenHash: Hash(token), AppID: appID, CreatedAt: now, ExpiresAt: expires})
	})
	return token, expires, err
}

// RedeemLink uses a sign-in link's token and starts an app session. A used,
// expired or unknown token is 401 sign_in_link_invalid (the three look
// alike on purpose).
func (s *Service) RedeemLink(ctx context.Context, linkToken string) (token string, sess Session, err error) {
	now := s.Now().UTC()
	err = s.Update(ctx, func(ctx context.Context, tx Tx) error {
		l, ok, err := tx.UseSignInLink(ctx, Hash(linkToken))
		if err != nil {
			return err
		}
		if !ok || !now.Before(l.ExpiresAt) {
			return apperr.New(apperr.SignInLinkInvalid, "this sign-in link was used already, has expired (links last %s) or never existed: mint a new one with `xpromo dashboard`", LinkLife)
		}
		token, sess, err = start(ctx, tx, now, RoleApp, l.AppID)
		return err
	})
	return token, sess, err
}

// Start begins a session of role (for appID when RoleApp) after the caller
// checked the credentials (an API key, the admin token).
func (s *Service) Start(ctx context.Context, role, appID string) (token string, sess Session, err error) {
	now := s.Now().UTC()
	err = s.Update(ctx, func(ctx context.Context, tx Tx) (err error) {
		token, sess, err = start(ctx, tx, now, role, appID)
		return err
	})
	return token, sess, err
}

func start(ctx context.Context, tx Tx, now time.Time, role, appID string) (string, Session, error) {
	token := newToken()
	sess := Session{TokenHash: Hash(token), Role: role, AppID: appID, CreatedAt: now, LastSeenAt: now}
	return token, sess, tx.InsertDashboardSession(ctx, sess)
}

// Resume finds the session of token and records this request, or answers
// ErrNoSession when it has ended (and deletes it then).
func (s *Service) Resume(ctx context.Context, token string) (sess Session, err error) {
	now := s.Now().UTC()
	h := Hash(token)
	live := false
	err = s.Update(ctx, func(ctx context.Context, tx Tx) error {
		got, ok, err := tx.DashboardSession(ctx, h)
		if err != nil || !ok {
			return err
		}
		if Expired(got, now) {
			// Returning nil commits the deletion; ErrNoSession is
			// answered after the transaction.
			return tx.DeleteDashboardSession(ctx, h)
		}
		sess, live = got, true
		sess.LastSeenAt = now
		return tx.TouchDashboardSession(ctx, h, now)
	})
	if err == nil && !live {
		return Session{}, ErrNoSession
	}
	return sess, err
}

// Expired tells whether sess has ended at now: idle for IdleLife, or
// AbsoluteLife after it began.
func Expired(sess Session, now time.Time) bool {
	return !now.Before(sess.LastSeenAt.Add(IdleLife)) || !now.Before(sess.CreatedAt.Add(AbsoluteLife))
}

// End deletes the session of token (logout); an unknown token is no error.
func (s *Service) End(ctx context.Context, token string) error {
	return s.Update(ctx, func(ctx context.Context, tx Tx) error {
		return tx.DeleteDashboardSession(ctx, Hash(token))
	})
}

// Purge deletes the ended sessions and links (the background sweep).
func (s *Service) Purge(ctx context.Context) (n int, err error) {
	now := s.Now().UTC()
	err = s.Update(ctx, func(ctx context.Context, tx Tx) (err error) {
		n, err = tx.PurgeDashboardSessions(ctx, now.Add(-IdleLife), now.Add(-AbsoluteLife), now)
		return err
	})
	return n, err
}
