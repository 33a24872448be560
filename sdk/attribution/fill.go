package attribution

import (
	"crypto/ed25519"
	"fmt"
	"time"
)

// MaxLocaleLen bounds a fill's locale: a BCP 47 language tag of at most 35
// characters (RFC 5646 §4.4.1: every tag without extensions fits).
const MaxLocaleLen = 35

// FillClaims are the claims of a signed fill request: the publisher's SDK
// asks for a creative for one of its slots, and signs what it asks so that
// only the app's own SDK can ask for its fills and count its impressions.
// They repeat the fields of the request (POST /v1/sdk/fill) and add the
// signing time. Member order when signed: app, slot, platform, dev, loc,
// iat.
type FillClaims struct {
	// AppID (app) is the publisher's app id, the request's app_id.
	AppID string `json:"app"`
	// Slot is the lifecycle slot (onboarding_complete, …); the server
	// checks it is one it knows.
	Slot string `json:"slot"`
	// Platform is "mac" or "win".
	Platform string `json:"platform"`
	// DeviceID (dev) is the request's device_id, "" when it has none.
	DeviceID string `json:"dev"`
	// Locale (loc) is the request's locale, "" when it has none.
	Locale string `json:"loc"`
	// IssuedAt (iat) is when the request was signed, unix seconds, device
	// clock.
	IssuedAt int64 `json:"iat"`
}

var fillClaimNames = []string{"app", "slot", "platform", "dev", "loc", "iat"}

// IssuedTime is iat as a time.
func (c FillClaims) IssuedTime() time.Time { return unix(c.IssuedAt) }

// ValidIdentifier reports whether s is an identifier of the protocol: 1 to
// MaxIDLen characters of A-Z a-z 0-9 - _ . : ~ (app ids, device ids, …).
func ValidIdentifier(s string) bool { return validID(s) }

// ValidLocale reports whether s has the shape of a BCP 47 language tag:
// subtags of 1 to 8 letters or digits joined by "-", the first of letters,
// at most MaxLocaleLen characters in all.
func ValidLocale(s string) bool {
	if len(s) == 0 || len(s) > MaxLocaleLen {
		return false
	}
	n, first := 0, true
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '-' {
			if n == 0 || n > 8 {
				return false
			}
			n, first = 0, false
			continue
		}
		c := s[i]
		letter := 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z'
		if !letter && !(!first && '0' <= c && c <= '9') {
			return false
		}
		n++
	}
	return true
}

func (c FillClaims) validate() error {
	switch {
	case !validID(c.AppID):
		return fmt.Errorf("app %q is not an identifier", c.AppID)
	case !validID(c.Slot):
		return fmt.Errorf("slot %q is not an identifier", c.Slot)
	case c.Platform != PlatformMac && c.Platform != PlatformWin:
		return fmt.Errorf("platform %q is not mac or win", c.Platform)
	case c.DeviceID != "" && !validID(c.DeviceID):
		return fmt.Errorf("dev %q is not an identifier", c.DeviceID)
	case c.Locale != "" && !ValidLocale(c.Locale):
		return fmt.Errorf("loc %q is not a BCP 47 language tag", c.Locale)
	case !validTime(c.IssuedAt):
		return fmt.Errorf("iat is not a positive unix time")
	}
	return nil
}

// Fill is a parsed, not yet verified, signed fill request.
type Fill struct {
	JWS
	Claims FillClaims
}

// SignFill signs a fill request with the publisher SDK's key (typ
// xpromo-fill+jwt). kid must be KeyID of priv's public key. Sign each
// request when sending it, with iat = now: verifiers refuse one dated
// further than the clock skew from their clock.
func SignFill(priv ed25519.PrivateKey, kid string, claims FillClaims) (string, error) {
	if err := claims.validate(); err != nil {
		return "", fmt.Errorf("attribution: fill claims: %w", err)
	}
	return signJWS(priv, kid, TypFill, claims)
}

// ParseFill parses a signed fill request without verifying it. Failures
// are fraud_bad_signature.
func ParseFill(token string) (*Fill, error) {
	f := &Fill{}
	j, err := parseJWS(token, TypFill, CodeBadSignature, &f.Claims, fillClaimNames)
	if err != nil {
		return nil, err
	}
	f.JWS = *j
	if err := f.Claims.validate(); err != nil {
		return nil, fail(CodeBadSignature, ReasonMalformed, "claims: %v", err)
	}
	return f, nil
}

// Verify checks that kid is KeyID(pub) and the signature verifies under
// pub, the publisher's registered SDK key. Failures are
// fraud_bad_signature. The caller must also check that pub is registered
// to the app app names, and that the claims are the request's (Covers).
func (f *Fill) Verify(pub ed25519.PublicKey) error {
	return f.JWS.verify(pub, CodeBadSignature)
}

// Covers checks that the signed claims are exactly the request's fields
// (req's IssuedAt is not compared): a signature over another request,
// another slot or another device, does not ask for this one. Failures are
// fraud_bad_signature with reason request_mismatch.
func (f *Fill) Covers(req FillClaims) error {
	c := f.Claims
	for _, m := range []struct{ name, signed, asked string }{
		{"app", c.AppID, req.AppID}, {"slot", c.Slot, req.Slot}, {"platform", c.Platform, req.Platform},
		{"dev", c.DeviceID, req.DeviceID}, {"loc", c.Locale, req.Locale},
	} {
		if m.signed != m.asked {
			return fail(CodeBadSignature, ReasonRequestMismatch, "the signed %s is %q, the request's %q", m.name, m.signed, m.asked)
		}
	}
	return nil
}

// CheckTime checks that the request is fresh: now - skew <= iat <= now +
// skew (negative skew counts as 0). Failures are fraud_token_expired with
// reason stale or not_yet_valid.
func (f *Fill) CheckTime(now time.Time, skew time.Duration) error {
	return checkFresh("signed", f.Claims.IssuedAt, now, skew)
}

// checkFresh checks that a message dated at (unix seconds) is within skew
// of now; what names the date in the messages ("signed", "sent").
func checkFresh(what string, at int64, now time.Time, skew time.Duration) error {
	skew = max(skew, 0)
	ts := unix(at)
	switch {
	case ts.Before(now.Add(-skew)):
		return fail(CodeTokenExpired, ReasonStale, "%s at %s, now %s", what, ts.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case ts.After(now.Add(skew)):
		return fail(CodeTokenExpired, ReasonNotYetValid, "%s at %s, in the future of %s", what, ts.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}
