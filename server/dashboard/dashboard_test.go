package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/dashboard"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

const adminToken = "dash-admin-token"

// clock is the test's clock, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// stack is a test-mode server on a real store, and what the tests drive it
// with.
type stack struct {
	t     *testing.T
	srv   *assembly.Server
	http  *httptest.Server
	clock *clock
	store storage.Store
}

func newStack(t *testing.T, store storage.Store) *stack {
	t.Helper()
	c := &clock{now: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)}
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	srv, err := assembly.Build(assembly.Config{Now: c.Now, AdminToken: adminToken, BaseURL: base,
		ReadLimit: 1_000_000, WriteLimit: 1_000_000}, store)
	require.NoError(t, err)
	hs.Config.Handler = srv.HTTP
	hs.Start()
	t.Cleanup(hs.Close)
	return &stack{t: t, srv: srv, http: hs, clock: c, store: store}
}

// app registers an approved app and returns its id and API key.
func (s *stack) app(name string) (string, string) {
	s.t.Helper()
	id, key := s.pendingApp(name)
	_, err := s.srv.Apps.Act(context.Background(), id, apps.Approve, "test")
	require.NoError(s.t, err)
	return id, key
}

// pendingApp registers an app that waits for review.
func (s *stack) pendingApp(name string) (string, string) {
	s.t.Helper()
	a, key, _, err := s.srv.Apps.Register(context.Background(), apps.RegisterParams{Name: name, Platform: "mac",
		BundleID: "com.example." + strings.ToLower(name), Domain: "example.com",
		DownloadURL: "https://example.com/" + name + ".zip", ContactEmail: "team@example.com"})
	require.NoError(s.t, err)
	return a.ID, key
}

// browser is a cookie-keeping client that does not follow redirects, and
// sends the Origin a same-origin form post carries.
type browser struct {
	t      *testing.T
	base   string
	client *http.Client
}

func (s *stack) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: s.t, base: s.http.URL, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	*http.Response
	Body string
}

func (b *browser) do(method, path string, form url.Values, header http.Header) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	require.NoError(b.t, err)
	req.Header.Set("Accept", "text/html")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.base)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := b.client.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return page{resp, string(raw)}
}

func (b *browser) get(path string) page { return b.do("GET", path, nil, nil) }
func (b *browser) post(path string, form url.Values) page {
	return b.do("POST", path, form, nil)
}

func (b *browser) signIn(key string) {
	b.t.Helper()
	p := b.post("/dashboard/sign-in", url.Values{"key": {key}})
	require.Equal(b.t, http.StatusSeeOther, p.StatusCode, p.Body)
	require.Equal(b.t, "/dashboard/", p.Header.Get("Location"))
}

var formKey = regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`)

func (p page) formKey(t *testing.T) string {
	m := formKey.FindStringSubmatch(p.Body)
	require.NotNil(t, m, "no idempotency key in the page")
	return m[1]
}

// api calls the REST API with a bearer key.
func (s *stack) api(method, path, key string, body any, out any) int {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		r = strings.NewReader(string(raw))
	}
	req, _ := http.NewRequest(method, s.http.URL+path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(s.t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

func TestRootSendsBrowsersToTheDashboard(t *testing.T) {
	s := newStack(t, storagetest.SQLite(t))
	b := s.browser()
	p := b.get("/")
	assert.Equal(t, http.StatusSeeOther, p.StatusCode)
	assert.Equal(t, "/dashboard/", p.Header.Get("Location"))
	// An API client keeps the JSON 404.
	resp, err := http.Get(s.http.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	// Without a session, the dashboard asks to sign in.
	p = b.get("/dashboard/")
	assert.Equal(t, http.StatusSeeOther, p.StatusCode)
	assert.Equal(t, "/dashboard/sign-in", p.Header.Get("Location"))
}

func TestSecurityHeadersOnEveryPage(t *testing.T) {
	s := newStack(t, storagetest.SQLite(t))
	_, key := s.app("Clip")
	b := s.browser()
	check := func(path string, p page) {
		t.Helper()
		assert.Equal(t, dashboard.ContentSecurityPolicy, p.Header.Get("Content-Security-Policy"), path)
		assert.Contains(t, p.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
		assert.NotContains(t, p.Header.Get("Content-Security-Policy"), "unsafe-")
		assert.Equal(t, "DENY", p.Header.Get("X-Frame-Options"), path)
		assert.Equal(t, "no-referrer", p.Header.Get("Referrer-Policy"), path)
		assert.Equal(t, "nosniff", p.Header.Get("X-Content-Type-Options"), path)
		// No inline script or style: every script has a src, no style
		// attribute or element.
		for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(p.Body, -1) {
			assert.Contains(t, tag, ` src="/dashboard/static/`, path)
		}
		assert.NotContains(t, p.Body, "style=", path)
		assert.NotContains(t, p.Body, "<style", path)
	}
	check("/dashboard/sign-in", b.get("/dashboard/sign-in"))
	b.signIn(key)
	op := s.browser()
	op.signIn(adminToken)
	for _, path := range []string{"/dashboard/operator/review", "/dashboard/operator/complaints", "/dashboard/operator/audit", "/dashboard/operator/network"} {
		p := op.get(path)
		require.Equal(t, http.StatusOK, p.StatusCode, path)
		check(path, p)
		assert.Contains(t, p.Body, `class="test-banner"`, path)
	}
	for _, path := range []string{"/dashboard/", "/dashboard/installs", "/dashboard/money", "/dashboard/campaigns", "/dashboard/developers", "/dashboard/score", "/dashboard/nothing-here", "/dashboard/static/style.css"} {
		p := b.get(path)
		check(path, p)
		if strings.HasSuffix(path, "nothing-here") {
			assert.Equal(t, http.StatusNotFound, p.StatusCode)
			continue
		}
		require.Equal(t, http.StatusOK, p.StatusCode, path)
		if !strings.Contains(path, "static") {
			// Test mode: the banner on every page.
			assert.Contains(t, p.Body, `class="test-banner"`, path)
		}
	}
}

