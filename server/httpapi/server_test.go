package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/httpapi"
)

// pinger is a test double for the store's Ping: it returns err.
type pinger struct{ err error }

func (p pinger) Ping(ctx context.Context) error { return p.err }

type fixture struct {
	srv *httpapi.Server
	reg *prometheus.Registry
	log *httpapi.SyncBuffer
}

func newFixture(t *testing.T, store httpapi.Pinger, mode string) *fixture {
	t.Helper()
	f := &fixture{reg: httpapi.NewRegistry(), log: &httpapi.SyncBuffer{}}
	f.srv = httpapi.New(httpapi.Config{
		Store:    store,
		Logger:   slog.New(slog.NewJSONHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registry: f.reg,
		Mode:     mode,
	})
	return f
}

func (f *fixture) do(t *testing.T, method, path string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, vs := range header {
		req.Header[k] = vs
	}
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	return rec
}

// logLines decodes the JSON log lines written so far.
func (f *fixture) logLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(f.log.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

type errorBody struct {
	Error struct {
		Code       string  `json:"code"`
		Message    string  `json:"message"`
		RetryAfter *string `json:"retry_after"`
	} `json:"error"`
}

// assertError checks the status and the exact Error shape, including a
// retry_after that is present and null.
func assertError(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	assert.Equal(t, status, rec.Code)
	assert.Equal(t, status, apperr.Status(code), "the catalogue maps %s to another status", code)
	assert.True(t, apperr.Known(code), "%s is not in server/apperr's catalogue", code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var raw map[string]map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &raw), rec.Body.String())
	require.Contains(t, raw, "error")
	assert.Len(t, raw, 1)
	detail := raw["error"]
	assert.Equal(t, code, detail["code"])
	assert.NotEmpty(t, detail["message"])
	v, ok := detail["retry_after"]
	assert.True(t, ok, "retry_after must be present")
	assert.Nil(t, v, "retry_after must be null")
	assert.Len(t, detail, 3)
}

func TestHealthz(t *testing.T) {
	f := newFixture(t, pinger{}, httpapi.ModeLive)
	rec := f.do(t, http.MethodGet, "/healthz", nil)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"status":"ok"}`, rec.Body.String())
}

func TestHealthzDoesNotDependOnTheStore(t *testing.T) {
	f := newFixture(t, pinger{err: errors.New("down")}, httpapi.ModeLive)
	rec := f.do(t, http.MethodGet, "/healthz", nil)
	assert.Equal(t, http.StatusOK, rec.Code)
}

func TestHeadHealthz(t *testing.T) {
	f := newFixture(t, pinger{}, httpapi.ModeLive)
	rec := f.do(t, http.MethodHead, "/healthz", nil)
	assert.Equal(t, http.StatusOK, rec.Code)
}

func TestReadyz(t *testing.T) {
	f := newFixture(t, pinger{}, httpapi.ModeLive)
	rec := f.do(t, http.MethodGet, "/readyz", nil)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"status":"ready"}`, rec.Body.String())
}

func TestReadyzStoreDown(t *testing.T) {
	f := newFixture(t, pinger{err: errors.New("dial tcp 10.0.0.7:5432: connection refused")}, httpapi.ModeLive)
	rec := f.do(t, http.MethodGet, "/readyz", nil)
	assertError(t, rec, http.StatusServiceUnavailable, "unavailable")
	// The cause is logged for the operator but not shown to the client.
	assert.NotContains(t, rec.Body.String(), "10.0.0.7")
	assert.Contains(t, f.log.String(), "10.0.0.7")
}

// deadlinePinger reports whether the ping ran under a deadline.
type deadlinePinger struct{ hadDeadline *bool }

func (p deadlinePinger) Ping(ctx context.Context) error {
	_, *p.hadDeadline = ctx.Deadline()
	return nil
}

func TestReadyzPingIsBounded(t *testing.T) {
	var had bool
	f := newFixture(t, deadlinePinger{&had}, httpapi.ModeLive)
	f.do(t, http.MethodGet, "/readyz", nil)
	assert.True(t, had, "the store ping must run under a timeout")
}

func TestNotFound(t *testing.T) {
	f := newFixture(t, pinger{}, httpapi.ModeLive)
	assertError(t, f.do(t, http.MethodGet, "/no/such/route", nil), http.StatusNotFound, "not_found")
}

