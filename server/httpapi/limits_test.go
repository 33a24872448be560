package httpapi_test

import (
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// newLimitsEnv serves assembly.New(cfg) on s, its clock starting at 21 Nov 2026
// 10:00 UTC. mount, if not nil, adds fixture routes (MountLimitsFixture)
// before any request is made.
func newLimitsEnv(t *testing.T, s storage.Store, cfg assembly.Config, mount func(public, protected chi.Router)) *testServer {
	t.Helper()
	e := serve(t, s, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), cfg)
	if mount != nil {
		e.srv.MountLimitsFixture(mount)
	}
	return e
}

// invalidApp is a registration refused with 422 (a write that changes
// nothing).
const invalidApp = `{"name":"","platform":"mac","bundle_id":"com.example.x","domain":"example.com","download_url":"https://example.com/x.zip","contact_email":"dev@example.com"}`

// assertLimitHeaders checks the five rate limit headers exactly.
func assertLimitHeaders(t *testing.T, r response, policy string, limit, window, remaining, reset int) {
	t.Helper()
	want := map[string]string{
		"RateLimit-Policy":    fmt.Sprintf(`"%s";q=%d;w=%d`, policy, limit, window),
		"RateLimit":           fmt.Sprintf(`"%s";r=%d;t=%d`, policy, remaining, reset),
		"RateLimit-Limit":     fmt.Sprint(limit),
		"RateLimit-Remaining": fmt.Sprint(remaining),
		"RateLimit-Reset":     fmt.Sprint(reset),
	}
	for k, v := range want {
		assert.Equal(t, []string{v}, r.header.Values(k), "%s on a %d", k, r.status)
	}
}

func randomPeer() string {
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("10.%d.%d.%d:4242", b[0], b[1], b[2])
}

// Every response carries the rate limit headers of the policy that applied
// to it, whatever its status: successes, 401s, 404s (known and unknown
// routes), 422s.
func TestLimitsHeadersOnEveryResponse(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newLimitsEnv(t, s, assembly.Config{ReadLimit: 5, WriteLimit: 3}, nil)
		const peer = "192.0.2.10:5555"

		r := e.send(request{method: "GET", path: "/v1/rate-card", peer: peer})
		require.Equal(t, http.StatusOK, r.status, r.body)
		assertLimitHeaders(t, r, "read", 5, 60, 4, 60)
		assert.Empty(t, r.header.Get("Retry-After"))

		e.clock.Advance(10 * time.Second)
		r = e.send(request{method: "GET", path: "/v1/apps/app_x/score", peer: peer})
		require.Equal(t, http.StatusUnauthorized, r.status)
		assertLimitHeaders(t, r, "read", 5, 60, 3, 50)

		// A bad key is limited by IP too.
		r = e.send(request{method: "GET", path: "/v1/apps/app_x/score", key: "xp_test_nonsense", peer: peer})
		require.Equal(t, http.StatusUnauthorized, r.status)
		assertLimitHeaders(t, r, "read", 5, 60, 2, 50)

		r = e.send(request{method: "GET", path: "/v1/no-such-route", peer: peer})
		require.Equal(t, http.StatusNotFound, r.status)
		assertLimitHeaders(t, r, "read", 5, 60, 1, 50)

		// HEAD is a read.
		r = e.send(request{method: "HEAD", path: "/v1/rate-card", peer: peer, raw: true})
		require.Equal(t, http.StatusOK, r.status)
		assertLimitHeaders(t, r, "read", 5, 60, 0, 50)

		// Writes have their own window, opened by the first write.
		app := e.registerFrom(peer, snip())
		appID, key := app.AppID, app.APIKey
		r = e.send(request{method: "POST", path: "/v1/apps", body: invalidApp, peer: peer})
		require.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
		assertLimitHeaders(t, r, "write", 3, 60, 1, 60)

		// With a valid key the budget is the app's, not the IP's.
		e.clock.Advance(5 * time.Second)
		r = e.send(request{method: "GET", path: "/v1/apps/app_someone_else/score", key: key, peer: peer})
		require.Equal(t, http.StatusNotFound, r.status, r.body)
		assertLimitHeaders(t, r, "read", 5, 60, 4, 60)
		r = e.send(request{method: "GET", path: "/v1/apps/" + appID + "/score", key: key, peer: peer})
		require.Equal(t, http.StatusOK, r.status, r.body)
		assertLimitHeaders(t, r, "read", 5, 60, 3, 60)
	})
}

