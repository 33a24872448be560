package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// newAppsAPI is a server whose clock starts at 21 Nov 2026 10:00 UTC.
func newAppsAPI(t *testing.T, s storage.Store) *testServer {
	t.Helper()
	return serve(t, s, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), unlimited)
}

func TestAppsRegisterAndScore(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newAppsAPI(t, s)

		res := api.do("POST", "/v1/apps", "", snip())
		require.Equal(t, http.StatusCreated, res.status, res.body)
		m := res.json(t)
		assert.Len(t, m, 4)
		assert.Equal(t, "pending", m["status"])
		assert.Regexp(t, `^xp_test_[0-9A-Za-z]{32}$`, m["api_key"])
		assert.Regexp(t, `^app_`, m["app_id"])
		assert.Regexp(t, `^job_`, m["scoring_job_id"])
		appID, key, jobID := m["app_id"].(string), m["api_key"].(string), m["scoring_job_id"].(string)

		res = api.do("GET", "/v1/apps/"+appID+"/score", key, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.JSONEq(t, `{"status":"pending",
			"gate":{"signed":false,"malware_clean":false,"domain_age_ok":false,"contact_verified":false,"bundle_match":false},
			"reputation":{"total":0,"ai_visibility":0,"cadence":0,"reviews":0,"coherence":0},
			"behavior":null,"reasons":["gate_pending","reputation_pending"],"next_review_at":"2026-11-21T10:00:00Z","retry_after":null}`, res.body)

		res = api.do("GET", "/v1/apps/"+appID+"/jobs/"+jobID, key, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.JSONEq(t, `{"job_id":"`+jobID+`","kind":"scoring","status":"queued","created_at":"2026-11-21T10:00:00Z",
			"run_after":"2026-11-21T10:00:00Z","finished_at":null,"attempts":0,"last_error":null,"result":null}`, res.body)
		res = api.do("GET", "/v1/apps/"+appID+"/jobs/job_nope", key, nil)
		assert.Equal(t, http.StatusNotFound, res.status)

		// With the additive category and appcast_url; the admin view shows them.
		withCat := snip()
		withCat.Category = "productivity"
		withCat.AppcastURL = "https://example.com/appcast.xml"
		reg := api.register(withCat)
		res = api.do("GET", "/v1/admin/apps/"+reg.AppID, adminToken, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		var view xpromo.AdminApp
		res.decode(t, &view)
		require.NotNil(t, view.AppcastURL)
		assert.Equal(t, "https://example.com/appcast.xml", *view.AppcastURL)
		require.NotNil(t, view.Category)
		assert.Equal(t, "productivity", *view.Category)
	})
}

func TestAppsRegisterValidation(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newAppsAPI(t, s)
		for _, c := range []struct {
			body   any
			status int
			code   string
		}{
			{func() any { r := snip(); r.Platform = "linux"; return r }(), 422, "invalid_platform"},
			{func() any { r := snip(); r.ContactEmail = "nobody"; return r }(), 422, "invalid_email"},
			{func() any { r := snip(); r.Domain = ""; return r }(), 422, "missing_field"},
			{func() any { r := snip(); r.Category = "Not A Key"; return r }(), 422, "invalid_category"},
			{func() any { r := snip(); r.AppcastURL = "ftp://example.com/appcast.xml"; return r }(), 422, "invalid_appcast_url"},
			{func() any { r := snip(); r.AppcastURL = "https://u:p@example.com/appcast.xml"; return r }(), 422, "invalid_appcast_url"},
			{func() any { r := snip(); r.AppcastURL = "https://example.com/" + strings.Repeat("a", 2029); return r }(), 422, "invalid_appcast_url"},
			{`{"name":"Snip","platform":"win","bundle_id":"com.example.snip","domain":"example.com","download_url":"https://example.com/s.zip","contact_email":"dev@example.com","appcast_url":""}`, 422, "invalid_appcast_url"},
			{`{"name":"Snip","platform":"mac","bundle_id":"com.example.snip","domain":"example.com","download_url":"https://example.com/s.zip","contact_email":"dev@example.com","extra":1}`, 422, "unknown_field"},
			{`{"name":7}`, 422, "invalid_type"},
			{`{"name":`, 400, "malformed_json"},
		} {
			res := api.do("POST", "/v1/apps", "", c.body)
			assert.Equal(t, c.status, res.status, "%v: %s", c.body, res.body)
			assert.Equal(t, c.code, res.code(t), "%v", c.body)
		}
	})
}

