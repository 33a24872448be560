package apps_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/sqlite"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

var ctx = context.Background()

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func newService(s storage.Store) (*apps.Service, *clocktest.Clock) {
	c := clocktest.New(t0)
	return &apps.Service{
		Update: storage.Updater[apps.Tx](s),
		View:   storage.Viewer[apps.Tx](s),
		Now:    c.Now,
	}, c
}

func validParams() apps.RegisterParams {
	return apps.RegisterParams{Name: "Snip", Platform: "mac", BundleID: "com.example.snip", Domain: "example.com",
		DownloadURL: "https://example.com/Snip.zip", ContactEmail: "dev@example.com"}
}

func register(t *testing.T, svc *apps.Service) (apps.App, string, apps.Job) {
	t.Helper()
	a, key, job, err := svc.Register(ctx, validParams())
	require.NoError(t, err)
	return a, key, job
}

// rawQuery reads one column of every row of a query straight from the
// database, beside the store.
func rawQuery(t *testing.T, s storage.Store, query string) []string {
	t.Helper()
	var out []string
	switch db := s.(type) {
	case *sqlite.DB:
		conn, err := sql.Open("sqlite", "file:"+db.Path()+"?mode=ro")
		require.NoError(t, err)
		defer conn.Close()
		rows, err := conn.QueryContext(ctx, query)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var v sql.NullString
			require.NoError(t, rows.Scan(&v))
			out = append(out, v.String)
		}
		require.NoError(t, rows.Err())
	case *postgres.DB:
		rows, err := db.Pool().Query(ctx, query)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var v *string
			require.NoError(t, rows.Scan(&v))
			if v != nil {
				out = append(out, *v)
			} else {
				out = append(out, "")
			}
		}
		require.NoError(t, rows.Err())
	default:
		t.Fatalf("unknown store %T", s)
	}
	return out
}

type execer interface {
	Exec(ctx context.Context, query string) error
}

func TestRegisterWritesEverythingInOneTransaction(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, _ := newService(s)
		p := validParams()
		p.Name, p.Domain, p.Category = "  Snip  ", "Example.COM", "productivity"
		a, key, job, err := svc.Register(ctx, p)
		require.NoError(t, err)

		assert.True(t, strings.HasPrefix(a.ID, "app_"), a.ID)
		assert.Equal(t, "Snip", a.Name, "trimmed")
		assert.Equal(t, "example.com", a.Domain, "lower-cased")
		assert.Equal(t, xpromo.AppStatusPending, a.Status)
		assert.Equal(t, "cash", string(a.EarnMode))
		assert.Regexp(t, `^xp_test_[0-9A-Za-z]{32}$`, key)
		assert.Equal(t, xpromo.JobScoring, job.Kind)

		require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			got, ok, err := tx.GetApp(ctx, a.ID, false)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, a, got, "stored as returned")
			assert.Equal(t, "productivity", got.Category)

			jobs, err := tx.AppJobs(ctx, a.ID)
			require.NoError(t, err)
			require.Len(t, jobs, 2)
			kinds := map[xpromo.JobKind]apps.Job{}
			for _, j := range jobs {
				kinds[j.Kind] = j
				assert.Equal(t, xpromo.JobQueued, j.Status)
				assert.Equal(t, t0, j.RunAfter)
				assert.Nil(t, j.Result)
				assert.Nil(t, j.FinishedAt)
			}
			assert.Equal(t, job, kinds[xpromo.JobScoring])
			assert.Contains(t, kinds, xpromo.JobGate)

			h, err := tx.AppStatusHistory(ctx, a.ID)
			require.NoError(t, err)
			assert.Equal(t, []apps.StatusChange{{AppID: a.ID, To: xpromo.AppStatusPending, Reason: "registered", Actor: apps.ActorSystem, At: t0}}, h)

			k, ok, err := tx.APIKeyByHash(ctx, apps.HashKey(key))
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, apps.APIKey{Hash: apps.HashKey(key), AppID: a.ID, Prefix: key[:12], CreatedAt: t0}, k)
			return nil
		}))

		appID, err := svc.Authenticate(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, a.ID, appID)
		j, err := svc.Job(ctx, a.ID, job.ID)
		require.NoError(t, err)
		assert.Equal(t, job, j)
	})
}

func TestRawKeyIsNeverStored(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, _ := newService(s)
		_, key, _ := register(t, svc)
		rotated, _, err := svc.RotateKey(ctx, mustAuth(t, svc, key))
		require.NoError(t, err)

		hashes := rawQuery(t, s, `SELECT key_hash FROM api_keys ORDER BY created_at`)
		assert.ElementsMatch(t, []string{apps.HashKey(key), apps.HashKey(rotated)}, hashes)
		// Every column of every row, as text: the secret part appears nowhere.
		rows := rawQuery(t, s, `SELECT key_hash || '|' || app_id || '|' || prefix FROM api_keys`)
		require.Len(t, rows, 2)
		for _, row := range rows {
			for _, k := range []string{key, rotated} {
				assert.NotContains(t, row, k)
				assert.NotContains(t, row, k[12:], "only the 12-character display prefix is stored in clear")
			}
		}
		assert.ElementsMatch(t, []string{key[:12], rotated[:12]}, rawQuery(t, s, `SELECT prefix FROM api_keys`))
	})
}

