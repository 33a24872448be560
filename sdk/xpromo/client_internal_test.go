package xpromo

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestBackoffBounds(t *testing.T) {
	min, max := 100*time.Millisecond, 2*time.Second
	for attempt := range 70 {
		want := max
		if attempt < 5 { // 100ms·2^4 = 1.6s < 2s
			want = min << attempt
		}
		for range 50 {
			got := backoff(min, max, attempt, nil)
			if got < want/2 || got > want {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, got, want/2, want)
			}
		}
	}
	// Retry-After wins over the bounds, on 429 and 503 only.
	resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"7"}}}
	if got := backoff(min, max, 0, resp); got != 7*time.Second {
		t.Errorf("429 Retry-After 7: %v", got)
	}
	resp.StatusCode = 500
	if got := backoff(min, max, 0, resp); got > min {
		t.Errorf("a 500's Retry-After was honoured: %v", got)
	}
}

func TestRetryAfterParsing(t *testing.T) {
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		status int
		value  string
		ok     bool
		lo, hi time.Duration
	}{
		{429, "3", true, 3 * time.Second, 3 * time.Second},
		{503, "0", true, 0, 0},
		{429, " 12 ", true, 12 * time.Second, 12 * time.Second},
		{429, "99999999999", true, 24 * time.Hour, 24 * time.Hour},
		{429, future, true, 59 * time.Minute, time.Hour},
		{429, past, true, 0, 0},
		{429, "-1", false, 0, 0},
		{429, "soon", false, 0, 0},
		{429, "", false, 0, 0},
		{500, "3", false, 0, 0},
	} {
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{}}
		if tc.value != "" {
			resp.Header.Set("Retry-After", tc.value)
		}
		got, ok := retryAfter(resp)
		if ok != tc.ok || got < tc.lo || got > tc.hi {
			t.Errorf("%d Retry-After %q = %v, %v; want %v in [%v, %v]", tc.status, tc.value, got, ok, tc.ok, tc.lo, tc.hi)
		}
	}
}

func TestParseBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":           "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/":          "http://127.0.0.1:8080",
		"https://api.example.com/v1":      "https://api.example.com",
		"https://api.example.com/x/v1/":   "https://api.example.com/x",
		" http://h/prefix?q=1#frag ":      "http://h/prefix",
		"http://h/v1v1":                   "http://h/v1v1",
		"https://api.example.com/xpromo/": "https://api.example.com/xpromo",
	} {
		u, err := parseBaseURL(in)
		if err != nil || u.String() != want {
			t.Errorf("parseBaseURL(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:8080", "ftp://h", "http://", "http://[::1", "/v1"} {
		if _, err := parseBaseURL(bad); err == nil {
			t.Errorf("parseBaseURL(%q) accepted", bad)
		}
	}
}

// FuzzDecodeError: whatever a server or proxy answers, a non-2xx becomes an
// *Error with the status, and never panics.
func FuzzDecodeError(f *testing.F) {
	f.Add(422, []byte(`{"error":{"code":"below_minimum","message":"too small","retry_after":null}}`))
	f.Add(429, []byte(`{"error":{"code":"rate_limited","message":"","retry_after":"2026-11-21T09:01:00Z"}}`))
	f.Add(502, []byte(`<html>bad gateway</html>`))
	f.Add(500, []byte(``))
	f.Add(404, []byte(`{"error":{"code":"","message":"x"}}`))
	f.Add(400, []byte(`{"error":{"code":"x","retry_after":"yesterday"}}`))
	f.Add(409, []byte(`{"error":null}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		err := decodeError(status, body, "req_1")
		e, ok := err.(*Error)
		if !ok {
			t.Fatalf("%T, want *Error", err)
		}
		if e.Status != status || e.RequestID != "req_1" {
			t.Fatalf("error %+v", e)
		}
		if e.Code == "" && !strings.HasPrefix(e.Message, "unexpected answer: ") {
			t.Fatalf("no code and message %q", e.Message)
		}
		if e.Code == "" && utf8.ValidString(string(body)) && !utf8.ValidString(e.Message) {
			t.Fatalf("message cut inside a character: %q", e.Message)
		}
		_ = e.Error()
	})
}
