package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xpromo/xpromo/conformance"
	"github.com/xpromo/xpromo/conformance/refserver"
)

// TestSuiteCatchesBrokenServers is the suite's own test: the reference
// server with one behaviour broken on purpose (by a middleware around its
// handler) must fail exactly the area that covers the behaviour, and pass
// every other area. Each broken server is tested the way a third party tests
// theirs: this test binary runs TestConformance in a child process against
// the server's URL (XPROMO_CONFORMANCE_URL), and the verdict is read from
// the JSON report the child writes.
func TestSuiteCatchesBrokenServers(t *testing.T) {
	if os.Getenv(EnvURL) != "" {
		t.Skip("the self-test breaks the in-process reference server; it does not run against " + EnvURL)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		area string // the area that must fail
		wrap func(http.Handler) http.Handler
	}{
		{"RateLimit headers stripped", "rate-limits", stripRateLimitHeaders},
		{"another app's resources answer 403", "auth", crossAppForbidden},
		{"Idempotency-Key ignored", "idempotency", ignoreIdempotencyKey},
		{"fills served whoever signed them", "attribution", unsignedFillsServed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each child is a process of its own
			srv := refserver.InProcess(t, refserver.Options{Wrap: tc.wrap})
			reportPath := filepath.Join(t.TempDir(), "report.json")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, "-test.run=^TestConformance$", "-test.count=1")
			cmd.Env = append(withoutConformanceEnv(os.Environ()),
				EnvURL+"="+srv.URL, EnvAdminToken+"="+srv.AdminToken, EnvReport+"="+reportPath)
			out, runErr := cmd.CombinedOutput()
			rep, err := conformance.ReadReport(reportPath)
			if err != nil {
				t.Fatalf("the child run wrote no report (%v); its output:\n%s", err, out)
			}
			if runErr == nil {
				t.Errorf("the suite passed against a server with %s", tc.name)
			}
			if len(rep.Runs) != 1 {
				t.Fatalf("the report has %d runs, want 1", len(rep.Runs))
			}
			for _, a := range rep.Runs[0].Areas {
				switch {
				case a.Result == conformance.NotCovered:
				case a.ID == tc.area && a.Result != conformance.Fail:
					t.Errorf("area %s is %s against a server with %s, want fail", a.ID, a.Result, tc.name)
				case a.ID != tc.area && a.Result == conformance.Fail:
					t.Errorf("area %s fails against a server with %s, want it to pass (only %s is broken)", a.ID, tc.name, tc.area)
				}
			}
			if t.Failed() {
				t.Logf("child output:\n%s", out)
			}
		})
	}
}

// withoutConformanceEnv drops the suite's variables from env, so that the
// child sees only the ones the self-test sets.
func withoutConformanceEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "XPROMO_CONFORMANCE_") {
			out = append(out, kv)
		}
	}
	return out
}

// stripRateLimitHeaders removes every RateLimit-* header from the answers.
func stripRateLimitHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for name := range rec.Header() {
			if strings.HasPrefix(strings.ToLower(name), "ratelimit") {
				rec.Header().Del(name)
			}
		}
		copyResponse(w, rec)
	})
}

// ignoreIdempotencyKey drops the Idempotency-Key of every request.
func ignoreIdempotencyKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Idempotency-Key")
		next.ServeHTTP(w, r)
	})
}

// crossAppForbidden leaks the existence of apps: a request under
// /v1/apps/{app_id}/ with another app's key answers 403 instead of the 404
// a missing app gets. It learns which key belongs to which app from the
// registrations it sees.
func crossAppForbidden(next http.Handler) http.Handler {
	var mu sync.Mutex
	keyOf := map[string]string{} // app id → its key
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		if r.Method == http.MethodPost && r.URL.Path == "/v1/apps" && rec.Code == http.StatusCreated {
			var reg struct {
				AppID  string `json:"app_id"`
				APIKey string `json:"api_key"`
			}
			if json.Unmarshal(rec.Body.Bytes(), &reg) == nil {
				mu.Lock()
				keyOf[reg.AppID] = reg.APIKey
				mu.Unlock()
			}
		}
		if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/apps/"); ok && rec.Code == http.StatusNotFound {
			appID, _, _ := strings.Cut(rest, "/")
			mu.Lock()
			owner, known := keyOf[appID]
			mu.Unlock()
			if known && r.Header.Get("Authorization") != "Bearer "+owner {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"error":{"code":"forbidden","message":"this app belongs to someone else","retry_after":null}}`))
				return
			}
		}
		copyResponse(w, rec)
	})
}

// unsignedFillsServed answers a fill whose signature the server refused
// (403) as an ordinary answer without a creative, as a server that does not
// check fill signatures would answer a stranger's request.
func unsignedFillsServed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		if r.URL.Path == "/v1/sdk/fill" && rec.Code == http.StatusForbidden {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"filled":false,"no_fill_reason":"no_eligible_campaign","creative":null,"offer":null,"expires_at":null}`))
			return
		}
		copyResponse(w, rec)
	})
}

func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for name, vs := range rec.Header() {
		w.Header()[name] = vs
	}
	w.WriteHeader(rec.Code)
	_, _ = bytes.NewReader(rec.Body.Bytes()).WriteTo(w)
}