func mustAuth(t *testing.T, svc *apps.Service, key string) string {
	t.Helper()
	id, err := svc.Authenticate(ctx, key)
	require.NoError(t, err)
	return id
}

func assertUnauthorized(t *testing.T, svc *apps.Service, key string) {
	t.Helper()
	_, err := svc.Authenticate(ctx, key)
	assert.True(t, apperr.Is(err, apperr.Unauthorized), "want unauthorized, got %v", err)
}

func TestAuthenticate(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, _ := newService(s)
		_, key, _ := register(t, svc)
		mustAuth(t, svc, key)

		other := "xp_test_" + strings.Repeat("A", 32) // well formed, never issued
		for _, bad := range []string{"", other, key[:len(key)-1], key + "x", strings.Replace(key, "xp_test_", "xp_live_", 1), strings.ToUpper(key)} {
			assertUnauthorized(t, svc, bad)
		}
		live := *svc
		live.Live = true
		assertUnauthorized(t, &live, key) // a test key never works on a live server
		a, liveKey, _, err := live.Register(ctx, validParams())
		require.NoError(t, err)
		assert.Regexp(t, `^xp_live_[0-9A-Za-z]{32}$`, liveKey)
		assert.Equal(t, a.ID, mustAuth(t, &live, liveKey))
	})
}

func TestRotation(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, clk := newService(s)
		a, k1, _ := register(t, svc)

		clk.Advance(time.Hour)
		k2, exp, err := svc.RotateKey(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, t0.Add(25*time.Hour), exp)
		assert.NotEqual(t, k1, k2)
		assert.Equal(t, a.ID, mustAuth(t, svc, k1), "the old key keeps working during the overlap")
		assert.Equal(t, a.ID, mustAuth(t, svc, k2))

		// A second rotation 12 h later: k2 now expires 24 h after it, but
		// k1 keeps its earlier expiry.
		clk.Advance(12 * time.Hour)
		k3, exp3, err := svc.RotateKey(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, t0.Add(37*time.Hour), exp3)

		clk.Advance(12*time.Hour - time.Microsecond) // t0+25h-1µs
		mustAuth(t, svc, k1)
		clk.Advance(time.Microsecond) // t0+25h: k1's expiry
		assertUnauthorized(t, svc, k1)
		mustAuth(t, svc, k2)
		clk.Advance(12 * time.Hour) // t0+37h
		assertUnauthorized(t, svc, k2)
		assert.Equal(t, a.ID, mustAuth(t, svc, k3), "the newest key never expires")

		_, _, err = svc.RotateKey(ctx, "app_missing")
		assert.True(t, apperr.Is(err, apperr.NotFound), "%v", err)
	})
}