func TestMethodNotAllowed(t *testing.T) {
	f := newFixture(t, pinger{}, httpapi.ModeLive)
	rec := f.do(t, http.MethodPost, "/healthz", nil)
	assertError(t, rec, http.StatusMethodNotAllowed, "method_not_allowed")
	assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
}

func TestPanicRecovery(t *testing.T) {
	f := newFixture(t, pinger{}, httpapi.ModeLive)
	f.srv.Router().Get("/boom", func(w http.ResponseWriter, r *http.Request) {
		panic("kaboom")
	})
	rec := f.do(t, http.MethodGet, "/boom", http.Header{"X-Request-Id": {"trace-123"}})
	assertError(t, rec, http.StatusInternalServerError, "internal")
	assert.Equal(t, "trace-123", rec.Header().Get("X-Request-Id"))
	assert.NotContains(t, rec.Body.String(), "kaboom", "panic values must not reach the client")

	var panicLogged, accessLogged bool
	for _, l := range f.logLines(t) {
		switch l["msg"] {
		case "panic serving request":
			panicLogged = true
			assert.Equal(t, "kaboom", l["error"])
			assert.Equal(t, "trace-123", l["request_id"])
			assert.Contains(t, l["stack"], "server_test.go")
		case "http request":
			accessLogged = true
			assert.EqualValues(t, 500, l["status"])
			assert.Equal(t, "ERROR", l["level"])
		}
	}
	assert.True(t, panicLogged)
	assert.True(t, accessLogged)

	// The server keeps serving.
	assert.Equal(t, http.StatusOK, f.do(t, http.MethodGet, "/healthz", nil).Code)
}