// The (limit+1)th write in a window is refused with 429 rate_limited,
// retry_after and Retry-After at the window's end; reads are unaffected;
// the next window allows writes again.
func TestLimitsWritesOverTheLimit(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newLimitsEnv(t, s, assembly.Config{ReadLimit: 5, WriteLimit: 3}, nil)
		app := e.registerFrom("192.0.2.20:1", snip())
		appID, key := app.AppID, app.APIKey
		write := request{method: "POST", path: "/v1/apps/app_not_mine/keys/rotate", key: key, peer: "192.0.2.20:1"}
		for i := range 3 {
			r := e.send(write)
			require.Equal(t, http.StatusNotFound, r.status, r.body)
			assertLimitHeaders(t, r, "write", 3, 60, 2-i, 60-15*i)
			e.clock.Advance(15 * time.Second)
		}
		r := e.send(write)
		require.Equal(t, http.StatusTooManyRequests, r.status)
		assert.Equal(t, apperr.RateLimited, r.code(t))
		var body xpromo.ErrorResponse
		r.decode(t, &body)
		require.NotNil(t, body.Error.RetryAfter)
		assert.Equal(t, e.clock.Now().Add(15*time.Second), *body.Error.RetryAfter)
		assert.Equal(t, "15", r.header.Get("Retry-After"))
		assertLimitHeaders(t, r, "write", 3, 60, 0, 15)

		// Any write, on any route, shares the budget; unauthenticated writes
		// from the same address do not (they are the IP's).
		r = e.send(request{method: "POST", path: "/v1/apps", body: invalidApp, key: key, peer: "192.0.2.20:1"})
		require.Equal(t, http.StatusTooManyRequests, r.status)
		r = e.send(request{method: "POST", path: "/v1/apps", body: invalidApp, peer: "192.0.2.20:1"})
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		assertLimitHeaders(t, r, "write", 3, 60, 1, 15)

		// Reads have their own budget.
		r = e.send(request{method: "GET", path: "/v1/apps/" + appID + "/score", key: key})
		require.Equal(t, http.StatusOK, r.status, r.body)
		assertLimitHeaders(t, r, "read", 5, 60, 4, 60)

		// Another app is not affected.
		other := e.registerFrom("192.0.2.21:1", snip()).APIKey
		r = e.send(request{method: "POST", path: "/v1/apps/app_not_mine/keys/rotate", key: other})
		require.Equal(t, http.StatusNotFound, r.status)
		assertLimitHeaders(t, r, "write", 3, 60, 2, 60)

		// 1 s before the window closes: still refused; at its end: allowed.
		e.clock.Advance(14 * time.Second)
		r = e.send(write)
		require.Equal(t, http.StatusTooManyRequests, r.status)
		assert.Equal(t, "1", r.header.Get("Retry-After"))
		e.clock.Advance(time.Second)
		r = e.send(write)
		require.Equal(t, http.StatusNotFound, r.status)
		assertLimitHeaders(t, r, "write", 3, 60, 2, 60)
	})
}

// Unauthenticated requests are limited per client address: RemoteAddr,
// never X-Forwarded-For, IPv6 by /64.
func TestLimitsPerIP(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newLimitsEnv(t, s, assembly.Config{WriteLimit: 2}, nil)
		post := func(peer string, header http.Header) int {
			t.Helper()
			r := e.send(request{method: "POST", path: "/v1/apps", body: invalidApp, peer: peer, header: header})
			return r.status
		}
		assert.Equal(t, 422, post("192.0.2.1:1000", nil))
		assert.Equal(t, 422, post("192.0.2.1:2000", nil)) // another port, same client
		assert.Equal(t, 429, post("192.0.2.1:1000", nil))
		assert.Equal(t, 429, post("192.0.2.1:1000", http.Header{"X-Forwarded-For": {"198.51.100.7"}, "X-Real-Ip": {"198.51.100.8"}}))
		assert.Equal(t, 422, post("192.0.2.2:1000", nil))

		assert.Equal(t, 422, post("[2001:db8::1]:1000", nil))
		assert.Equal(t, 422, post("[2001:db8::2]:1000", nil))
		assert.Equal(t, 429, post("[2001:db8::ffff]:1000", nil)) // same /64
		assert.Equal(t, 422, post("[2001:db8:0:1::1]:1000", nil))
		// An IPv4-mapped IPv6 address is the IPv4 client.
		assert.Equal(t, 429, post("[::ffff:192.0.2.1]:1000", nil))
	})
}