func TestValidation(t *testing.T) {
	long := func(n int, unit string) string { return strings.Repeat(unit, n) }
	cases := []struct {
		name  string
		edit  func(*apps.RegisterParams)
		code  string
		field string
	}{
		{"name missing", func(p *apps.RegisterParams) { p.Name = "" }, apperr.MissingField, "name"},
		{"name blank", func(p *apps.RegisterParams) { p.Name = "   " }, apperr.MissingField, "name"},
		{"name too long", func(p *apps.RegisterParams) { p.Name = long(201, "é") }, apperr.InvalidName, "name"},
		{"name control char", func(p *apps.RegisterParams) { p.Name = "Sn\x00ip" }, apperr.InvalidName, "name"},
		{"name right-to-left override", func(p *apps.RegisterParams) { p.Name = "Snip\u202Egnp.exe" }, apperr.InvalidName, "name"},
		{"name isolate", func(p *apps.RegisterParams) { p.Name = "Snip\u2067x\u2069" }, apperr.InvalidName, "name"},
		{"name newline", func(p *apps.RegisterParams) { p.Name = "Snip\nPro" }, apperr.InvalidName, "name"},
		{"platform missing", func(p *apps.RegisterParams) { p.Platform = "" }, apperr.MissingField, "platform"},
		{"platform unknown", func(p *apps.RegisterParams) { p.Platform = "linux" }, apperr.InvalidPlatform, "platform"},
		{"platform case", func(p *apps.RegisterParams) { p.Platform = "Mac" }, apperr.InvalidPlatform, "platform"},
		{"bundle_id missing", func(p *apps.RegisterParams) { p.BundleID = "" }, apperr.MissingField, "bundle_id"},
		{"bundle_id no dot", func(p *apps.RegisterParams) { p.BundleID = "snip" }, apperr.InvalidBundleID, "bundle_id"},
		{"bundle_id bad char", func(p *apps.RegisterParams) { p.BundleID = "com.example/snip" }, apperr.InvalidBundleID, "bundle_id"},
		{"bundle_id empty part", func(p *apps.RegisterParams) { p.BundleID = "com..snip" }, apperr.InvalidBundleID, "bundle_id"},
		{"bundle_id too long", func(p *apps.RegisterParams) { p.BundleID = "com." + long(252, "a") }, apperr.InvalidBundleID, "bundle_id"},
		{"domain missing", func(p *apps.RegisterParams) { p.Domain = "" }, apperr.MissingField, "domain"},
		{"domain scheme", func(p *apps.RegisterParams) { p.Domain = "https://example.com" }, apperr.InvalidDomain, "domain"},
		{"domain path", func(p *apps.RegisterParams) { p.Domain = "example.com/snip" }, apperr.InvalidDomain, "domain"},
		{"domain port", func(p *apps.RegisterParams) { p.Domain = "example.com:443" }, apperr.InvalidDomain, "domain"},
		{"domain no dot", func(p *apps.RegisterParams) { p.Domain = "localhost" }, apperr.InvalidDomain, "domain"},
		{"domain bad label", func(p *apps.RegisterParams) { p.Domain = "-example.com" }, apperr.InvalidDomain, "domain"},
		{"domain trailing dot", func(p *apps.RegisterParams) { p.Domain = "example.com." }, apperr.InvalidDomain, "domain"},
		{"domain ip", func(p *apps.RegisterParams) { p.Domain = "192.168.1.1" }, apperr.InvalidDomain, "domain"},
		{"domain label too long", func(p *apps.RegisterParams) { p.Domain = long(64, "a") + ".com" }, apperr.InvalidDomain, "domain"},
		{"download_url missing", func(p *apps.RegisterParams) { p.DownloadURL = "" }, apperr.MissingField, "download_url"},
		{"download_url relative", func(p *apps.RegisterParams) { p.DownloadURL = "/Snip.zip" }, apperr.InvalidURL, "download_url"},
		{"download_url ftp", func(p *apps.RegisterParams) { p.DownloadURL = "ftp://example.com/Snip.zip" }, apperr.InvalidURL, "download_url"},
		{"download_url no host", func(p *apps.RegisterParams) { p.DownloadURL = "https:///Snip.zip" }, apperr.InvalidURL, "download_url"},
		{"download_url credentials", func(p *apps.RegisterParams) { p.DownloadURL = "https://u:p@example.com/Snip.zip" }, apperr.InvalidURL, "download_url"},
		{"contact_email missing", func(p *apps.RegisterParams) { p.ContactEmail = "" }, apperr.MissingField, "contact_email"},
		{"contact_email not an address", func(p *apps.RegisterParams) { p.ContactEmail = "dev" }, apperr.InvalidEmail, "contact_email"},
		{"contact_email display name", func(p *apps.RegisterParams) { p.ContactEmail = "Dev <dev@example.com>" }, apperr.InvalidEmail, "contact_email"},
		{"contact_email dotless domain", func(p *apps.RegisterParams) { p.ContactEmail = "dev@localhost" }, apperr.InvalidEmail, "contact_email"},
		{"category upper case", func(p *apps.RegisterParams) { p.Category = "Productivity" }, apperr.InvalidCategory, "category"},
		{"category too long", func(p *apps.RegisterParams) { p.Category = long(65, "a") }, apperr.InvalidCategory, "category"},
		// The first failing field in document order wins.
		{"order: name before platform", func(p *apps.RegisterParams) { p.Name, p.Platform = "", "linux" }, apperr.MissingField, "name"},
		{"order: platform before email", func(p *apps.RegisterParams) { p.Platform, p.ContactEmail = "linux", "x" }, apperr.InvalidPlatform, "platform"},
		{"order: url before email", func(p *apps.RegisterParams) { p.DownloadURL, p.ContactEmail = "x", "" }, apperr.InvalidURL, "download_url"},
	}
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, _ := newService(s)
		for _, c := range cases {
			p := validParams()
			c.edit(&p)
			_, key, _, err := svc.Register(ctx, p)
			var e *apperr.Error
			if assert.True(t, errors.As(err, &e), "%s: want an apperr, got %v", c.name, err) {
				assert.Equal(t, c.code, e.Code, c.name)
				assert.Equal(t, c.field, e.Field, c.name)
				assert.Equal(t, 422, apperr.HTTPStatus(e), c.name)
			}
			assert.Empty(t, key, c.name)
		}
		assert.Empty(t, rawQuery(t, s, `SELECT id FROM apps`), "no invalid registration is stored")

		// Valid edge cases.
		for _, edit := range []func(*apps.RegisterParams){
			func(p *apps.RegisterParams) { p.Name = long(200, "é") },
			func(p *apps.RegisterParams) { p.Platform = "win"; p.BundleID = "Example.Snip_2-x" },
			func(p *apps.RegisterParams) { p.Domain = "snip.example.co.uk" },
			func(p *apps.RegisterParams) { p.DownloadURL = "http://dl.example.com:8080/a/Snip.msix?v=2" },
			func(p *apps.RegisterParams) { p.ContactEmail = "dev+apps@mail.example.com" },
			func(p *apps.RegisterParams) { p.Category = "developer-tools" },
		} {
			p := validParams()
			edit(&p)
			_, _, _, err := svc.Register(ctx, p)
			assert.NoError(t, err, "%+v", p)
		}
	})
}

// moveTo brings a fresh app to status via allowed transitions; for
// suspended, from the given status.
func moveTo(t *testing.T, s storage.Store, svc *apps.Service, appID string, path ...xpromo.AppStatus) {
	t.Helper()
	for _, to := range path {
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			_, err := svc.Transition(ctx, tx, appID, to, "test", apps.ActorSystem)
			return err
		}), "to %s", to)
	}
}

