package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func send(t *testing.T, url, id string, ts time.Time, body []byte, signWith string) int {
	t.Helper()
	sig, err := webhook.Sign(signWith, id, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(webhook.HeaderID, id)
	req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(webhook.HeaderSignature, sig)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestReceiverPrintsVerifiedEventsOnce(t *testing.T) {
	var out bytes.Buffer
	h, err := newReceiver(&out, secret)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	body := []byte(`{"type":"chain.cleared"}`)
	now := time.Now()
	if got := send(t, srv.URL, "msg_1", now, body, secret); got != http.StatusNoContent {
		t.Fatalf("signed event: status %d", got)
	}
	if got := send(t, srv.URL, "msg_1", now, body, secret); got != http.StatusNoContent {
		t.Fatalf("redelivery: status %d", got)
	}
	other := "whsec_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	if got := send(t, srv.URL, "msg_2", now, body, other); got != http.StatusUnauthorized {
		t.Fatalf("signed with another secret: status %d, want 401", got)
	}
	if got := send(t, srv.URL, "msg_3", now.Add(-time.Hour), body, secret); got != http.StatusUnauthorized {
		t.Fatalf("hour-old event: status %d, want 401", got)
	}
	if want := "msg_1 " + string(body) + "\n"; out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
}

func TestReceiverRefusesBadSecret(t *testing.T) {
	if _, err := newReceiver(&bytes.Buffer{}); err == nil {
		t.Fatal("no secret accepted")
	}
	if _, err := newReceiver(&bytes.Buffer{}, "not-a-secret"); err == nil {
		t.Fatal("malformed secret accepted")
	}
}