func testRedisURL(t *testing.T) string {
	url := os.Getenv("XPROMO_TEST_REDIS_URL")
	if url == "" {
		t.Skip("XPROMO_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379/0)")
	}
	return url
}

// With Redis, instances share one budget per caller.
func TestLimitsRedisSharedAcrossInstances(t *testing.T) {
	url := testRedisURL(t)
	store := storagetest.SQLite(t)
	cfg := assembly.Config{RedisURL: url, ReadLimit: 100, WriteLimit: 3}
	a := newLimitsEnv(t, store, cfg, nil)
	b := newLimitsEnv(t, store, cfg, nil)
	// A caller of its own: Redis outlives test runs.
	peer := randomPeer()
	for i, e := range []*testServer{a, b, a} {
		r := e.send(request{method: "POST", path: "/v1/apps", body: invalidApp, peer: peer})
		require.Equal(t, http.StatusUnprocessableEntity, r.status, "write %d", i+1)
		assertLimitHeaders(t, r, "write", 3, 60, 2-i, 60)
	}
	r := b.send(request{method: "POST", path: "/v1/apps", body: invalidApp, peer: peer})
	require.Equal(t, http.StatusTooManyRequests, r.status)
	assert.Equal(t, apperr.RateLimited, r.code(t))
	assert.Equal(t, "60", r.header.Get("Retry-After"))
	assertLimitHeaders(t, r, "write", 3, 60, 0, 60)
}

// A limiter that fails (Redis down) lets requests through, logs a warning
// and counts them; the headers that need the count are left out.
func TestLimitsFailOpen(t *testing.T) {
	reg, logs := httpapi.NewRegistry(), &httpapi.SyncBuffer{}
	e := newLimitsEnv(t, storagetest.SQLite(t), assembly.Config{
		RedisURL: "redis://127.0.0.1:1/0", WriteLimit: 1, Registry: reg,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	}, nil)
	for range 3 {
		r := e.send(request{method: "POST", path: "/v1/apps", body: invalidApp})
		require.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
		assert.Equal(t, `"write";q=1;w=60`, r.header.Get("RateLimit-Policy"))
		assert.Equal(t, "1", r.header.Get("RateLimit-Limit"))
		for _, h := range []string{"RateLimit", "RateLimit-Remaining", "RateLimit-Reset"} {
			assert.Empty(t, r.header.Values(h), h)
		}
	}
	assert.Contains(t, logs.String(), "rate limiter unavailable")
	r := e.send(request{method: "GET", path: "/metrics", raw: true})
	assert.Contains(t, r.body, "xpromo_ratelimit_failures_total 3")
}

// --- Idempotency-Key ---

// A registration retried with its key replays the first response, api_key
// included, without registering again.
func TestIdempotencyRegistrationReplay(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newLimitsEnv(t, s, assembly.Config{WriteLimit: 1000}, nil)
		const peer = "192.0.2.30:1"
		reg := request{method: "POST", path: "/v1/apps", body: snip(), idem: []string{"reg-8e03978e"}, peer: peer}
		first := e.send(reg)
		require.Equal(t, http.StatusCreated, first.status, first.body)
		assert.False(t, first.replayed())
		var app xpromo.RegisterAppResponse
		first.decode(t, &app)

		e.clock.Advance(time.Hour)
		again := e.send(reg)
		require.Equal(t, http.StatusCreated, again.status)
		assert.True(t, again.replayed())
		assert.Equal(t, first.body, again.body) // same app_id and api_key: one app
		assert.Equal(t, first.header.Get("Content-Type"), again.header.Get("Content-Type"))
		// Rate limit headers are today's, not the stored ones.
		assertLimitHeaders(t, again, "write", 1000, 60, 999, 60)
		// The quoted Structured Field form is the same key.
		quoted := reg
		quoted.idem = []string{`"reg-8e03978e"`}
		assert.Equal(t, first.body, e.send(quoted).body)
		// The replayed key works.
		r := e.send(request{method: "GET", path: "/v1/apps/" + app.AppID + "/score", key: app.APIKey})
		require.Equal(t, http.StatusOK, r.status, r.body)

		// The same key with another body is a misuse.
		changed := reg
		changed.body = appRequest("Other", xpromo.PlatformMac)
		r = e.send(changed)
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		assert.Equal(t, apperr.IdempotencyKeyReused, r.code(t))

		// Keys are per caller: another client's identical key is its own
		// (and never sees this client's api_key).
		other := reg
		other.peer = "192.0.2.31:1"
		r = e.send(other)
		require.Equal(t, http.StatusCreated, r.status)
		assert.False(t, r.replayed())
		assert.NotContains(t, r.body, app.APIKey)
		assert.NotContains(t, r.body, app.AppID)

		// Kept 24 hours from the first use: then the request runs again.
		e.clock.Advance(23*time.Hour - time.Second)
		assert.True(t, e.send(reg).replayed())
		e.clock.Advance(time.Second)
		r = e.send(reg)
		require.Equal(t, http.StatusCreated, r.status)
		assert.False(t, r.replayed())
		var later xpromo.RegisterAppResponse
		r.decode(t, &later)
		assert.NotEqual(t, app.AppID, later.AppID)
	})
}