func TestTransitions(t *testing.T) {
	const (
		P = xpromo.AppStatusPending
		A = xpromo.AppStatusApproved
		T = xpromo.AppStatusThrottled
		L = xpromo.AppStatusLive
		S = xpromo.AppStatusSuspended
		R = xpromo.AppStatusRejected
	)
	all := []xpromo.AppStatus{P, A, T, L, S, R}
	// Each start: how to reach it from pending, and the statuses it may move to.
	starts := []struct {
		name    string
		path    []xpromo.AppStatus
		allowed []xpromo.AppStatus
	}{
		{"pending", nil, []xpromo.AppStatus{A, R}},
		{"approved", []xpromo.AppStatus{A}, []xpromo.AppStatus{T, S}},
		{"throttled", []xpromo.AppStatus{A, T}, []xpromo.AppStatus{L, S}},
		{"live", []xpromo.AppStatus{A, T, L}, []xpromo.AppStatus{S}},
		{"rejected", []xpromo.AppStatus{R}, []xpromo.AppStatus{P}},
		// A suspended app leaves only through Reinstate (below).
		{"suspended from approved", []xpromo.AppStatus{A, S}, nil},
		{"suspended from throttled", []xpromo.AppStatus{A, T, S}, nil},
		{"suspended from live", []xpromo.AppStatus{A, T, L, S}, nil},
	}
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, _ := newService(s)
		for _, st := range starts {
			for _, to := range all {
				a, _, _ := register(t, svc)
				moveTo(t, s, svc, a.ID, st.path...)
				var got apps.App
				err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) (err error) {
					got, err = svc.Transition(ctx, tx, a.ID, to, "why", apps.ActorFraud)
					return err
				})
				view, verr := svc.AppView(ctx, a.ID)
				require.NoError(t, verr)
				if allowed := contains(st.allowed, to); allowed {
					require.NoError(t, err, "%s → %s", st.name, to)
					assert.Equal(t, to, got.Status)
					assert.Equal(t, to, view.App.Status)
					last := view.History[len(view.History)-1]
					assert.Equal(t, to, last.To)
					assert.Equal(t, "why", last.Reason)
					assert.Equal(t, apps.ActorFraud, last.Actor)
				} else {
					assert.True(t, apperr.Is(err, apperr.InvalidTransition), "%s → %s: want invalid_transition, got %v", st.name, to, err)
					assert.Len(t, view.History, 1+len(st.path), "%s → %s: no history row", st.name, to)
				}
			}
		}
		err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			_, err := svc.Transition(ctx, tx, "app_missing", A, "", apps.ActorAdmin)
			return err
		})
		assert.True(t, apperr.Is(err, apperr.NotFound), "%v", err)

		// Reinstate: a suspended app returns to the status it had before.
		reinstate := func(appID string) (apps.App, error) {
			var a apps.App
			err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) (err error) {
				a, err = svc.Reinstate(ctx, tx, appID, "cleared", apps.ActorFraud)
				return err
			})
			return a, err
		}
		for _, st := range starts {
			a, _, _ := register(t, svc)
			moveTo(t, s, svc, a.ID, st.path...)
			got, err := reinstate(a.ID)
			if n := len(st.path); n > 0 && st.path[n-1] == S {
				require.NoError(t, err, st.name)
				want := P
				if n > 1 {
					want = st.path[n-2]
				}
				assert.Equal(t, want, got.Status, st.name)
			} else {
				assert.True(t, apperr.Is(err, apperr.InvalidTransition), "%s: reinstate must be refused, got %v", st.name, err)
			}
		}
		_, err = reinstate("app_missing")
		assert.True(t, apperr.Is(err, apperr.NotFound), "%v", err)
	})
}

func contains(ss []xpromo.AppStatus, s xpromo.AppStatus) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// A transition made inside a caller's transaction commits or rolls back with it.
func TestTransitionJoinsTheCallersTransaction(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, _ := newService(s)
		a, _, _ := register(t, svc)
		boom := errors.New("boom")
		err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if _, err := svc.Transition(ctx, tx, a.ID, xpromo.AppStatusApproved, "gate_passed", apps.ActorGate); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		view, err := svc.AppView(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusPending, view.App.Status)
		assert.Len(t, view.History, 1)
	})
}

