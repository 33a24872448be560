package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/webhook"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func mustVerifier(t *testing.T, secrets ...string) secretSource {
	t.Helper()
	v, err := webhook.NewVerifier(secrets...)
	require.NoError(t, err)
	return fixed{v}
}

func send(t *testing.T, url, id string, ts time.Time, body []byte, signWith string) int {
	t.Helper()
	sig, err := webhook.Sign(signWith, id, ts, body)
	require.NoError(t, err)
	return post(t, url, id, ts, body, sig)
}

func post(t *testing.T, url, id string, ts time.Time, body []byte, sig string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(webhook.HeaderID, id)
	req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(webhook.HeaderSignature, sig)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

func TestReceiverPrintsVerifiedEventsOnce(t *testing.T) {
	var out bytes.Buffer
	srv := httptest.NewServer(newReceiver(&out, mustVerifier(t, secret)))
	defer srv.Close()

	body := []byte(`{"type":"chain.cleared"}`)
	now := time.Now()
	assert.Equal(t, http.StatusNoContent, send(t, srv.URL, "msg_1", now, body, secret), "signed event")
	assert.Equal(t, http.StatusNoContent, send(t, srv.URL, "msg_1", now, body, secret), "redelivery")
	other := "whsec_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	assert.Equal(t, http.StatusUnauthorized, send(t, srv.URL, "msg_2", now, body, other), "signed with another secret")
	assert.Equal(t, http.StatusUnauthorized, send(t, srv.URL, "msg_3", now.Add(-time.Hour), body, secret), "an hour-old event")
	assert.Equal(t, "msg_1 "+string(body)+"\n", out.String())
}

// The reference Standard Webhooks library's signatures verify; a tampered
// body or an old timestamp does not.
func TestReceiverAgainstTheReferenceLibrary(t *testing.T) {
	var out bytes.Buffer
	srv := httptest.NewServer(newReceiver(&out, mustVerifier(t, secret)))
	defer srv.Close()
	ref, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)

	body := []byte(`{"id":"evt_1","type":"chain.cleared","app_id":"app_1","created_at":"2026-11-21T09:00:00Z","data":{}}`)
	now := time.Now()
	sig, err := ref.Sign("evt_1", now, body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, post(t, srv.URL, "evt_1", now, body, sig), "the reference library's signature")
	tampered := bytes.Replace(body, []byte("chain.cleared"), []byte("chain.rejected"), 1)
	assert.Equal(t, http.StatusUnauthorized, post(t, srv.URL, "evt_2", now, tampered, sig), "a tampered body")
	old := now.Add(-10 * time.Minute)
	oldSig, err := ref.Sign("evt_3", old, body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, post(t, srv.URL, "evt_3", old, body, oldSig), "an old timestamp")
	assert.Equal(t, "evt_1 "+string(body)+"\n", out.String())
}

// With -secrets-file, the receiver answers 503 until a secret is there,
// then verifies with every secret of the file, read again when it changes.
func TestReceiverReadsItsSecretsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets")
	var out bytes.Buffer
	srv := httptest.NewServer(newReceiver(&out, &fileSecrets{path: path}))
	defer srv.Close()
	body := []byte(`{}`)
	now := time.Now()
	assert.Equal(t, http.StatusServiceUnavailable, send(t, srv.URL, "msg_1", now, body, secret), "no file yet")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	assert.Equal(t, http.StatusServiceUnavailable, send(t, srv.URL, "msg_1", now, body, secret), "an empty file")
	require.NoError(t, os.WriteFile(path, []byte(secret+"\n"), 0o600))
	assert.Equal(t, http.StatusNoContent, send(t, srv.URL, "msg_1", now, body, secret))
	second := "whsec_" + "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	assert.Equal(t, http.StatusUnauthorized, send(t, srv.URL, "msg_2", now, body, second), "not in the file yet")
	require.NoError(t, os.WriteFile(path, []byte(secret+"\n"+second+"\n"), 0o600))
	assert.Equal(t, http.StatusNoContent, send(t, srv.URL, "msg_2", now, body, second), "added")
	require.NoError(t, os.WriteFile(path, []byte("not-a-secret\n"), 0o600))
	assert.Equal(t, http.StatusInternalServerError, send(t, srv.URL, "msg_3", now, body, secret), "a broken file is the receiver's fault")
}

