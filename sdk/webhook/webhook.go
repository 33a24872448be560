// Package webhook signs and verifies webhooks in the Standard Webhooks
// format (https://www.standardwebhooks.com), the format xpromo uses
// (decisions §8):
//
//	webhook-id:        msg_…            unique per event; the same on every retry
//	webhook-timestamp: 1614265330       unix seconds when the attempt was signed
//	webhook-signature: v1,<base64>      HMAC-SHA256(key, "<id>.<timestamp>.<body>")
//
// The key is the endpoint's secret, "whsec_" followed by standard base64.
// The signature header may carry several space-separated signatures (e.g.
// one per secret while a secret is being rotated); a message verifies when
// any v1 signature matches any of the receiver's secrets. Signatures of
// other versions (v1a, …) are ignored.
//
// Verification proves who sent a message and that it is recent; it does not
// stop a legitimate message from being delivered twice (delivery is at least
// once). Receivers must dedupe on webhook-id.
//
// The package uses only the standard library: the SDK module is the root of
// the project's dependency graph.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the Standard Webhooks specification. http.Header
// canonicalises them; Get and Set find them in any case.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// DefaultTolerance is how far a message's timestamp may be from the
// receiver's clock, in either direction, when no tolerance is given. It is
// the specification's recommendation.
const DefaultTolerance = 5 * time.Minute

// SecretPrefix starts every xpromo webhook secret.
const SecretPrefix = "whsec_"

// Bounds on the decoded secret, from the specification (24 to 64 bytes).
const (
	minKeyLen = 24
	maxKeyLen = 64
)

// signatureVersion is the only scheme this package produces and accepts.
const signatureVersion = "v1"

// Verify checks a webhook against one secret with the current time.
// tolerance ≤ 0 means DefaultTolerance; there is no way to turn the
// timestamp check off, since it is what defeats replays of old messages.
func Verify(secret string, header http.Header, body []byte, tolerance time.Duration) error {
	return VerifyAt(secret, header, body, tolerance, time.Now())
}

// VerifyAt is Verify with an explicit clock.
func VerifyAt(secret string, header http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	v, err := NewVerifier(secret)
	if err != nil {
		return err
	}
	v.Tolerance = tolerance
	return v.verifyAt(header, body, now)
}

// Verifier checks webhooks against one or more secrets. Give it every
// secret the endpoint currently has (old and new during a rotation). It is
// safe for concurrent use once set up.
type Verifier struct {
	keys [][]byte
	// Tolerance bounds |now − webhook-timestamp|; ≤ 0 means DefaultTolerance.
	Tolerance time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxBodyBytes bounds the body Middleware reads; ≤ 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

// NewVerifier decodes the secrets. It fails with ErrInvalidSecret if there
// is none or one is not a well-formed "whsec_" secret.
func NewVerifier(secrets ...string) (*Verifier, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w: no secret given", ErrInvalidSecret)
	}
	v := &Verifier{}
	for i, s := range secrets {
		key, err := decodeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i+1, err)
		}
		v.keys = append(v.keys, key)
	}
	return v, nil
}

// Verify checks a webhook's headers and body.
func (v *Verifier) Verify(header http.Header, body []byte) error {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	return v.verifyAt(header, body, now())
}