func TestIdempotencyInvalidKey(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newLimitsEnv(t, s, assembly.Config{WriteLimit: 1000}, nil)
		for _, idem := range [][]string{
			{strings.Repeat("k", 256)},
			{"caf\u00e9"},
			{""},
			{`""`},
			{"one", "two"},
		} {
			r := e.send(request{method: "POST", path: "/v1/apps", body: snip(), idem: idem})
			require.Equal(t, http.StatusBadRequest, r.status, "%q: %s", idem, r.body)
			assert.Equal(t, apperr.InvalidIdempotencyKey, r.code(t), "%q", idem)
			assertLimitHeaders(t, r, "write", 1000, 60, 999, 60)
			e.clock.Advance(time.Minute) // a fresh window each time
		}
		r := e.send(request{method: "POST", path: "/v1/apps", body: snip(), idem: []string{strings.Repeat("k", 255)}})
		require.Equal(t, http.StatusCreated, r.status, r.body)
	})
}

// Concurrent requests with one key: one runs; the others are told it is in
// use, or get its replay once it finished. Never two registrations.
func TestIdempotencyConcurrentRegistrations(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newLimitsEnv(t, s, assembly.Config{WriteLimit: 1000}, nil)
		reg := request{method: "POST", path: "/v1/apps", body: snip(), idem: []string{"concurrent"}}
		const n = 12
		results := make(chan response, n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				r, err := e.trySend(reg)
				if err != nil {
					t.Error(err)
					return
				}
				results <- r
			})
		}
		wg.Wait()
		close(results)
		ran, replays := 0, 0
		bodies := map[string]bool{}
		for r := range results {
			switch {
			case r.status == http.StatusCreated && r.replayed():
				replays++
				bodies[r.body] = true
			case r.status == http.StatusCreated:
				ran++
				bodies[r.body] = true
			case r.status == http.StatusConflict:
				assert.Equal(t, apperr.IdempotencyKeyInUse, r.code(t))
			default:
				t.Errorf("unexpected %d: %s", r.status, r.body)
			}
		}
		assert.Equal(t, 1, ran, "requests that ran")
		assert.Len(t, bodies, 1, "distinct registrations returned")
		// Once finished, every retry is a replay of that one registration.
		r := e.send(reg)
		require.True(t, r.replayed())
		assert.True(t, bodies[r.body])
	})
}

// fixture is a set of handlers whose behaviour the tests control, mounted
// behind the real middleware.
type limitsFixture struct {
	runs    sync.Map // path → *atomic.Int64
	release chan struct{}
	started chan struct{}
}

func (f *limitsFixture) count(path string) int64 {
	v, _ := f.runs.LoadOrStore(path, new(atomic.Int64))
	return v.(*atomic.Int64).Load()
}