func TestAdminActions(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, clk := newService(s)
		a, _, _ := register(t, svc)

		_, err := svc.Act(ctx, a.ID, apps.Reject, "")
		assert.True(t, apperr.Is(err, apperr.MissingField), "reject needs a reason: %v", err)
		_, err = svc.Act(ctx, a.ID, apps.Reinstate, "")
		assert.True(t, apperr.Is(err, apperr.InvalidTransition), "%v", err)
		_, err = svc.Act(ctx, "app_missing", apps.Approve, "")
		assert.True(t, apperr.Is(err, apperr.NotFound), "%v", err)
		assert.Empty(t, rawQuery(t, s, `SELECT id FROM admin_audit`), "refused actions leave no audit row")

		clk.Advance(time.Minute)
		v, err := svc.Act(ctx, a.ID, apps.Reject, "bundle does not match")
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusRejected, v.App.Status)
		clk.Advance(time.Minute)
		v, err = svc.Act(ctx, a.ID, apps.Review, "")
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusPending, v.App.Status)
		clk.Advance(time.Minute)
		_, err = svc.Act(ctx, a.ID, apps.Approve, "looks good")
		require.NoError(t, err)
		_, err = svc.Act(ctx, a.ID, apps.Approve, "")
		assert.True(t, apperr.Is(err, apperr.InvalidTransition), "approving twice: %v", err)
		clk.Advance(time.Minute)
		_, err = svc.Act(ctx, a.ID, apps.Suspend, "complaints")
		require.NoError(t, err)
		clk.Advance(time.Minute)
		v, err = svc.Act(ctx, a.ID, apps.Reinstate, "")
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusApproved, v.App.Status, "back to the status before suspension")

		type row struct {
			from, to xpromo.AppStatus
			reason   string
			actor    string
			at       time.Time
		}
		var got []row
		for _, c := range v.History {
			got = append(got, row{c.From, c.To, c.Reason, c.Actor, c.At})
		}
		m := time.Minute
		assert.Equal(t, []row{
			{"", "pending", "registered", "system", t0},
			{"pending", "rejected", "bundle does not match", "admin", t0.Add(m)},
			{"rejected", "pending", "", "admin", t0.Add(2 * m)},
			{"pending", "approved", "looks good", "admin", t0.Add(3 * m)},
			{"approved", "suspended", "complaints", "admin", t0.Add(4 * m)},
			{"suspended", "approved", "", "admin", t0.Add(5 * m)},
		}, got)

		// One audit row per successful action, newest first.
		page, err := svc.Audit(ctx, apps.AuditQuery{Limit: 100})
		require.NoError(t, err)
		audit := page.Entries
		require.Len(t, audit, 5)
		assert.Empty(t, page.Next)
		var actions []string
		for _, e := range audit {
			actions = append(actions, e.Action)
			assert.Equal(t, "admin", e.Actor)
			assert.Equal(t, a.ID, e.Subject)
			assert.True(t, strings.HasPrefix(e.ID, "aud_"))
		}
		assert.Equal(t, []string{"app.reinstate", "app.suspend", "app.approve", "app.review", "app.reject"}, actions)
		var detail map[string]string
		require.NoError(t, json.Unmarshal(audit[4].Detail, &detail))
		assert.Equal(t, map[string]string{"from": "pending", "to": "rejected", "reason": "bundle does not match"}, detail)
		assert.Equal(t, t0.Add(m), audit[4].At)
		top, err := svc.Audit(ctx, apps.AuditQuery{Limit: 2})
		require.NoError(t, err)
		assert.Equal(t, audit[:2], top.Entries)
		// The next pages follow on from the cursor, to the end.
		require.NotEmpty(t, top.Next)
		var rest []apps.AuditEntry
		for next := top.Next; next != ""; {
			p, err := cursor.Decode(next)
			require.NoError(t, err)
			more, err := svc.Audit(ctx, apps.AuditQuery{Limit: 2, After: &p})
			require.NoError(t, err)
			rest, next = append(rest, more.Entries...), more.Next
		}
		assert.Equal(t, audit[2:], rest)
		for _, bad := range []int{0, -1, 1001} {
			_, err := svc.Audit(ctx, apps.AuditQuery{Limit: bad})
			assert.True(t, apperr.Is(err, apperr.InvalidLimit), "limit %d: %v", bad, err)
		}

		// Review queued the gate and scoring again (two more jobs).
		assert.Len(t, rawQuery(t, s, `SELECT id FROM jobs`), 4)
	})
}

// The status history and the audit log cannot be changed through the store's
// connections (SQLite: triggers; PostgreSQL: the application role's
// privileges; postgres/apps_test.go checks the triggers against the owner).
func TestHistoryAndAuditAreAppendOnly(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, _ := newService(s)
		a, _, _ := register(t, svc)
		_, err := svc.Act(ctx, a.ID, apps.Approve, "ok")
		require.NoError(t, err)
		before := [][]string{rawQuery(t, s, `SELECT reason FROM app_status_history`), rawQuery(t, s, `SELECT action FROM admin_audit`)}

		ex, ok := s.(execer)
		require.True(t, ok)
		for _, stmt := range []string{
			`UPDATE app_status_history SET reason = 'forged'`,
			`UPDATE app_status_history SET to_status = 'live'`,
			`DELETE FROM app_status_history`,
			`UPDATE admin_audit SET actor = 'nobody'`,
			`DELETE FROM admin_audit`,
		} {
			assert.Error(t, ex.Exec(ctx, stmt), stmt)
		}
		if _, isSQLite := s.(*sqlite.DB); isSQLite {
			for _, stmt := range []string{
				`INSERT OR REPLACE INTO app_status_history SELECT seq, app_id, from_status, to_status, 'forged', actor, at FROM app_status_history`,
				`INSERT OR REPLACE INTO admin_audit SELECT seq, id, 'nobody', action, subject, detail, at FROM admin_audit`,
			} {
				err := ex.Exec(ctx, stmt)
				require.Error(t, err, stmt)
				assert.Contains(t, err.Error(), "append-only", stmt)
			}
		}
		after := [][]string{rawQuery(t, s, `SELECT reason FROM app_status_history`), rawQuery(t, s, `SELECT action FROM admin_audit`)}
		assert.Equal(t, before, after)
		assert.Equal(t, []string{"registered", "ok"}, after[0])
	})
}

