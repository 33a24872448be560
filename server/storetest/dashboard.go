package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/dashboard/session"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
)

// DashboardSessions runs the suite of the dashboard's sessions and sign-in
// links (server/dashboard/session, migration 00031) on a fresh store from
// newStore: the sqlite and postgres packages call it.
func DashboardSessions(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("LinkOnceAndExpiry", func(t *testing.T) { testSignInLinks(t, newStore(t)) })
	t.Run("LinkRace", func(t *testing.T) { testSignInLinkRace(t, newStore(t)) })
	t.Run("IdleAbsoluteAndEnd", func(t *testing.T) { testSessionLife(t, newStore(t)) })
	t.Run("Purge", func(t *testing.T) { testSessionPurge(t, newStore(t)) })
}

// sessions is the session service on s, on a clock the test moves.
func sessions(t *testing.T, s storage.Store) (*session.Service, *time.Time) {
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertApp(ctx, apps.App{ID: "app_dash", Name: "Dash", Platform: xpromo.PlatformMac, BundleID: "com.example.dash",
			Domain: "example.com", DownloadURL: "https://example.com/a.zip", ContactEmail: "dev@example.com",
			Status: xpromo.AppStatusLive, EarnMode: ledger.EarnCash, CreatedAt: now, UpdatedAt: now})
	})
	return &session.Service{Update: session.Txer(storage.Updater[session.Tx](s)), Now: func() time.Time { return now }}, &now
}

func testSignInLinks(t *testing.T, s storage.Store) {
	ctx := context.Background()
	svc, now := sessions(t, s)
	link, expires, err := svc.MintLink(ctx, "app_dash")
	require.NoError(t, err)
	assert.Equal(t, now.Add(session.LinkLife), expires)
	token, sess, err := svc.RedeemLink(ctx, link)
	require.NoError(t, err)
	assert.Equal(t, session.RoleApp, sess.Role)
	assert.Equal(t, "app_dash", sess.AppID)
	got, err := svc.Resume(ctx, token)
	require.NoError(t, err)
	assert.Equal(t, "app_dash", got.AppID)
	assert.Equal(t, session.Hash(token), got.TokenHash, "only the hash is stored")

	_, _, err = svc.RedeemLink(ctx, link)
	assert.True(t, apperr.Is(err, apperr.SignInLinkInvalid), "a used link: %v", err)
	_, _, err = svc.RedeemLink(ctx, "never-minted")
	assert.True(t, apperr.Is(err, apperr.SignInLinkInvalid), "an unknown link: %v", err)

	late, _, err := svc.MintLink(ctx, "app_dash")
	require.NoError(t, err)
	*now = now.Add(session.LinkLife)
	_, _, err = svc.RedeemLink(ctx, late)
	assert.True(t, apperr.Is(err, apperr.SignInLinkInvalid), "an expired link: %v", err)
}

func testSignInLinkRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	svc, _ := sessions(t, s)
	link, _, err := svc.MintLink(ctx, "app_dash")
	require.NoError(t, err)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
	)
	for range 4 {
		wg.Go(func() {
			_, _, err := svc.RedeemLink(ctx, link)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else {
				assert.True(t, apperr.Is(err, apperr.SignInLinkInvalid), "%v", err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 1, wins, "one browser signs in with a link")
}

func testSessionLife(t *testing.T, s storage.Store) {
	ctx := context.Background()
	svc, now := sessions(t, s)
	start := *now
	token, _, err := svc.Start(ctx, session.RoleOperator, "")
	require.NoError(t, err)
	// Each request within 30 minutes keeps it; it ends 12 hours after it began.
	for now.Add(session.IdleLife - time.Minute).Before(start.Add(session.AbsoluteLife)) {
		*now = now.Add(session.IdleLife - time.Minute)
		got, err := svc.Resume(ctx, token)
		require.NoError(t, err, "at %s", now.Sub(start))
		assert.Equal(t, session.RoleOperator, got.Role)
		assert.Equal(t, *now, got.LastSeenAt)
	}
	*now = start.Add(session.AbsoluteLife)
	_, err = svc.Resume(ctx, token)
	assert.ErrorIs(t, err, session.ErrNoSession, "absolute expiry")

	token, _, err = svc.Start(ctx, session.RoleApp, "app_dash")
	require.NoError(t, err)
	*now = now.Add(session.IdleLife)
	_, err = svc.Resume(ctx, token)
	assert.ErrorIs(t, err, session.ErrNoSession, "idle expiry")

	token, _, err = svc.Start(ctx, session.RoleApp, "app_dash")
	require.NoError(t, err)
	require.NoError(t, svc.End(ctx, token))
	_, err = svc.Resume(ctx, token)
	assert.ErrorIs(t, err, session.ErrNoSession, "signed out")
	require.NoError(t, svc.End(ctx, token), "ending an ended session is no error")
}

func testSessionPurge(t *testing.T, s storage.Store) {
	ctx := context.Background()
	svc, now := sessions(t, s)
	old, _, err := svc.Start(ctx, session.RoleApp, "app_dash")
	require.NoError(t, err)
	_, _, err = svc.MintLink(ctx, "app_dash")
	require.NoError(t, err)
	*now = now.Add(session.IdleLife)
	fresh, _, err := svc.Start(ctx, session.RoleApp, "app_dash")
	require.NoError(t, err)
	n, err := svc.Purge(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the idle session and the expired link")
	_, err = svc.Resume(ctx, old)
	assert.ErrorIs(t, err, session.ErrNoSession)
	_, err = svc.Resume(ctx, fresh)
	assert.NoError(t, err)
}