func (f *limitsFixture) mount(public, protected chi.Router) {
	handle := func(w http.ResponseWriter, r *http.Request) {
		v, _ := f.runs.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n := v.(*atomic.Int64).Add(1)
		body, _ := io.ReadAll(r.Body)
		switch chi.URLParam(r, "what") {
		case "block":
			f.started <- struct{}{}
			<-f.release
		case "panic":
			if n == 1 {
				panic("first run fails")
			}
		case "conflict":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			fmt.Fprintf(w, `{"error":{"code":%q,"message":"retry","retry_after":null}}`, chi.URLParam(r, "code"))
			return
		}
		var status int
		fmt.Sscan(chi.URLParam(r, "code"), &status)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", fmt.Sprintf("/things/%d", n))
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"run":%d,"body":%q}`, n, body)
	}
	public.Post("/{what}/{code}", handle)
	public.Get("/{what}/{code}", handle)
	protected.Post("/private/{what}/{code}", handle)
}

func newFixtureEnv(t *testing.T, s storage.Store) (*testServer, *limitsFixture) {
	f := &limitsFixture{release: make(chan struct{}), started: make(chan struct{}, 1)}
	return newLimitsEnv(t, s, assembly.Config{WriteLimit: 1000, ReadLimit: 1000}, f.mount), f
}

// fixture sends a request to a fixture route; body "" is none.
func (e *testServer) fixture(method, path, key, body string, idem ...string) response {
	e.t.Helper()
	q := request{method: method, path: "/fixture" + path, key: key, idem: idem, raw: true}
	if body != "" {
		q.body = body
	}
	return e.send(q)
}

// What is stored and replayed: final answers (2xx, 4xx) are; server errors,
// 402, 429 and transient conflicts are not, so their retries run again.
func TestIdempotencyWhatIsStored(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e, f := newFixtureEnv(t, s)

		first := e.fixture("POST", "/x/201", "", `{"a":1}`, "k1")
		require.Equal(t, 201, first.status)
		assert.JSONEq(t, `{"run":1,"body":"{\"a\":1}"}`, first.body) // the handler got the body
		again := e.fixture("POST", "/x/201", "", `{"a":1}`, "k1")
		assert.Equal(t, 201, again.status)
		assert.True(t, again.replayed())
		assert.Equal(t, first.body, again.body)
		assert.Equal(t, "/things/1", again.header.Get("Location"))
		assert.Equal(t, "application/json", again.header.Get("Content-Type"))
		assert.NotEmpty(t, again.header.Get(httpapi.RequestIDHeader))
		assert.NotEqual(t, first.header.Get(httpapi.RequestIDHeader), again.header.Get(httpapi.RequestIDHeader))
		assert.EqualValues(t, 1, f.count("/fixture/x/201"))

		// Client errors are final too.
		for range 2 {
			r := e.fixture("POST", "/x/422", "", `{}`, "k2")
			assert.Equal(t, 422, r.status)
		}
		assert.EqualValues(t, 1, f.count("/fixture/x/422"))

		// Not stored: each retry runs again.
		for _, code := range []string{"500", "503", "402", "429"} {
			for i := range 2 {
				r := e.fixture("POST", "/x/"+code, "", `{}`, "k-"+code)
				assert.Equal(t, code, fmt.Sprint(r.status))
				assert.False(t, r.replayed())
				assert.Contains(t, r.body, fmt.Sprintf(`"run":%d`, i+1))
			}
		}
		// "Retry" conflicts run again; other conflicts are answers.
		for _, code := range []string{apperr.Conflict, apperr.PayoutInProgress, apperr.InvalidTransition} {
			for range 2 {
				e.fixture("POST", "/conflict/"+code, "", `{}`, "k-"+code)
			}
		}
		assert.EqualValues(t, 2, f.count("/fixture/conflict/"+apperr.Conflict))
		assert.EqualValues(t, 2, f.count("/fixture/conflict/"+apperr.PayoutInProgress))
		assert.EqualValues(t, 1, f.count("/fixture/conflict/"+apperr.InvalidTransition))

		// A panicking handler gives the key up: the retry runs.
		r := e.fixture("POST", "/panic/201", "", `{}`, "k-panic")
		assert.Equal(t, 500, r.status)
		r = e.fixture("POST", "/panic/201", "", `{}`, "k-panic")
		assert.Equal(t, 201, r.status)
		assert.False(t, r.replayed())

		// Without a key, or on a GET, every request runs.
		e.fixture("POST", "/nokey/201", "", `{}`)
		e.fixture("POST", "/nokey/201", "", `{}`)
		assert.EqualValues(t, 2, f.count("/fixture/nokey/201"))
		e.fixture("GET", "/get/200", "", "", "k-get")
		e.fixture("GET", "/get/200", "", "", "k-get")
		assert.EqualValues(t, 2, f.count("/fixture/get/200"))

		// The fingerprint covers the path (and query) as well as the body.
		r = e.fixture("POST", "/x/201?v=2", "", `{"a":1}`, "k1")
		assert.Equal(t, 422, r.status)
		assert.Equal(t, apperr.IdempotencyKeyReused, r.code(t))
		r = e.fixture("POST", "/y/201", "", `{"a":1}`, "k1")
		assert.Equal(t, apperr.IdempotencyKeyReused, r.code(t))
	})
}

// Keys are scoped per caller: per app, the admin token, or the client IP.
func TestIdempotencyScopes(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e, f := newFixtureEnv(t, s)
		_, keyA := e.newApp()
		_, keyB := e.newApp()
		for _, key := range []string{keyA, keyB, keyA, keyB} {
			r := e.fixture("POST", "/private/x/201", key, `{}`, "shared")
			require.Equal(t, 201, r.status, r.body)
		}
		assert.EqualValues(t, 2, f.count("/fixture/private/x/201"))

		for _, key := range []string{"", adminToken, "", adminToken} {
			e.fixture("POST", "/x/201", key, `{}`, "shared")
		}
		assert.EqualValues(t, 2, f.count("/fixture/x/201"))
	})
}

// While a request holds its key, a retry is refused with 409
// idempotency_key_in_use; once it finished, the retry gets its replay.
func TestIdempotencyInUse(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e, f := newFixtureEnv(t, s)
		// Unblock the handler however the test ends, or the server's Close
		// would wait for it forever.
		release := sync.OnceFunc(func() { close(f.release) })
		t.Cleanup(release)
		done := make(chan response, 1)
		go func() {
			r, err := e.trySend(request{method: "POST", path: "/fixture/block/201", body: `{}`, idem: []string{"slow"}, raw: true})
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		<-f.started
		r := e.fixture("POST", "/block/201", "", `{}`, "slow")
		assert.Equal(t, http.StatusConflict, r.status)
		assert.Equal(t, apperr.IdempotencyKeyInUse, r.code(t))
		assert.Equal(t, "1", r.header.Get("Retry-After"), "a retry is to come back in a second")
		// Past its lease a claim counts as abandoned (its request crashed),
		// and a retry may take it over; a live one cannot tell, so this
		// checks only the refusal before the lease ends.
		e.clock.Advance(59 * time.Second)
		r = e.fixture("POST", "/block/201", "", `{}`, "slow")
		assert.Equal(t, apperr.IdempotencyKeyInUse, r.code(t))

		release()
		first := <-done
		require.Equal(t, 201, first.status)
		r = e.fixture("POST", "/block/201", "", `{}`, "slow")
		assert.True(t, r.replayed())
		assert.Equal(t, first.body, r.body)
		assert.EqualValues(t, 1, f.count("/fixture/block/201"))
	})
}

// TestLimitsOneInstant: on a clock between two seconds, and after the test
// clock was moved two days ahead (POST /v1/admin/clock/advance), a 429's
// Retry-After, RateLimit-Reset and t name the same delay, and retry_after is
// the server's now plus that delay, on the server's (test) clock.
func TestLimitsOneInstant(t *testing.T) {
	s := storagetest.SQLite(t)
	e := serve(t, s, time.Date(2026, 11, 21, 10, 0, 0, 400_000_000, time.UTC), assembly.Config{ReadLimit: 100, WriteLimit: 1})
	r := e.send(request{method: "POST", path: "/v1/admin/clock/advance", key: adminToken, body: `{"seconds":172800}`})
	require.Equal(t, http.StatusOK, r.status, r.body)
	var clock struct {
		Now time.Time `json:"now"`
	}
	r.decode(t, &clock)
	require.Equal(t, e.clock.Now().Add(48*time.Hour), clock.Now, "the server's clock moved")

	// The window opens with the first write, at a fraction of a second:
	// the second is refused exactly 60 s before the reset.
	peer := randomPeer()
	r = e.send(request{method: "POST", path: "/v1/apps", body: invalidApp, peer: peer})
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	r = e.send(request{method: "POST", path: "/v1/apps", body: invalidApp, peer: peer})
	require.Equal(t, http.StatusTooManyRequests, r.status)
	assert.Equal(t, "60", r.header.Get("Retry-After"))
	assert.Equal(t, "60", r.header.Get("RateLimit-Reset"))
	assert.Equal(t, `"write";r=0;t=60`, r.header.Get("RateLimit"))
	var body xpromo.ErrorResponse
	r.decode(t, &body)
	require.NotNil(t, body.Error.RetryAfter)
	serverNow := e.clock.Now().Add(48 * time.Hour)
	assert.Equal(t, serverNow.Add(60*time.Second), *body.Error.RetryAfter, "retry_after = the server's now + Retry-After")
}