func TestScore(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, clk := newService(s)
		a, _, _ := register(t, svc)

		sc, err := svc.Score(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.Score{
			Status:       xpromo.AppStatusPending,
			Reasons:      []string{apps.ReasonGatePending, apps.ReasonReputationPending},
			NextReviewAt: t0, // the queued jobs' run_after
		}, sc)

		// A finished gate and scoring job (as the later workers will record).
		done := t0.Add(time.Hour)
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := tx.InsertJob(ctx, apps.Job{ID: "job_gate_done", AppID: a.ID, Kind: xpromo.JobGate, Status: xpromo.JobSucceeded,
				Result:    json.RawMessage(`{"signed":true,"malware_clean":true,"domain_age_ok":false,"contact_verified":true,"bundle_match":true,"reasons":["gate_domain_too_young"]}`),
				CreatedAt: done, RunAfter: done, FinishedAt: &done}); err != nil {
				return err
			}
			return tx.InsertJob(ctx, apps.Job{ID: "job_score_done", AppID: a.ID, Kind: xpromo.JobScoring, Status: xpromo.JobSucceeded,
				Result:    json.RawMessage(`{"reputation":{"total":61,"ai_visibility":70,"cadence":50,"reviews":0,"coherence":80},"reasons":["reviews_unavailable"]}`),
				CreatedAt: done, RunAfter: done, FinishedAt: &done})
		}))
		clk.Advance(2 * time.Hour)
		sc, err = svc.Score(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.Gate{Signed: true, MalwareClean: true, DomainAgeOK: false, ContactVerified: true, BundleMatch: true}, sc.Gate)
		assert.Equal(t, xpromo.Reputation{Total: 61, AIVisibility: 70, Cadence: 50, Reviews: 0, Coherence: 80}, sc.Reputation)
		assert.Nil(t, sc.Behavior)
		// The registration's jobs are still queued in this test (no worker).
		assert.Equal(t, []string{"gate_domain_too_young", "reviews_unavailable"}, sc.Reasons)
		assert.Equal(t, t0, sc.NextReviewAt)

		// Operator rejection shows as a stable code.
		_, err = svc.Act(ctx, a.ID, apps.Reject, "free text stays in the admin view")
		require.NoError(t, err)
		sc, err = svc.Score(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusRejected, sc.Status)
		assert.Equal(t, apps.ReasonOperatorRejected, sc.Reasons[0])
		assert.NotContains(t, sc.Reasons, "free text stays in the admin view")

		// Without queued jobs, the next review is a day after registration;
		// a gate job that failed without an outcome says so.
		b, _, _ := register(t, svc)
		require.NoError(t, s.(execer).Exec(ctx, `UPDATE jobs SET status = 'failed' WHERE app_id = '`+b.ID+`'`))
		sc, err = svc.Score(ctx, b.ID)
		require.NoError(t, err)
		assert.Equal(t, b.CreatedAt.Add(24*time.Hour), sc.NextReviewAt)
		assert.Equal(t, []string{apps.ReasonGateFailed, apps.ReasonReputationPending}, sc.Reasons)
		assert.Equal(t, xpromo.Gate{}, sc.Gate)
		_, err = svc.Score(ctx, "app_missing")
		assert.True(t, apperr.Is(err, apperr.NotFound), "%v", err)
	})
}

// scoreEvents returns the scores of the app's score.updated events, oldest
// first.
func scoreEvents(t *testing.T, s storage.Store, appID string) []xpromo.Score {
	t.Helper()
	var out []xpromo.Score
	require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		evs, err := tx.AppOutbox(ctx, appID)
		for _, e := range evs {
			require.Equal(t, xpromo.EventScoreUpdated, e.Type)
			var d xpromo.ScoreEventData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			out = append(out, d.Score)
		}
		return err
	}))
	return out
}

