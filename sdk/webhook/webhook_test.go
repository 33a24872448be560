package webhook_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/xpromo/xpromo/sdk/webhook"
)

// The specification's published example (also in the reference libraries'
// tests).
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTS     = 1614265330
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var specTime = time.Unix(specTS, 0)

func headers(id string, ts int64, sig string) http.Header {
	h := http.Header{}
	h.Set(webhook.HeaderID, id)
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(webhook.HeaderSignature, sig)
	return h
}

// newSecret returns a fresh whsec_ secret of n random-looking bytes.
func newSecret(t *testing.T, seed byte) string {
	t.Helper()
	key := make([]byte, 32)
	for i := range key {
		key[i] = seed + byte(i)*7
	}
	return webhook.SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

func TestSpecVector(t *testing.T) {
	sig, err := webhook.Sign(specSecret, specID, specTime, []byte(specBody))
	if err != nil {
		t.Fatal(err)
	}
	if sig != specSig {
		t.Fatalf("Sign = %q, want the specification's %q", sig, specSig)
	}
	if err := webhook.VerifyAt(specSecret, headers(specID, specTS, specSig), []byte(specBody), 0, specTime.Add(4*time.Minute)); err != nil {
		t.Fatalf("spec example does not verify: %v", err)
	}
}

func TestInteropReferenceSignsWeVerify(t *testing.T) {
	secret := newSecret(t, 3)
	ref, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, body := range []string{`{"type":"chain.cleared","data":{"id":"ch_1"}}`, "", "not json \x00 \xff"} {
		sig, err := ref.Sign("msg_ref1", now, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if err := webhook.Verify(secret, headers("msg_ref1", now.Unix(), sig), []byte(body), time.Minute); err != nil {
			t.Errorf("body %q: reference signature refused: %v", body, err)
		}
		if err := webhook.Verify(secret, headers("msg_ref1", now.Unix(), sig), []byte(body+"x"), time.Minute); !errors.Is(err, webhook.ErrNoMatchingSignature) {
			t.Errorf("body %q tampered: err = %v, want ErrNoMatchingSignature", body, err)
		}
	}
}

func TestInteropWeSignReferenceVerifies(t *testing.T) {
	secret := newSecret(t, 9)
	ref, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	body := []byte(`{"type":"payout.sent","data":{"amount_cents":1200}}`)
	sig, err := webhook.Sign(secret, "msg_ours1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.Verify(body, headers("msg_ours1", now.Unix(), sig)); err != nil {
		t.Fatalf("reference refuses our signature: %v", err)
	}
	if err := ref.Verify([]byte(`{"type":"payout.sent","data":{"amount_cents":9900}}`), headers("msg_ours1", now.Unix(), sig)); err == nil {
		t.Fatal("reference accepts our signature over a different body")
	}
	// Rotation: a header with two signatures, the reference knowing only
	// the new secret.
	old := newSecret(t, 40)
	oldSig, err := webhook.Sign(old, "msg_ours1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.Verify(body, headers("msg_ours1", now.Unix(), oldSig+" "+sig)); err != nil {
		t.Fatalf("reference refuses a rotation header: %v", err)
	}
}

func TestVerifyFailures(t *testing.T) {
	secret := newSecret(t, 1)
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"type":"score.updated"}`)
	sign := func(secret, id string, ts time.Time, body []byte) string {
		t.Helper()
		s, err := webhook.Sign(secret, id, ts, body)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := sign(secret, "msg_1", now, body)
	tol := 5 * time.Minute

	cases := []struct {
		name   string
		secret string
		header http.Header
		body   []byte
		want   error // nil: verifies
	}{
		{"valid", secret, headers("msg_1", now.Unix(), good), body, nil},
		{"tampered body", secret, headers("msg_1", now.Unix(), good), []byte(`{"type":"score.updated "}`), webhook.ErrNoMatchingSignature},
		{"other id", secret, headers("msg_2", now.Unix(), good), body, webhook.ErrNoMatchingSignature},
		{"shifted timestamp", secret, headers("msg_1", now.Unix()+1, good), body, webhook.ErrNoMatchingSignature},
		{"wrong secret", newSecret(t, 2), headers("msg_1", now.Unix(), good), body, webhook.ErrNoMatchingSignature},
		{"at the tolerance, old", secret, headers("msg_1", now.Add(-tol).Unix(), sign(secret, "msg_1", now.Add(-tol), body)), body, nil},
		{"past the tolerance, old", secret, headers("msg_1", now.Add(-tol-time.Second).Unix(), sign(secret, "msg_1", now.Add(-tol-time.Second), body)), body, webhook.ErrTimestampTooOld},
		{"at the tolerance, future", secret, headers("msg_1", now.Add(tol).Unix(), sign(secret, "msg_1", now.Add(tol), body)), body, nil},
		{"past the tolerance, future", secret, headers("msg_1", now.Add(tol+time.Second).Unix(), sign(secret, "msg_1", now.Add(tol+time.Second), body)), body, webhook.ErrTimestampTooNew},
		{"one of several valid", secret, headers("msg_1", now.Unix(), sign(newSecret(t, 5), "msg_1", now, body)+" "+good), body, nil},
		{"none of several valid", secret, headers("msg_1", now.Unix(), sign(newSecret(t, 5), "msg_1", now, body)+" "+sign(newSecret(t, 6), "msg_1", now, body)), body, webhook.ErrNoMatchingSignature},
		{"v1a and unknown versions ignored", secret, headers("msg_1", now.Unix(), "v1a,"+strings.TrimPrefix(good, "v1,")+" v2,"+strings.TrimPrefix(good, "v1,")), body, webhook.ErrNoMatchingSignature},
		{"unknown versions beside a valid one", secret, headers("msg_1", now.Unix(), "v1a,AAAA v9,zz "+good), body, nil},
		{"malformed base64", secret, headers("msg_1", now.Unix(), "v1,!!!notbase64!!!"), body, webhook.ErrInvalidSignature},
		{"base64 of the wrong length", secret, headers("msg_1", now.Unix(), "v1,AAAA"), body, webhook.ErrInvalidSignature},
		{"no comma", secret, headers("msg_1", now.Unix(), strings.TrimPrefix(good, "v1,")), body, webhook.ErrInvalidSignature},
		{"malformed beside a valid one", secret, headers("msg_1", now.Unix(), "v1,@@ "+good), body, nil},
		{"hex instead of base64", secret, headers("msg_1", now.Unix(), "v1,"+strings.Repeat("ab", 32)), body, webhook.ErrInvalidSignature},
		{"timestamp in milliseconds", secret, headers("msg_1", now.UnixMilli(), good), body, webhook.ErrInvalidTimestamp},
		{"bad secret", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", headers("msg_1", now.Unix(), good), body, webhook.ErrInvalidSecret},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := webhook.VerifyAt(c.secret, c.header, c.body, tol, now)
			if c.want == nil {
				if err != nil {
					t.Fatalf("err = %v, want it to verify", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestVerifyMalformedHeaders(t *testing.T) {
	secret := newSecret(t, 1)
	now := time.Unix(1_800_000_000, 0)
	good, err := webhook.Sign(secret, "msg_1", now, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{webhook.HeaderID, webhook.HeaderTimestamp, webhook.HeaderSignature} {
		for _, value := range []string{"", "   "} {
			h := headers("msg_1", now.Unix(), good)
			if value == "" {
				h.Del(name)
			} else {
				h.Set(name, value)
			}
			err := webhook.VerifyAt(secret, h, nil, 0, now)
			if !errors.Is(err, webhook.ErrMissingHeader) || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%q: err = %v, want ErrMissingHeader naming it", name, value, err)
			}
		}
	}
	for _, ts := range []string{"-1614265330", "+1800000000", "1800000000.5", "1e9", " 1800000000", "0x6B49D200", "99999999999999999999", "2026-11-25T14:00:00Z"} {
		h := headers("msg_1", now.Unix(), good)
		h.Set(webhook.HeaderTimestamp, ts)
		if err := webhook.VerifyAt(secret, h, nil, 0, now); !errors.Is(err, webhook.ErrInvalidTimestamp) {
			t.Errorf("timestamp %q: err = %v, want ErrInvalidTimestamp", ts, err)
		}
	}
}

func TestErrorCodes(t *testing.T) {
	err := webhook.VerifyAt(newSecret(t, 1), headers("msg_1", 1, "v1,x"), nil, time.Minute, time.Unix(1_800_000_000, 0))
	var we *webhook.Error
	if !errors.As(err, &we) || we.Code != "webhook_timestamp_too_old" || we.Malformed {
		t.Fatalf("err = %#v, want code webhook_timestamp_too_old, not malformed", err)
	}
	seen := map[string]bool{}
	for _, e := range []*webhook.Error{webhook.ErrMissingHeader, webhook.ErrInvalidTimestamp, webhook.ErrInvalidSignature,
		webhook.ErrTimestampTooOld, webhook.ErrTimestampTooNew, webhook.ErrNoMatchingSignature, webhook.ErrInvalidSecret,
		webhook.ErrBodyUnreadable, webhook.ErrBodyTooLarge} {
		if !strings.HasPrefix(e.Code, "webhook_") || seen[e.Code] {
			t.Errorf("code %q: want unique and prefixed webhook_", e.Code)
		}
		seen[e.Code] = true
	}
}

func TestSecrets(t *testing.T) {
	for _, s := range []string{
		"",
		"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", // raw base64, no prefix
		"whsec_",                           // empty key
		"whsec_not base64!",                // not base64
		"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23)),                                      // too short
		"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)),                                      // too long
		"whsec_" + base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef\xfb\xff")), // URL alphabet
	} {
		if _, err := webhook.NewVerifier(s); !errors.Is(err, webhook.ErrInvalidSecret) {
			t.Errorf("secret %q: err = %v, want ErrInvalidSecret", s, err)
		}
		if _, err := webhook.Sign(s, "msg_1", time.Now(), nil); !errors.Is(err, webhook.ErrInvalidSecret) {
			t.Errorf("Sign with secret %q: err = %v, want ErrInvalidSecret", s, err)
		}
	}
	if _, err := webhook.NewVerifier(); !errors.Is(err, webhook.ErrInvalidSecret) {
		t.Errorf("no secret: err = %v, want ErrInvalidSecret", err)
	}
	if _, err := webhook.NewVerifier(specSecret, "whsec_x"); !errors.Is(err, webhook.ErrInvalidSecret) || !strings.Contains(err.Error(), "secret 2") {
		t.Errorf("second secret bad: err = %v, want ErrInvalidSecret naming secret 2", err)
	}
}

func TestVerifierRotation(t *testing.T) {
	oldSecret, newSecret_ := newSecret(t, 10), newSecret(t, 20)
	v, err := webhook.NewVerifier(newSecret_, oldSecret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	v.Now = func() time.Time { return now }
	body := []byte(`{}`)
	for _, s := range []string{oldSecret, newSecret_} {
		sig, err := webhook.Sign(s, "msg_r", now, body)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(headers("msg_r", now.Unix(), sig), body); err != nil {
			t.Errorf("signed with one of the verifier's secrets: %v", err)
		}
	}
	stranger, err := webhook.Sign(newSecret(t, 30), "msg_r", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(headers("msg_r", now.Unix(), stranger), body); !errors.Is(err, webhook.ErrNoMatchingSignature) {
		t.Errorf("signed with another secret: err = %v, want ErrNoMatchingSignature", err)
	}
	// The verifier's own clock and tolerance apply.
	v.Tolerance = time.Second
	sig, _ := webhook.Sign(oldSecret, "msg_r", now.Add(-2*time.Second), body)
	if err := v.Verify(headers("msg_r", now.Add(-2*time.Second).Unix(), sig), body); !errors.Is(err, webhook.ErrTimestampTooOld) {
		t.Errorf("2 s old with 1 s tolerance: err = %v, want ErrTimestampTooOld", err)
	}
}

func TestSignatureHeaderSplitAcrossLines(t *testing.T) {
	secret := newSecret(t, 1)
	now := time.Unix(1_800_000_000, 0)
	good, _ := webhook.Sign(secret, "msg_1", now, nil)
	other, _ := webhook.Sign(newSecret(t, 2), "msg_1", now, nil)
	h := headers("msg_1", now.Unix(), other)
	h.Add(webhook.HeaderSignature, good)
	if err := webhook.VerifyAt(secret, h, nil, 0, now); err != nil {
		t.Fatalf("valid signature on a second header line: %v", err)
	}
}

func TestSignRequiresID(t *testing.T) {
	if _, err := webhook.Sign(specSecret, "", time.Now(), nil); !errors.Is(err, webhook.ErrMissingHeader) {
		t.Fatalf("empty id: err = %v, want ErrMissingHeader", err)
	}
}