func TestAppsAuthentication(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newAppsAPI(t, s)
		a := api.register(snip())
		b := api.register(snip())

		// Another app's id answers exactly like a missing one.
		other := api.do("GET", "/v1/apps/"+b.AppID+"/score", a.APIKey, nil)
		missing := api.do("GET", "/v1/apps/app_doesnotexist/score", a.APIKey, nil)
		assert.Equal(t, http.StatusNotFound, other.status)
		assert.Equal(t, "not_found", other.code(t))
		assert.Equal(t, missing.status, other.status)
		assert.Equal(t, missing.body, other.body)
		otherJob := api.do("GET", "/v1/apps/"+b.AppID+"/jobs/"+b.ScoringJobID, a.APIKey, nil)
		assert.Equal(t, http.StatusNotFound, otherJob.status)

		res := api.do("GET", "/v1/apps/"+a.AppID+"/score", "", nil)
		assert.Equal(t, http.StatusUnauthorized, res.status)
		assert.Equal(t, "unauthorized", res.code(t))
		assert.True(t, strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Bearer "), res.header.Get("WWW-Authenticate"))

		for _, bad := range []string{"xp_test_" + strings.Repeat("z", 32), "nonsense", a.APIKey + "x"} {
			res = api.do("GET", "/v1/apps/"+a.AppID+"/score", bad, nil)
			assert.Equal(t, http.StatusUnauthorized, res.status, bad)
			assert.Equal(t, "unauthorized", res.code(t))
			assert.Contains(t, res.header.Get("WWW-Authenticate"), `error="invalid_token"`)
		}
	})
}

func TestAppsKeyRotation(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newAppsAPI(t, s)
		a := api.register(snip())
		b := api.register(snip())
		score := "/v1/apps/" + a.AppID + "/score"

		res := api.do("POST", "/v1/apps/"+a.AppID+"/keys/rotate", b.APIKey, nil)
		assert.Equal(t, http.StatusNotFound, res.status, "only the app's own key rotates it")

		res = api.do("POST", "/v1/apps/"+a.AppID+"/keys/rotate", a.APIKey, nil)
		require.Equal(t, http.StatusCreated, res.status, res.body)
		var rot xpromo.KeyRotation
		res.decode(t, &rot)
		assert.Regexp(t, `^xp_test_[0-9A-Za-z]{32}$`, rot.APIKey)
		assert.Equal(t, api.clock.Now().Add(24*time.Hour), rot.PreviousKeyExpiresAt)

		assert.Equal(t, http.StatusOK, api.do("GET", score, a.APIKey, nil).status, "old key valid during the overlap")
		assert.Equal(t, http.StatusOK, api.do("GET", score, rot.APIKey, nil).status)
		api.clock.Advance(24*time.Hour - time.Second)
		assert.Equal(t, http.StatusOK, api.do("GET", score, a.APIKey, nil).status)
		api.clock.Advance(time.Second)
		res = api.do("GET", score, a.APIKey, nil)
		assert.Equal(t, http.StatusUnauthorized, res.status)
		assert.Equal(t, "unauthorized", res.code(t))
		assert.Equal(t, http.StatusOK, api.do("GET", score, rot.APIKey, nil).status)
	})
}

// A server started without an admin token says its admin API is off and how
// to turn it on, whatever the caller sends: not a 401 that blames the token.
func TestAdminAPIOff(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		cfg := unlimited
		cfg.AdminToken = adminOff
		api := serve(t, s, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), cfg)
		a := api.register(snip())
		for _, tok := range []string{"", adminToken, a.APIKey} {
			for _, r := range []struct{ method, path string }{{"POST", "/v1/admin/apps/" + a.AppID + "/approve"}, {"GET", "/v1/admin/apps/" + a.AppID}, {"GET", "/v1/admin/audit"}} {
				res := api.do(r.method, r.path, tok, nil)
				assert.Equal(t, http.StatusForbidden, res.status, "%s %s with %q", r.method, r.path, tok)
				assert.Equal(t, "admin_api_disabled", res.code(t))
				var e xpromo.ErrorResponse
				res.decode(t, &e)
				assert.Contains(t, e.Error.Message, "--admin-token")
				assert.Contains(t, e.Error.Message, "XPROMO_ADMIN_TOKEN")
				assert.Empty(t, res.header.Get("WWW-Authenticate"), "no credentials would help")
			}
		}
		assert.Equal(t, "pending", api.do("GET", "/v1/apps/"+a.AppID+"/score", a.APIKey, nil).json(t)["status"], "nothing changed")
	})
}