// TestScoreEvents: registration and every status change write one
// score.updated, in their transaction, with the score GET /score shows
// right after; a refused action or a rolled-back transition writes none.
func TestScoreEvents(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, clk := newService(s)
		a, _, _ := register(t, svc)
		var want []xpromo.Score
		current := func() xpromo.Score {
			sc, err := svc.Score(ctx, a.ID)
			require.NoError(t, err)
			return sc
		}
		want = append(want, current())
		assert.Equal(t, want, scoreEvents(t, s, a.ID), "registration announces the first score")

		// Refused: nothing.
		_, err := svc.Act(ctx, a.ID, apps.Reject, "")
		require.Error(t, err)
		_, err = svc.Act(ctx, a.ID, apps.Reinstate, "")
		require.Error(t, err)
		boom := errors.New("boom")
		err = s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if _, err := svc.Transition(ctx, tx, a.ID, xpromo.AppStatusApproved, "gate_passed", apps.ActorGate); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		assert.Equal(t, want, scoreEvents(t, s, a.ID), "refused or rolled back: no event")

		for _, act := range []struct {
			action apps.Action
			reason string
		}{{apps.Reject, "bundle does not match"}, {apps.Review, ""}, {apps.Approve, ""}, {apps.Suspend, "complaints"}, {apps.Reinstate, ""}} {
			clk.Advance(time.Minute)
			_, err := svc.Act(ctx, a.ID, act.action, act.reason)
			require.NoError(t, err, act.action)
			want = append(want, current())
			assert.Equal(t, want, scoreEvents(t, s, a.ID), act.action)
		}
		statuses := []xpromo.AppStatus{}
		for _, sc := range want {
			statuses = append(statuses, sc.Status)
		}
		assert.Equal(t, []xpromo.AppStatus{"pending", "rejected", "pending", "approved", "suspended", "approved"}, statuses)
		assert.Equal(t, apps.ReasonOperatorRejected, want[1].Reasons[0])
		assert.Contains(t, want[2].Reasons, apps.ReasonGatePending, "review's event shows the jobs it queued")

		// Another domain's transition (trading) writes it in its caller's
		// transaction.
		clk.Advance(time.Minute)
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			_, err := svc.Transition(ctx, tx, a.ID, xpromo.AppStatusThrottled, "first_trade", apps.ActorMarket)
			return err
		}))
		got := scoreEvents(t, s, a.ID)
		require.Len(t, got, len(want)+1)
		assert.Equal(t, current(), got[len(got)-1])
		assert.Equal(t, xpromo.AppStatusThrottled, got[len(got)-1].Status)
	})
}

// QueueJobSoon, for a run now, brings the app's queued job forward rather than queueing
// another (no follow-up is left behind), and queues a new one only when
// none is queued any more (both stores).
func TestQueueJobSoonNow(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, clock := newService(s)
		a, _, _ := register(t, svc)
		gateJobs := func() []apps.Job {
			t.Helper()
			var out []apps.Job
			require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
				js, err := tx.AppJobs(ctx, a.ID)
				for _, j := range js {
					if j.Kind == xpromo.JobGate {
						out = append(out, j)
					}
				}
				return err
			}))
			return out
		}
		runNow := func() apps.Job {
			t.Helper()
			var j apps.Job
			require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) (err error) {
				j, err = apps.QueueJobSoon(ctx, tx, a.ID, xpromo.JobGate, clock.Now(), clock.Now())
				return err
			}))
			return j
		}
		reg := gateJobs()
		require.Len(t, reg, 1)

		// Due already: it is the one.
		assert.Equal(t, reg[0].ID, runNow().ID)
		// Queued for later (a follow-up): brought forward, not doubled.
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			moved, err := tx.RescheduleJob(ctx, reg[0].ID, clock.Now().Add(time.Hour))
			assert.True(t, moved)
			return err
		}))
		clock.Advance(time.Minute)
		j := runNow()
		assert.Equal(t, reg[0].ID, j.ID)
		got := gateJobs()
		require.Len(t, got, 1)
		assert.Equal(t, clock.Now(), got[0].RunAfter)
		assert.Equal(t, xpromo.JobQueued, got[0].Status)

		// Once the job ran, nothing is queued: a new one is, now.
		runner := &jobs.Runner[storage.Tx]{Update: s.Update, Now: clock.Now, Holder: "test"}
		runner.Handle(xpromo.JobGate, time.Minute, func(context.Context, apps.Job) (jobs.Outcome[storage.Tx], error) {
			return jobs.Outcome[storage.Tx]{}, nil
		})
		n, err := runner.RunDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			moved, err := tx.RescheduleJob(ctx, reg[0].ID, clock.Now())
			assert.False(t, moved, "a finished job is not rescheduled")
			return err
		}))
		j = runNow()
		assert.NotEqual(t, reg[0].ID, j.ID)
		got = gateJobs()
		require.Len(t, got, 2)
		assert.Equal(t, []xpromo.JobStatus{xpromo.JobSucceeded, xpromo.JobQueued}, []xpromo.JobStatus{got[0].Status, got[1].Status})
		assert.Equal(t, clock.Now(), got[1].RunAfter)
	})
}

