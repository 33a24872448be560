package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
)

// The harness the black-box tests of this package share: the whole server
// as it ships (assembly.New) in test mode on a real store, served over HTTP on a
// manual clock, and a client whose every exchange is checked against
// openapi.json.

// adminToken is the operator token of every server the tests start.
const adminToken = "admin-secret-token"

// peerHeader lets a test choose the client address the server sees
// (RemoteAddr), to exercise per-IP limits through a real HTTP server.
const peerHeader = "X-Test-Peer"

// unlimited is a configuration whose rate limits no test reaches.
var unlimited = assembly.Config{ReadLimit: 100000, WriteLimit: 100000}

// testServer is a running server under test.
type testServer struct {
	t      *testing.T
	url    string
	clock  *clocktest.Clock // the server's Now
	store  storage.Store
	srv    *httpapi.Server
	built  *assembly.Server // srv's services (background passes)
	client *http.Client     // checks every exchange against openapi.json
}

// adminOff as cfg.AdminToken makes serve start a server whose admin API is
// off (no admin token), as `make run` does by default.
const adminOff = "(admin API off)"

// serve starts assembly.New(cfg) on s with its clock at start. It fills in
// cfg's Mode (test), BaseURL, Now and, when empty, AdminToken (adminToken).
func serve(t *testing.T, s storage.Store, start time.Time, cfg assembly.Config) *testServer {
	t.Helper()
	ts := &testServer{t: t, store: s, clock: clocktest.New(start), client: openapitest.New(t).Client()}
	var handler http.Handler
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if peer := r.Header.Get(peerHeader); peer != "" {
			r.RemoteAddr = peer
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	cfg.Mode, cfg.BaseURL, cfg.Now = httpapi.ModeTest, hs.URL, ts.clock.Now
	switch cfg.AdminToken {
	case "":
		cfg.AdminToken = adminToken
	case adminOff:
		cfg.AdminToken = ""
	}
	built, err := assembly.Build(cfg, s)
	require.NoError(t, err)
	ts.built, ts.srv, handler, ts.url = built, built.HTTP, built.HTTP, hs.URL
	return ts
}

// request is one request to the server under test.
type request struct {
	method string
	path   string // or an absolute URL
	key    string // API key (or admin token) sent as a bearer token when not ""
	body   any    // nil: none; a string is sent as is, anything else as JSON
	header http.Header
	idem   []string // Idempotency-Key header values
	peer   string   // RemoteAddr the server sees ("" = the real one)
	raw    bool     // not checked against openapi.json (fixture routes, HEAD)
}

// response is a response with its body read.
type response struct {
	status int
	header http.Header
	body   string // without its trailing newline
}

// decode unmarshals the JSON body into v.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(r.body), v), r.body)
}

// json returns the JSON object body.
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	r.decode(t, &m)
	return m
}

// code returns the Error body's code.
func (r response) code(t *testing.T) string {
	t.Helper()
	var e xpromo.ErrorResponse
	r.decode(t, &e)
	return e.Error.Code
}

// replayed reports whether the response is an idempotent replay.
func (r response) replayed() bool { return r.header.Get(httpapi.IdempotentReplayedHeader) == "true" }

// trySend makes one request and fails no test itself, so that it may run in
// goroutines.
func (s *testServer) trySend(q request) (response, error) {
	var rd io.Reader
	if q.body != nil {
		raw, ok := q.body.(string)
		if !ok {
			b, err := json.Marshal(q.body)
			if err != nil {
				return response{}, err
			}
			raw = string(b)
		}
		rd = strings.NewReader(raw)
	}
	target := q.path
	if !strings.HasPrefix(target, "http") {
		target = s.url + target
	}
	req, err := http.NewRequest(q.method, target, rd)
	if err != nil {
		return response{}, err
	}
	for k, vs := range q.header {
		req.Header[k] = vs
	}
	if q.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if q.key != "" {
		req.Header.Set("Authorization", "Bearer "+q.key)
	}
	for _, v := range q.idem {
		req.Header.Add("Idempotency-Key", v)
	}
	if q.peer != "" {
		req.Header.Set(peerHeader, q.peer)
	}
	client := s.client
	if q.raw {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: strings.TrimSuffix(string(b), "\n")}, err
}

// send makes one request, failing the test if it cannot.
func (s *testServer) send(q request) response {
	s.t.Helper()
	r, err := s.trySend(q)
	require.NoError(s.t, err)
	return r
}

// do sends a request to path (or an absolute URL) with the bearer key if
// key != "", the body (JSON-encoded unless a string) if body != nil, and
// extra headers written "Name: value".
func (s *testServer) do(method, path, key string, body any, headers ...string) response {
	s.t.Helper()
	var h http.Header
	for _, line := range headers {
		k, v, _ := strings.Cut(line, ": ")
		if h == nil {
			h = http.Header{}
		}
		h.Add(k, v)
	}
	return s.send(request{method: method, path: path, key: key, body: body, header: h})
}

// appRequest is a valid registration of an app called name.
func appRequest(name string, platform xpromo.Platform) xpromo.RegisterAppRequest {
	return xpromo.RegisterAppRequest{Name: name, Platform: platform, BundleID: "com.example." + strings.ToLower(name),
		Domain: "example.com", DownloadURL: "https://example.com/" + name + ".zip", ContactEmail: "dev@example.com"}
}

// snip is the registration most tests use.
func snip() xpromo.RegisterAppRequest { return appRequest("Snip", xpromo.PlatformMac) }

// register registers app through POST /v1/apps, failing the test unless it
// is created.
func (s *testServer) register(app xpromo.RegisterAppRequest) xpromo.RegisterAppResponse {
	s.t.Helper()
	return s.registerFrom("", app)
}

// registerFrom registers app from the client address peer.
func (s *testServer) registerFrom(peer string, app xpromo.RegisterAppRequest) xpromo.RegisterAppResponse {
	s.t.Helper()
	res := s.send(request{method: http.MethodPost, path: "/v1/apps", body: app, peer: peer})
	require.Equal(s.t, http.StatusCreated, res.status, res.body)
	var out xpromo.RegisterAppResponse
	res.decode(s.t, &out)
	return out
}

// newApp registers a Snip app and returns its id and API key.
func (s *testServer) newApp() (id, key string) {
	s.t.Helper()
	r := s.register(snip())
	return r.AppID, r.APIKey
}