func TestAppsAdmin(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newAppsAPI(t, s)
		a := api.register(snip())
		approve := "/v1/admin/apps/" + a.AppID + "/approve"

		for _, tok := range []string{"", "wrong-token", a.APIKey} {
			for _, r := range []struct{ method, path string }{{"POST", approve}, {"GET", "/v1/admin/apps/" + a.AppID}, {"GET", "/v1/admin/audit"}} {
				res := api.do(r.method, r.path, tok, nil)
				assert.Equal(t, http.StatusUnauthorized, res.status, "%s %s with %q", r.method, r.path, tok)
				assert.Equal(t, "unauthorized", res.code(t))
				assert.NotEmpty(t, res.header.Get("WWW-Authenticate"))
			}
		}
		assert.Equal(t, "pending", api.do("GET", "/v1/apps/"+a.AppID+"/score", a.APIKey, nil).json(t)["status"], "nothing changed")

		res := api.do("POST", "/v1/admin/apps/"+a.AppID+"/reject", adminToken, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, res.status)
		assert.Equal(t, "missing_field", res.code(t))
		res = api.do("POST", "/v1/admin/apps/"+a.AppID+"/reinstate", adminToken, nil)
		assert.Equal(t, http.StatusConflict, res.status)
		assert.Equal(t, "invalid_transition", res.code(t))
		res = api.do("POST", "/v1/admin/apps/app_doesnotexist/approve", adminToken, nil)
		assert.Equal(t, http.StatusNotFound, res.status)
		res = api.do("POST", approve, adminToken, `{"reason":1}`)
		assert.Equal(t, "invalid_type", res.code(t))

		api.clock.Advance(time.Minute)
		res = api.do("POST", approve, adminToken, xpromo.AdminActionRequest{Reason: "manual check"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		var view xpromo.AdminApp
		res.decode(t, &view)
		assert.Equal(t, xpromo.AppStatusApproved, view.Status)
		assert.Equal(t, a.AppID, view.AppID)
		assert.Nil(t, view.Category)
		assert.Nil(t, view.AppcastURL)
		assert.Equal(t, "cash", view.EarnMode)
		require.Len(t, view.StatusHistory, 2)
		assert.Nil(t, view.StatusHistory[0].From)
		assert.Equal(t, xpromo.AppStatusPending, *view.StatusHistory[1].From)
		assert.Equal(t, "manual check", view.StatusHistory[1].Reason)
		assert.Equal(t, "admin", view.StatusHistory[1].Actor)

		// Approve, then the app's own score shows it.
		sc := api.do("GET", "/v1/apps/"+a.AppID+"/score", a.APIKey, nil).json(t)
		assert.Equal(t, "approved", sc["status"])

		api.clock.Advance(time.Minute)
		res = api.do("POST", "/v1/admin/apps/"+a.AppID+"/suspend", adminToken, nil) // no body at all
		require.Equal(t, http.StatusOK, res.status, res.body)
		sc = api.do("GET", "/v1/apps/"+a.AppID+"/score", a.APIKey, nil).json(t)
		assert.Equal(t, "suspended", sc["status"], "a suspended app still reads its score")
		assert.Contains(t, sc["reasons"], "operator_suspended")
		res = api.do("POST", approve, adminToken, nil)
		assert.Equal(t, http.StatusConflict, res.status)
		res = api.do("POST", "/v1/admin/apps/"+a.AppID+"/reinstate", adminToken, xpromo.AdminActionRequest{})
		require.Equal(t, http.StatusOK, res.status, res.body)

		res = api.do("GET", "/v1/admin/apps/"+a.AppID, adminToken, nil)
		require.Equal(t, http.StatusOK, res.status)
		res.decode(t, &view)
		assert.Equal(t, xpromo.AppStatusApproved, view.Status)
		assert.Len(t, view.StatusHistory, 4)
		assert.Equal(t, http.StatusNotFound, api.do("GET", "/v1/admin/apps/app_doesnotexist", adminToken, nil).status)

		res = api.do("GET", "/v1/admin/audit", adminToken, nil)
		require.Equal(t, http.StatusOK, res.status)
		var page xpromo.AuditPage
		res.decode(t, &page)
		var actions []string
		for _, e := range page.Entries {
			actions = append(actions, e.Action)
		}
		assert.Equal(t, []string{"app.reinstate", "app.suspend", "app.approve"}, actions)
		assert.JSONEq(t, `{"from":"pending","to":"approved","reason":"manual check"}`, string(page.Entries[2].Detail))
		res = api.do("GET", "/v1/admin/audit?limit=1", adminToken, nil)
		res.decode(t, &page)
		assert.Len(t, page.Entries, 1)
		for _, bad := range []string{"0", "1001", "abc", ""} {
			res = api.do("GET", "/v1/admin/audit?limit="+bad, adminToken, nil)
			assert.Equal(t, http.StatusUnprocessableEntity, res.status, bad)
			assert.Equal(t, "invalid_limit", res.code(t))
		}
	})
}