func TestCrossOriginPostIsRefused(t *testing.T) {
	s := newStack(t, storagetest.SQLite(t))
	_, key := s.app("Clip")
	b := s.browser()
	b.signIn(key)
	key2 := b.get("/dashboard/money").formKey(t)
	form := url.Values{"idempotency_key": {key2}, "amount_eur": {"50"}}
	p := b.do("POST", "/dashboard/money/top-up", form, http.Header{"Sec-Fetch-Site": {"cross-site"}})
	assert.Equal(t, http.StatusForbidden, p.StatusCode)
	p = b.do("POST", "/dashboard/money/top-up", form, http.Header{"Origin": {"https://evil.example"}})
	assert.Equal(t, http.StatusForbidden, p.StatusCode)
	// Nothing was opened: the same-origin post is the first.
	p = b.post("/dashboard/money/top-up", form)
	assert.Equal(t, http.StatusSeeOther, p.StatusCode)
	assert.Empty(t, p.Header.Get("Idempotent-Replayed"))
	// Sign-out is a POST too.
	p = b.do("POST", "/dashboard/sign-out", url.Values{}, http.Header{"Sec-Fetch-Site": {"cross-site"}})
	assert.Equal(t, http.StatusForbidden, p.StatusCode)
	assert.Equal(t, http.StatusOK, b.get("/dashboard/money").StatusCode, "still signed in")
}

func TestSignInWithKeyAndSignOut(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, store storage.Store) {
		s := newStack(t, store)
		id, key := s.app("Clip")
		b := s.browser()
		p := b.post("/dashboard/sign-in", url.Values{"key": {"xp_test_wrong"}})
		assert.Equal(t, http.StatusUnauthorized, p.StatusCode)
		assert.Contains(t, p.Body, "neither an API key")
		b.signIn(key)
		p = b.get("/dashboard/")
		require.Equal(t, http.StatusOK, p.StatusCode)
		assert.Contains(t, p.Body, id)
		assert.Contains(t, p.Body, "Clip")
		u, _ := url.Parse(s.http.URL)
		cookies := b.client.Jar.Cookies(u)
		require.Len(t, cookies, 1)
		assert.Equal(t, "xpromo_session", cookies[0].Name, "plain http: no __Host- prefix")

		p = b.post("/dashboard/sign-out", url.Values{})
		assert.Equal(t, http.StatusSeeOther, p.StatusCode)
		assert.Equal(t, "/dashboard/sign-in", b.get("/dashboard/money").Header.Get("Location"))
		assert.Empty(t, b.client.Jar.Cookies(u))

		// The operator signs in with the admin token.
		op := s.browser()
		op.signIn(adminToken)
		p = op.get("/dashboard/")
		assert.Equal(t, http.StatusSeeOther, p.StatusCode)
		assert.Equal(t, "/dashboard/operator/review", p.Header.Get("Location"))
		// An operator session is no app's.
		assert.Equal(t, "/dashboard/sign-in", op.get("/dashboard/money").Header.Get("Location"))
	})
}

func TestSessionExpiry(t *testing.T) {
	s := newStack(t, storagetest.SQLite(t))
	_, key := s.app("Clip")
	b := s.browser()
	b.signIn(key)
	// Idle: each request keeps it alive; 30 minutes without one end it.
	for range 4 {
		s.clock.Add(29 * time.Minute)
		require.Equal(t, http.StatusOK, b.get("/dashboard/money").StatusCode)
	}
	s.clock.Add(30 * time.Minute)
	assert.Equal(t, "/dashboard/sign-in", b.get("/dashboard/money").Header.Get("Location"))

	// Absolute: 12 hours after sign-in, however busy.
	b.signIn(key)
	for elapsed := time.Duration(0); elapsed+20*time.Minute < 12*time.Hour; elapsed += 20 * time.Minute {
		s.clock.Add(20 * time.Minute)
		require.Equal(t, http.StatusOK, b.get("/dashboard/money").StatusCode, "after %s", elapsed)
	}
	s.clock.Add(20 * time.Minute)
	assert.Equal(t, "/dashboard/sign-in", b.get("/dashboard/money").Header.Get("Location"))
}