func (v *Verifier) verifyAt(header http.Header, body []byte, now time.Time) error {
	id := header.Get(HeaderID)
	tsText := header.Get(HeaderTimestamp)
	// A proxy may split a header into several lines; they are one list.
	sigText := strings.Join(header.Values(HeaderSignature), " ")
	for _, h := range []struct{ name, value string }{
		{HeaderID, id}, {HeaderTimestamp, tsText}, {HeaderSignature, sigText},
	} {
		if strings.TrimSpace(h.value) == "" {
			return fmt.Errorf("%w: %s", ErrMissingHeader, h.name)
		}
	}

	ts, err := parseTimestamp(tsText)
	if err != nil {
		return err
	}
	tol := v.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	switch {
	case now.Sub(ts) > tol:
		return fmt.Errorf("%w: signed %s ago, tolerance %s", ErrTimestampTooOld, now.Sub(ts).Truncate(time.Second), tol)
	case ts.Sub(now) > tol:
		return fmt.Errorf("%w: signed %s ahead, tolerance %s", ErrTimestampTooNew, ts.Sub(now).Truncate(time.Second), tol)
	}

	sigs, err := parseSignatures(sigText)
	if err != nil {
		return err
	}
	for _, key := range v.keys {
		want := mac(key, id, tsText, body)
		for _, got := range sigs {
			if hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrNoMatchingSignature
}

// Sign returns the webhook-signature value ("v1,<base64>") of a message.
// The server uses it to sign deliveries; several signatures (one per secret
// during a rotation) go into one header joined by a space.
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("%w: %s", ErrMissingHeader, HeaderID)
	}
	return signatureVersion + "," + base64.StdEncoding.EncodeToString(mac(key, id, strconv.FormatInt(ts.Unix(), 10), body)), nil
}

// mac is HMAC-SHA256(key, id "." timestamp "." body), with the timestamp
// exactly as sent.
func mac(key []byte, id, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// decodeSecret accepts only "whsec_<standard base64>": xpromo issues every
// secret in that form, and requiring the prefix turns a pasted API key or a
// truncated value into an immediate error rather than a key that never
// matches.
func decodeSecret(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: does not start with %q", ErrInvalidSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: not standard base64 after %q", ErrInvalidSecret, SecretPrefix)
	}
	if len(key) < minKeyLen || len(key) > maxKeyLen {
		return nil, fmt.Errorf("%w: decodes to %d bytes, want %d to %d", ErrInvalidSecret, len(key), minKeyLen, maxKeyLen)
	}
	return key, nil
}

// maxTimestampDigits keeps the parse well inside int64 and time.Unix's range.
const maxTimestampDigits = 12

// parseTimestamp reads unix seconds written as plain decimal digits (no
// sign, no spaces, no fraction).
func parseTimestamp(s string) (time.Time, error) {
	if len(s) > maxTimestampDigits {
		return time.Time{}, fmt.Errorf("%w: %d characters", ErrInvalidTimestamp, len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return time.Time{}, fmt.Errorf("%w: %q is not unix seconds", ErrInvalidTimestamp, s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %q is not unix seconds", ErrInvalidTimestamp, s)
	}
	return time.Unix(n, 0), nil
}

// maxSignatures bounds the work one request can cause.
const maxSignatures = 16

// parseSignatures returns the decoded v1 signatures of a webhook-signature
// value: space-separated "version,base64" entries. Entries of other versions
// are skipped (the specification reserves them, e.g. v1a for asymmetric
// signatures), and so are malformed entries, like the reference libraries
// do, so one good signature still verifies. With no usable v1 signature the
// error says why: ErrInvalidSignature if some entry was malformed,
// ErrNoMatchingSignature if there was simply no v1 entry.
func parseSignatures(s string) ([][]byte, error) {
	entries := strings.Fields(s)
	if len(entries) > maxSignatures {
		return nil, fmt.Errorf("%w: %d signatures, at most %d", ErrInvalidSignature, len(entries), maxSignatures)
	}
	var sigs [][]byte
	malformed := false
	for _, e := range entries {
		version, sig, ok := strings.Cut(e, ",")
		if !ok || version == "" {
			malformed = true
			continue
		}
		if version != signatureVersion {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(sig)
		if err != nil || len(raw) != sha256.Size {
			malformed = true
			continue
		}
		sigs = append(sigs, raw)
	}
	switch {
	case len(sigs) > 0:
		return sigs, nil
	case malformed:
		return nil, fmt.Errorf("%w: no entry is \"v1,<base64 of %d bytes>\"", ErrInvalidSignature, sha256.Size)
	default:
		return nil, fmt.Errorf("%w: no v1 signature in the header", ErrNoMatchingSignature)
	}
}