// GET /v1/apps/{app_id} reads the app's own record; PATCH changes its
// appcast URL only, checked as at registration, audited, with a scoring run
// due at once.
func TestAppsOwnRecord(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newAppsAPI(t, s)
		reg := appRequest("Clipper", xpromo.PlatformWin)
		reg.Category = "productivity"
		a := api.register(reg)
		b := api.register(snip())
		path := "/v1/apps/" + a.AppID

		res := api.do("GET", path, a.APIKey, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.JSONEq(t, `{"app_id":"`+a.AppID+`","name":"Clipper","platform":"win","bundle_id":"com.example.clipper",
			"domain":"example.com","download_url":"https://example.com/Clipper.zip","contact_email":"dev@example.com",
			"category":"productivity","appcast_url":null,"status":"pending","earn_mode":"cash",
			"created_at":"2026-11-21T10:00:00Z","updated_at":"2026-11-21T10:00:00Z"}`, res.body)

		// Another app's id, for reading and for changing, answers exactly
		// like a missing one; no key is 401.
		for _, method := range []string{"GET", "PATCH"} {
			body := any(nil)
			if method == "PATCH" {
				body = map[string]any{"appcast_url": "https://example.com/appcast.xml"}
			}
			other := api.do(method, "/v1/apps/"+b.AppID, a.APIKey, body)
			missing := api.do(method, "/v1/apps/app_doesnotexist", a.APIKey, body)
			assert.Equal(t, http.StatusNotFound, other.status, method)
			assert.Equal(t, missing.body, other.body, method)
			assert.Equal(t, http.StatusUnauthorized, api.do(method, path, "", body).status, method)
		}
		assert.Nil(t, api.do("GET", "/v1/apps/"+b.AppID, b.APIKey, nil).json(t)["appcast_url"], "b was not changed")

		// Refusals change nothing.
		for _, c := range []struct {
			body any
			code string
		}{
			{map[string]any{}, "missing_field"},
			{nil, "missing_field"}, // no body at all
			{map[string]any{"appcast_url": ""}, "invalid_appcast_url"},
			{map[string]any{"appcast_url": "   "}, "invalid_appcast_url"},
			{map[string]any{"appcast_url": "ftp://example.com/appcast.xml"}, "invalid_appcast_url"},
			{map[string]any{"appcast_url": "https://u:p@example.com/appcast.xml"}, "invalid_appcast_url"},
			{map[string]any{"appcast_url": "https://example.com/" + strings.Repeat("a", 2048)}, "invalid_appcast_url"},
			{map[string]any{"appcast_url": 7}, "invalid_type"},
			{map[string]any{"appcast_url": "https://example.com/a.xml", "bundle_id": "com.example.other"}, "field_not_changeable"},
			{map[string]any{"domain": "example.org"}, "field_not_changeable"},
			{map[string]any{"category": "games", "appcast_url": nil}, "field_not_changeable"},
			{map[string]any{"appcast_url": nil, "colour": "blue"}, "unknown_field"},
		} {
			res := api.do("PATCH", path, a.APIKey, c.body)
			assert.Equal(t, http.StatusUnprocessableEntity, res.status, "%v: %s", c.body, res.body)
			assert.Equal(t, c.code, res.code(t), "%v", c.body)
		}
		res = api.do("PATCH", path, a.APIKey, map[string]any{"bundle_id": "x.y"})
		assert.Contains(t, res.json(t)["error"].(map[string]any)["message"], "bundle_id", "the message names the field")
		assert.Equal(t, "malformed_json", api.do("PATCH", path, a.APIKey, `{"appcast_url":`).code(t))

		// A change: the app with its new URL, and a scoring job due now.
		api.clock.Advance(time.Minute)
		res = api.do("PATCH", path, a.APIKey, map[string]any{"appcast_url": " https://example.com/win/appcast.xml "})
		require.Equal(t, http.StatusOK, res.status, res.body)
		var upd xpromo.AppUpdate
		res.decode(t, &upd)
		require.NotNil(t, upd.AppcastURL)
		assert.Equal(t, "https://example.com/win/appcast.xml", *upd.AppcastURL, "trimmed, as at registration")
		assert.Equal(t, time.Date(2026, 11, 21, 10, 1, 0, 0, time.UTC), upd.UpdatedAt)
		require.NotNil(t, upd.ScoringJobID)
		job := api.do("GET", path+"/jobs/"+*upd.ScoringJobID, a.APIKey, nil).json(t)
		assert.Equal(t, "scoring", job["kind"])
		assert.Equal(t, "queued", job["status"])
		assert.Equal(t, "2026-11-21T10:00:00Z", job["run_after"], "the registration's queued run is due already: kept, not doubled")
		assert.Equal(t, *upd.AppcastURL, *func() *string {
			var got xpromo.App
			api.do("GET", path, a.APIKey, nil).decode(t, &got)
			return got.AppcastURL
		}())

		// The same URL again changes nothing and queues nothing.
		res = api.do("PATCH", path, a.APIKey, map[string]any{"appcast_url": "https://example.com/win/appcast.xml"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Nil(t, res.json(t)["scoring_job_id"])

		// A suspended app may still fix its feed; null removes it.
		require.Equal(t, http.StatusOK, api.do("POST", "/v1/admin/apps/"+a.AppID+"/approve", adminToken, nil).status)
		require.Equal(t, http.StatusOK, api.do("POST", "/v1/admin/apps/"+a.AppID+"/suspend", adminToken, nil).status)
		api.clock.Advance(time.Minute)
		res = api.do("PATCH", path, a.APIKey, map[string]any{"appcast_url": nil})
		require.Equal(t, http.StatusOK, res.status, res.body)
		m := res.json(t)
		assert.Nil(t, m["appcast_url"])
		assert.Equal(t, "suspended", m["status"])
		assert.NotNil(t, m["scoring_job_id"])

		// The admin view shows the same record; the audit log, both changes.
		var view xpromo.AdminApp
		api.do("GET", "/v1/admin/apps/"+a.AppID, adminToken, nil).decode(t, &view)
		assert.Nil(t, view.AppcastURL)
		assert.Equal(t, time.Date(2026, 11, 21, 10, 2, 0, 0, time.UTC), view.UpdatedAt)
		var page xpromo.AuditPage
		api.do("GET", "/v1/admin/audit", adminToken, nil).decode(t, &page)
		var changes []xpromo.AuditEntry
		for _, e := range page.Entries {
			if e.Action == "app.appcast_url" {
				changes = append(changes, e)
			}
		}
		require.Len(t, changes, 2)
		assert.Equal(t, "app", changes[0].Actor)
		assert.Equal(t, a.AppID, changes[0].Subject)
		assert.JSONEq(t, `{"from":"https://example.com/win/appcast.xml","to":null}`, string(changes[0].Detail))
		assert.JSONEq(t, `{"from":null,"to":"https://example.com/win/appcast.xml"}`, string(changes[1].Detail))
	})
}