// A panic after the response has started cannot become a clean 500: the
// response is aborted so the client sees a broken reply, not a spliced one.
func TestPanicAfterHeaderAbortsResponse(t *testing.T) {
	f := newFixture(t, pinger{}, httpapi.ModeLive)
	f.srv.Router().Get("/half", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"partial":`))
		w.(http.Flusher).Flush()
		panic("late")
	})
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL + "/half")
	if err == nil {
		_, err = bytes.NewBuffer(nil).ReadFrom(resp.Body)
		resp.Body.Close()
	}
	assert.Error(t, err, "the client must see the response cut short")
	// Both lines are written before net/http closes the connection, which is
	// what the client saw above.
	assert.Contains(t, f.log.String(), "panic serving request")
	assert.Equal(t, 1.0, counter(t, f.reg, map[string]string{"method": "GET", "route": "/half", "status": "200"}), "an aborted response is still counted")
}

func TestRequestID(t *testing.T) {
	f := newFixture(t, pinger{}, httpapi.ModeLive)

	rec := f.do(t, http.MethodGet, "/healthz", http.Header{"X-Request-Id": {"abc-123"}})
	assert.Equal(t, "abc-123", rec.Header().Get("X-Request-Id"))

	rec = f.do(t, http.MethodGet, "/healthz", nil)
	generated := rec.Header().Get("X-Request-Id")
	assert.True(t, strings.HasPrefix(generated, "req_"), generated)

	// An id that could forge log lines is replaced.
	rec = f.do(t, http.MethodGet, "/healthz", http.Header{"X-Request-Id": {"a b\tc"}})
	assert.True(t, strings.HasPrefix(rec.Header().Get("X-Request-Id"), "req_"))
	rec = f.do(t, http.MethodGet, "/healthz", http.Header{"X-Request-Id": {strings.Repeat("x", 129)}})
	assert.True(t, strings.HasPrefix(rec.Header().Get("X-Request-Id"), "req_"))
}

func TestAccessLog(t *testing.T) {
	f := newFixture(t, pinger{}, httpapi.ModeLive)
	f.srv.Router().Get("/v1/apps/{app_id}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	f.do(t, http.MethodGet, "/v1/apps/app_42", http.Header{"X-Request-Id": {"rid-1"}})
	f.do(t, http.MethodGet, "/healthz", nil)

	lines := f.logLines(t)
	require.Len(t, lines, 2)
	l := lines[0]
	assert.Equal(t, "http request", l["msg"])
	assert.Equal(t, "INFO", l["level"])
	assert.Equal(t, "GET", l["method"])
	assert.Equal(t, "/v1/apps/{app_id}", l["route"])
	assert.EqualValues(t, 204, l["status"])
	assert.Equal(t, "rid-1", l["request_id"])
	ms, ok := l["duration_ms"].(float64)
	assert.True(t, ok && ms >= 0, "duration_ms is a number of milliseconds: %v", l["duration_ms"])
	assert.NotContains(t, l, "duration", "no unitless duration")
	// Probes are logged, but at DEBUG.
	assert.Equal(t, "DEBUG", lines[1]["level"])
	assert.Equal(t, "/healthz", lines[1]["route"])
}

func TestModeHeader(t *testing.T) {
	test := newFixture(t, pinger{}, httpapi.ModeTest)
	assert.Equal(t, "test", test.do(t, http.MethodGet, "/healthz", nil).Header().Get("Xpromo-Mode"))
	assert.Equal(t, "test", test.do(t, http.MethodGet, "/nope", nil).Header().Get("Xpromo-Mode"))

	live := newFixture(t, pinger{}, httpapi.ModeLive)
	assert.Empty(t, live.do(t, http.MethodGet, "/healthz", nil).Header().Get("Xpromo-Mode"))
}

// MountedRoutes checks that routes added later get the JSON 404/405 and the
// route-pattern labels.
func TestMountedRoutes(t *testing.T) {
	f := newFixture(t, pinger{}, httpapi.ModeLive)
	f.srv.Router().Route("/v1", func(r chi.Router) {
		r.Get("/things/{id}", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(chi.URLParam(r, "id")))
		})
	})
	rec := f.do(t, http.MethodGet, "/v1/things/42", nil)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "42", rec.Body.String())

	assertError(t, f.do(t, http.MethodGet, "/v1/other", nil), http.StatusNotFound, "not_found")
	rec = f.do(t, http.MethodDelete, "/v1/things/42", nil)
	assertError(t, rec, http.StatusMethodNotAllowed, "method_not_allowed")
	assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))

	assert.Equal(t, 1.0, counter(t, f.reg, map[string]string{"method": "GET", "route": "/v1/things/{id}", "status": "200"}))
}

func TestMetrics(t *testing.T) {
	f := newFixture(t, pinger{}, httpapi.ModeLive)
	f.do(t, http.MethodGet, "/healthz", nil)
	f.do(t, http.MethodGet, "/healthz", nil)
	f.do(t, http.MethodGet, "/secret/path/123", nil)
	f.do(t, http.MethodPost, "/healthz", nil)

	rec := f.do(t, http.MethodGet, "/metrics", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	assert.Contains(t, body, `xpromo_http_requests_total{method="GET",route="/healthz",status="200"} 2`)
	assert.Contains(t, body, `xpromo_http_requests_total{method="GET",route="unmatched",status="404"} 1`)
	assert.Contains(t, body, `xpromo_http_request_duration_seconds_count{method="GET",route="/healthz"} 2`)
	assert.Contains(t, body, "go_goroutines")
	assert.Contains(t, body, "process_cpu_seconds_total")
	// Raw paths never become labels.
	assert.NotContains(t, body, "/secret/path/123")

	// The 405 matched no route for its method: it is counted as unmatched too.
	assert.Equal(t, 1.0, counter(t, f.reg, map[string]string{"method": "POST", "route": "unmatched", "status": "405"}))
}

func TestSharedRegistry(t *testing.T) {
	reg := httpapi.NewRegistry()
	a := httpapi.New(httpapi.Config{Store: pinger{}, Registry: reg})
	b := httpapi.New(httpapi.Config{Store: pinger{}, Registry: reg})
	for _, s := range []*httpapi.Server{a, b} {
		s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil))
	}
	assert.Equal(t, 2.0, counter(t, reg, map[string]string{"method": "GET", "route": "/healthz", "status": "200"}))
}

// counter returns the value of xpromo_http_requests_total with these labels.
func counter(t *testing.T, reg *prometheus.Registry, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "xpromo_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsEqual(m.GetLabel(), labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no xpromo_http_requests_total series with labels %v", labels)
	return 0
}

func labelsEqual(got []*dto.LabelPair, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, lp := range got {
		if want[lp.GetName()] != lp.GetValue() {
			return false
		}
	}
	return true
}
