package webhook_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/xpromo/xpromo/sdk/webhook"
)

func TestMiddlewareEndToEnd(t *testing.T) {
	secret := newSecret(t, 7)
	v, err := webhook.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	v.MaxBodyBytes = 256
	var got [][]byte
	srv := httptest.NewServer(v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		got = append(got, b)
		w.WriteHeader(http.StatusNoContent)
	})))
	defer srv.Close()

	post := func(t *testing.T, body []byte, h http.Header) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range h {
			req.Header[k] = vs
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		if res.StatusCode != http.StatusNoContent {
			if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
				t.Fatalf("status %d: error body: %v", res.StatusCode, err)
			}
		}
		return res.StatusCode, e.Error.Code
	}

	body := []byte(`{"type":"chain.cleared","data":{"id":"ch_9"}}`)
	now := time.Now()
	// Signed by the reference library, as another sender would.
	ref, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := ref.Sign("msg_mw", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if status, code := post(t, body, headers("msg_mw", now.Unix(), sig)); status != http.StatusNoContent {
		t.Fatalf("valid webhook: %d %s", status, code)
	}
	if len(got) != 1 || !bytes.Equal(got[0], body) {
		t.Fatalf("handler got %q, want the verified body", got)
	}

	old := now.Add(-10 * time.Minute)
	oldSig, _ := webhook.Sign(secret, "msg_mw", old, body)
	big := bytes.Repeat([]byte("x"), 257)
	bigSig, _ := webhook.Sign(secret, "msg_mw", now, big)
	noID := headers("", now.Unix(), sig)
	noID.Del(webhook.HeaderID)
	badTS := headers("msg_mw", now.Unix(), sig)
	badTS.Set(webhook.HeaderTimestamp, "yesterday")

	for _, c := range []struct {
		name   string
		body   []byte
		header http.Header
		status int
		code   string
	}{
		{"tampered body", append([]byte(nil), append(body[:len(body)-1], ' ', '}')...), headers("msg_mw", now.Unix(), sig), http.StatusUnauthorized, "webhook_no_matching_signature"},
		{"old timestamp", body, headers("msg_mw", old.Unix(), oldSig), http.StatusUnauthorized, "webhook_timestamp_too_old"},
		{"unsigned", body, http.Header{}, http.StatusBadRequest, "webhook_missing_header"},
		{"no id", body, noID, http.StatusBadRequest, "webhook_missing_header"},
		{"bad timestamp", body, badTS, http.StatusBadRequest, "webhook_invalid_timestamp"},
		{"malformed signature", body, headers("msg_mw", now.Unix(), "v1,%%%"), http.StatusBadRequest, "webhook_invalid_signature"},
		{"body over the bound", big, headers("msg_mw", now.Unix(), bigSig), http.StatusRequestEntityTooLarge, "webhook_body_too_large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, code := post(t, c.body, c.header)
			if status != c.status || code != c.code {
				t.Fatalf("got %d %s, want %d %s", status, code, c.status, c.code)
			}
		})
	}
	if len(got) != 1 {
		t.Fatalf("handler ran %d times, want only for the valid webhook", len(got))
	}
}

func TestMiddlewareSetsContentLength(t *testing.T) {
	secret := newSecret(t, 8)
	v, _ := webhook.NewVerifier(secret)
	body := []byte(`{"a":1}`)
	now := time.Now()
	sig, _ := webhook.Sign(secret, "msg_cl", now, body)
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	for k, vs := range headers("msg_cl", now.Unix(), sig) {
		req.Header[k] = vs
	}
	req.ContentLength = -1 // as for a chunked request
	rec := httptest.NewRecorder()
	v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != int64(len(body)) || r.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
			t.Errorf("ContentLength = %d / %q, want %d", r.ContentLength, r.Header.Get("Content-Length"), len(body))
		}
	})).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}