// QueueJobSoon keeps one queued job of a kind: a later one is brought
// forward, an earlier one is kept, and a job no longer queued is not moved.
func TestQueueJobSoon(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, clock := newService(s)
		a, _, scoring := register(t, svc)
		queue := func(runAfter time.Time) apps.Job {
			var j apps.Job
			require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) (err error) {
				j, err = apps.QueueJobSoon(ctx, tx, a.ID, xpromo.JobScoring, runAfter, clock.Now())
				return err
			}))
			return j
		}
		scoringJobs := func() []apps.Job {
			var out []apps.Job
			require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
				js, err := tx.AppJobs(ctx, a.ID)
				for _, j := range js {
					if j.Kind == xpromo.JobScoring {
						out = append(out, j)
					}
				}
				return err
			}))
			return out
		}
		setRunAfter := func(at time.Time) {
			require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
				ok, err := tx.RescheduleJob(ctx, scoring.ID, at)
				assert.True(t, ok)
				return err
			}))
		}

		// The registration's job waits a minute (as a retry does); a run
		// wanted now brings it forward.
		setRunAfter(t0.Add(time.Minute))
		j := queue(t0)
		assert.Equal(t, scoring.ID, j.ID)
		assert.Equal(t, t0, j.RunAfter)
		js := scoringJobs()
		require.Len(t, js, 1, "no second job")
		assert.Equal(t, t0, js[0].RunAfter)

		// One due sooner than asked is kept as it is.
		j = queue(t0.Add(time.Hour))
		assert.Equal(t, scoring.ID, j.ID)
		assert.Equal(t, t0, scoringJobs()[0].RunAfter)

		// A time already past is now.
		setRunAfter(t0.Add(time.Hour))
		clock.Advance(time.Minute)
		j = queue(t0)
		assert.Equal(t, t0.Add(time.Minute), j.RunAfter)
		assert.Equal(t, t0.Add(time.Minute), scoringJobs()[0].RunAfter)

		// A job that is no longer queued is not moved: a new one is queued.
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			_, err := tx.ClaimJobs(ctx, jobs.Claim{Kind: xpromo.JobScoring, Holder: "r", Now: clock.Now(), Until: clock.Now().Add(time.Minute), Limit: 10})
			return err
		}))
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			ok, err := tx.RescheduleJob(ctx, scoring.ID, t0)
			assert.False(t, ok, "a running job is not moved")
			return err
		}))
		j = queue(clock.Now())
		assert.NotEqual(t, scoring.ID, j.ID)
		js = scoringJobs()
		require.Len(t, js, 2)
		assert.Equal(t, xpromo.JobRunning, js[0].Status)
		assert.Equal(t, t0.Add(time.Minute), js[0].RunAfter)
		assert.Equal(t, xpromo.JobQueued, js[1].Status)
		assert.Equal(t, clock.Now(), js[1].RunAfter)
	})
}

// UpdateAppcastURL: checked as at registration; a change is audited and
// brings a scoring run forward, at most once a minute after the last run
// ended; the same URL again writes nothing.
func TestUpdateAppcastURL(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc, clock := newService(s)
		a, _, _ := register(t, svc)
		audit := func() []apps.AuditEntry {
			t.Helper()
			es, err := svc.Audit(ctx, apps.AuditQuery{Limit: apps.MaxAuditLimit})
			require.NoError(t, err)
			return es.Entries
		}

		for _, bad := range []string{"", "  ", "ftp://example.com/a.xml", "https://u:p@example.com/a.xml", "example.com/a.xml"} {
			_, _, err := svc.UpdateAppcastURL(ctx, a.ID, &bad)
			var e *apperr.Error
			require.ErrorAs(t, err, &e, "%q", bad)
			assert.Equal(t, apperr.InvalidAppcastURL, e.Code, "%q", bad)
			assert.Equal(t, "appcast_url", e.Field)
		}
		_, _, err := svc.UpdateAppcastURL(ctx, "app_nope", nil)
		var e *apperr.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, apperr.NotFound, e.Code)
		assert.Empty(t, audit(), "refusals write nothing")

		// The registration's scoring run ends now.
		runner := &jobs.Runner[storage.Tx]{Update: s.Update, Now: clock.Now, Holder: "test"}
		runner.Handle(xpromo.JobScoring, time.Minute, func(context.Context, apps.Job) (jobs.Outcome[storage.Tx], error) {
			return jobs.Outcome[storage.Tx]{}, nil
		})
		n, err := runner.RunDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)

		clock.Advance(10 * time.Second)
		feed := " https://example.com/appcast.xml "
		got, job, err := svc.UpdateAppcastURL(ctx, a.ID, &feed)
		require.NoError(t, err)
		assert.Equal(t, "https://example.com/appcast.xml", got.AppcastURL, "trimmed")
		assert.Equal(t, clock.Now(), got.UpdatedAt)
		require.NotNil(t, job)
		assert.Equal(t, xpromo.JobScoring, job.Kind)
		assert.Equal(t, t0.Add(apps.RescoreGap), job.RunAfter, "a minute after the last run ended")
		view, err := svc.AppView(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, "https://example.com/appcast.xml", view.App.AppcastURL)

		// The same URL: nothing written, nothing queued.
		same := "https://example.com/appcast.xml"
		_, none, err := svc.UpdateAppcastURL(ctx, a.ID, &same)
		require.NoError(t, err)
		assert.Nil(t, none)
		require.Len(t, audit(), 1)

		// Removed: the run already queued is the one, not a second.
		clock.Advance(time.Hour)
		got, again, err := svc.UpdateAppcastURL(ctx, a.ID, nil)
		require.NoError(t, err)
		assert.Empty(t, got.AppcastURL)
		require.NotNil(t, again)
		assert.Equal(t, job.ID, again.ID)
		es := audit()
		require.Len(t, es, 2)
		assert.Equal(t, apps.ActorApp, es[0].Actor)
		assert.Equal(t, apps.AuditAppcastURL, es[0].Action)
		assert.Equal(t, a.ID, es[0].Subject)
		assert.JSONEq(t, `{"from":"https://example.com/appcast.xml","to":null}`, string(es[0].Detail))
		assert.JSONEq(t, `{"from":null,"to":"https://example.com/appcast.xml"}`, string(es[1].Detail))
	})
}