func TestAnotherAppsChainIsNotFound(t *testing.T) {
	s := newStack(t, storagetest.SQLite(t))
	_, key := s.app("Clip")
	b := s.browser()
	b.signIn(key)
	p := b.get("/dashboard/installs/ch_06h0gmdjhz0ke0qmaztq8zacam")
	assert.Equal(t, http.StatusNotFound, p.StatusCode)
	assert.Contains(t, p.Body, "not yours to see")
}

func TestTopUpDoubleSubmitIsOneMovement(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, store storage.Store) {
		s := newStack(t, store)
		id, key := s.app("Clip")
		b := s.browser()
		b.signIn(key)
		form := url.Values{"idempotency_key": {b.get("/dashboard/money").formKey(t)}, "amount_eur": {"50"}}
		first := b.post("/dashboard/money/top-up", form)
		require.Equal(t, http.StatusSeeOther, first.StatusCode, first.Body)
		second := b.post("/dashboard/money/top-up", form)
		require.Equal(t, http.StatusSeeOther, second.StatusCode)
		assert.Equal(t, "true", second.Header.Get("Idempotent-Replayed"))
		checkout := first.Header.Get("Location")
		assert.Equal(t, checkout, second.Header.Get("Location"), "the same checkout session")
		// Pay it (the test checkout), twice for good measure.
		for range 2 {
			resp, err := http.Post(checkout, "", nil)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
		var ledger struct {
			Lines []struct {
				Type        string `json:"type"`
				AmountCents int64  `json:"amount_cents"`
			} `json:"lines"`
		}
		require.Equal(t, 200, s.api("GET", "/v1/apps/"+id+"/ledger", key, nil, &ledger))
		require.Len(t, ledger.Lines, 1)
		assert.Equal(t, "topup", ledger.Lines[0].Type)
		assert.Equal(t, int64(5000), ledger.Lines[0].AmountCents)
		// The money page shows the same line and balance.
		p := b.get("/dashboard/money")
		assert.Contains(t, p.Body, "<dt>Wallet</dt><dd>EUR 50.00</dd>")
		assert.Equal(t, 1, strings.Count(p.Body, "<td>topup</td>"))
		csv := b.get("/dashboard/money/ledger.csv")
		assert.Equal(t, "text/csv; charset=utf-8", csv.Header.Get("Content-Type"))
		assert.Equal(t, 2, strings.Count(csv.Body, "\n"), csv.Body)
		assert.Contains(t, csv.Body, fmt.Sprintf(",topup,5000,5000,"))
	})
}

func TestSignInLinkOnceAndExpiry(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, store storage.Store) {
		s := newStack(t, store)
		id, key := s.app("Clip")
		var link struct {
			URL       string    `json:"url"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		require.Equal(t, http.StatusCreated, s.api("POST", "/v1/dashboard/sign-in-links", key, nil, &link))
		assert.Equal(t, s.clock.Now().Add(5*time.Minute), link.ExpiresAt)
		u, err := url.Parse(link.URL)
		require.NoError(t, err)
		token := u.Query().Get("link")

		b := s.browser()
		// Opening the link changes nothing: it asks to continue.
		for range 2 {
			p := b.get(u.RequestURI())
			require.Equal(t, http.StatusOK, p.StatusCode)
			assert.Contains(t, p.Body, `name="link" value="`+token+`"`)
		}
		p := b.post("/dashboard/sign-in", url.Values{"link": {token}})
		require.Equal(t, http.StatusSeeOther, p.StatusCode, p.Body)
		assert.Contains(t, b.get("/dashboard/").Body, id)

		// Used once: another browser cannot.
		p = s.browser().post("/dashboard/sign-in", url.Values{"link": {token}})
		assert.Equal(t, http.StatusUnauthorized, p.StatusCode)
		assert.Contains(t, p.Body, "used already, has expired")

		// Five minutes later a fresh link has expired.
		require.Equal(t, http.StatusCreated, s.api("POST", "/v1/dashboard/sign-in-links", key, nil, &link))
		u, _ = url.Parse(link.URL)
		s.clock.Add(5 * time.Minute)
		p = s.browser().post("/dashboard/sign-in", url.Values{"link": {u.Query().Get("link")}})
		assert.Equal(t, http.StatusUnauthorized, p.StatusCode)
	})
}