// referenceCheck verifies every request with the reference library before
// the receiver does, and counts those it accepts.
type referenceCheck struct {
	ref  *standardwebhooks.Webhook
	next http.Handler
	mu   sync.Mutex
	ok   int
	errs []error
	ids  map[string]bool
}

// seen are the distinct webhook-ids received.
func (c *referenceCheck) seen() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.ids)
}

func (c *referenceCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	ref := c.ref
	c.mu.Unlock()
	if ref == nil { // the secret is not known yet: the server retries
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	err := ref.Verify(body, r.Header)
	c.mu.Lock()
	if c.ids == nil {
		c.ids = map[string]bool{}
	}
	c.ids[r.Header.Get(webhook.HeaderID)] = true
	if err != nil {
		c.errs = append(c.errs, err)
	} else {
		c.ok++
	}
	c.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.next.ServeHTTP(w, r)
}

// syncBuffer is written by the receiver while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestDeliveredByTheServer: the real server (its webhook worker, test
// mode, loopback allowed) delivers an app's events to the receiver; both
// the SDK's verifier and the reference library accept every delivery, and
// the receiver prints each event once, as the events API shows it.
func TestDeliveredByTheServer(t *testing.T) {
	var handler http.Handler
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer api.Close()
	const adminToken = "webhook-receiver-test-admin-token"
	srv, err := assembly.Build(assembly.Config{BaseURL: api.URL, AdminToken: adminToken, WebhooksAllowLoopback: true}, storagetest.SQLite(t))
	require.NoError(t, err)
	handler = srv.HTTP
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.RunWebhooks(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	c := xpromo.NewClient(api.URL)
	reg, err := c.RegisterApp(ctx, &xpromo.RegisterAppRequest{Name: "Snip", Platform: xpromo.PlatformMac, BundleID: "org.example.snip",
		Domain: "example.org", DownloadURL: "https://example.org/Snip.dmg", ContactEmail: "hello@example.org"})
	require.NoError(t, err)
	app := c.With(xpromo.WithAPIKey(reg.APIKey))

	secrets := filepath.Join(t.TempDir(), "secrets")
	out := &syncBuffer{}
	check := &referenceCheck{next: newReceiver(out, &fileSecrets{path: secrets})}
	rcv := httptest.NewServer(check)
	defer rcv.Close()
	ep, err := app.CreateWebhookEndpoint(ctx, reg.AppID, &xpromo.CreateWebhookEndpointRequest{URL: rcv.URL + "/webhooks", Events: []xpromo.EventType{xpromo.EventScoreUpdated}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(secrets, []byte(ep.Secret+"\n"), 0o600))
	ref, err := standardwebhooks.NewWebhook(ep.Secret)
	require.NoError(t, err)
	check.mu.Lock()
	check.ref = ref
	check.mu.Unlock()

	for _, act := range []func() error{
		func() error {
			_, err := c.With(xpromo.WithAdminToken(adminToken)).AdminApproveApp(ctx, reg.AppID, "ok")
			return err
		},
		func() error {
			_, err := c.With(xpromo.WithAdminToken(adminToken)).AdminSuspendApp(ctx, reg.AppID, "complaints")
			return err
		},
	} {
		require.NoError(t, act())
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), `"status":"approved"`) || !strings.Contains(out.String(), `"status":"suspended"`) {
		require.True(t, time.Now().Before(deadline), "the events were not delivered within a minute; got:\n%s", out.String())
		time.Sleep(20 * time.Millisecond)
	}
	check.mu.Lock()
	assert.Empty(t, check.errs, "the reference library refused a delivery")
	assert.GreaterOrEqual(t, check.ok, 2)
	check.mu.Unlock()

	var statuses []xpromo.AppStatus
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		id, body, _ := strings.Cut(line, " ")
		var ev xpromo.Event
		require.NoError(t, json.Unmarshal([]byte(body), &ev), line)
		assert.Equal(t, id, ev.ID)
		got, err := app.GetEvent(ctx, reg.AppID, ev.ID)
		require.NoError(t, err)
		assert.JSONEq(t, string(got.Data), string(ev.Data), "the body is the event as the API shows it")
		var d xpromo.ScoreEventData
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		statuses = append(statuses, d.Score.Status)
	}
	// (The registration's event is delivered too when the worker
	// dispatched it after the endpoint was created.)
	assert.Subset(t, statuses, []xpromo.AppStatus{"approved", "suspended"})
	assert.Len(t, statuses, len(check.seen()), "each event printed once")
}
