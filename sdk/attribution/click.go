package attribution

import (
	"crypto/ed25519"
	"fmt"
	"time"
)

// ClickClaims are the claims of a click token: the offer as the server
// sealed it, then the click time and expiry. Member order when signed: jti,
// iss, aud, campaign_id, category, platform, price_cents, oat, mac_kid, mac,
// iat, exp.
type ClickClaims struct {
	Offer
	// IssuedAt (iat) is the click time, unix seconds, device clock.
	IssuedAt int64 `json:"iat"`
	// ExpiresAt (exp) is exactly IssuedAt + ClickTTL (900 seconds).
	ExpiresAt int64 `json:"exp"`
}

var clickClaimNames = []string{"jti", "iss", "aud", "campaign_id", "category", "platform",
	"price_cents", "oat", "mac_kid", "mac", "iat", "exp"}

// NewClickClaims returns the claims of a click on offer o at clickTime:
// iat = clickTime (unix seconds), exp = iat + ClickTTL.
func NewClickClaims(o Offer, clickTime time.Time) ClickClaims {
	iat := clickTime.Unix()
	return ClickClaims{Offer: o, IssuedAt: iat, ExpiresAt: iat + int64(ClickTTL/time.Second)}
}

// IssuedTime is iat as a time.
func (c ClickClaims) IssuedTime() time.Time { return unix(c.IssuedAt) }

// ExpiresTime is exp as a time.
func (c ClickClaims) ExpiresTime() time.Time { return unix(c.ExpiresAt) }

func (c ClickClaims) validate() error {
	if err := c.Offer.validate(); err != nil {
		return err
	}
	if !validTime(c.IssuedAt) {
		return fmt.Errorf("iat is not a positive unix time")
	}
	if c.ExpiresAt != c.IssuedAt+int64(ClickTTL/time.Second) {
		return fmt.Errorf("exp is not iat + %d", int64(ClickTTL/time.Second))
	}
	return nil
}

// Click is a parsed, not yet verified, click token.
type Click struct {
	JWS
	Claims ClickClaims
}

// SignClick signs claims with the publisher SDK's key as a compact JWS
// (typ xpromo-click+jwt, alg Ed25519). kid must be KeyID of priv's public
// key. The claims must be valid: a sealed offer, exp = iat + ClickTTL.
func SignClick(priv ed25519.PrivateKey, kid string, claims ClickClaims) (string, error) {
	if err := claims.validate(); err != nil {
		return "", fmt.Errorf("attribution: click claims: %w", err)
	}
	return signJWS(priv, kid, TypClick, claims)
}

// ParseClick parses a click token without verifying it. It checks the
// structure, the header (alg, typ, kid) and the shape of every claim;
// failures are fraud_bad_signature. Verify the signature with Verify, the
// offer's MAC with MACKeys.Verify or VerifyOfferMAC, the times with CheckTime.
func ParseClick(token string) (*Click, error) {
	c := &Click{}
	j, err := parseJWS(token, TypClick, CodeBadSignature, &c.Claims, clickClaimNames)
	if err != nil {
		return nil, err
	}
	c.JWS = *j
	if err := c.Claims.validate(); err != nil {
		return nil, fail(CodeBadSignature, ReasonMalformed, "claims: %v", err)
	}
	return c, nil
}

// Verify checks that the token's kid is KeyID(pub) and that its signature
// verifies under pub, the publisher's registered SDK key. Failures are
// fraud_bad_signature. The caller must also check that pub is registered to
// the app named by iss.
func (c *Click) Verify(pub ed25519.PublicKey) error {
	return c.JWS.verify(pub, CodeBadSignature)
}

// Hash is TokenHashString of the token: the "th" its countersignature and
// heartbeats carry.
func (c *Click) Hash() string { return TokenHashString(c.Raw) }

// CheckTime checks the token's times against now (the verifier's clock),
// tolerating skew of clock disagreement (negative counts as 0):
//
//   - the click came within the offer's life: oat - skew <= iat <= oat + OfferTTL + skew
//     (else reason click_before_offer or offer_lapsed);
//   - the token is not from the future: now >= iat - skew (else not_yet_valid);
//   - the token has not expired: now < exp + skew (else expired; at exactly
//     exp + skew it has).
//
// Failures are fraud_token_expired.
func (c *Click) CheckTime(now time.Time, skew time.Duration) error {
	skew = max(skew, 0)
	oat, iat, exp := unix(c.Claims.OfferedAt), unix(c.Claims.IssuedAt), unix(c.Claims.ExpiresAt)
	switch {
	case iat.Before(oat.Add(-skew)):
		return fail(CodeTokenExpired, ReasonClickBeforeOffer, "clicked at %s, before the offer at %s", iat.Format(time.RFC3339), oat.Format(time.RFC3339))
	case iat.After(oat.Add(OfferTTL + skew)):
		return fail(CodeTokenExpired, ReasonOfferLapsed, "clicked at %s, the offer lapsed at %s", iat.Format(time.RFC3339), oat.Add(OfferTTL).Format(time.RFC3339))
	case now.Before(iat.Add(-skew)):
		return fail(CodeTokenExpired, ReasonNotYetValid, "clicked at %s, in the future of %s", iat.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case !now.Before(exp.Add(skew)):
		return fail(CodeTokenExpired, ReasonExpired, "expired at %s, now %s", exp.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}
