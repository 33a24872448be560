package attribution

import (
	"crypto/ed25519"
	"fmt"
	"time"
)

// InstallClaims are the claims of an install countersignature: the
// advertiser's SDK, on the first launch after the click, binds the click
// token (by its hash) to this install. Member order when signed: th, dev,
// cat, app.
type InstallClaims struct {
	// TokenHash (th) is TokenHashString of the click token.
	TokenHash string `json:"th"`
	// DeviceID (dev) is the opaque per-install id the SDK derives.
	DeviceID string `json:"dev"`
	// ClaimedAt (cat) is the claim time, unix seconds, device clock.
	ClaimedAt int64 `json:"cat"`
	// AppID (app) is the advertiser's app id: the click token's aud.
	AppID string `json:"app"`
}

var installClaimNames = []string{"th", "dev", "cat", "app"}

// ClaimedTime is cat as a time.
func (c InstallClaims) ClaimedTime() time.Time { return unix(c.ClaimedAt) }

func (c InstallClaims) validate() error {
	if h, ok := unb64(c.TokenHash); !ok || len(h) != 32 {
		return fmt.Errorf("th is not 32 bytes of unpadded base64url")
	}
	if !validID(c.DeviceID) {
		return fmt.Errorf("dev %q is not an identifier", c.DeviceID)
	}
	if !validTime(c.ClaimedAt) {
		return fmt.Errorf("cat is not a positive unix time")
	}
	if !validID(c.AppID) {
		return fmt.Errorf("app %q is not an identifier", c.AppID)
	}
	return nil
}

// Install is a parsed, not yet verified, install countersignature.
type Install struct {
	JWS
	Claims InstallClaims
}

// Countersign signs, with the advertiser SDK's key, the install of appID on
// deviceID at claimTime as the one the click token led to (typ
// xpromo-install+jwt). kid must be KeyID of priv's public key. It refuses
// a click token that does not parse or whose aud is not appID: an SDK only
// claims installs of its own app.
func Countersign(priv ed25519.PrivateKey, kid, clickToken, deviceID string, claimTime time.Time, appID string) (string, error) {
	click, err := ParseClick(clickToken)
	if err != nil {
		return "", fmt.Errorf("attribution: countersign: %w", err)
	}
	if click.Claims.Advertiser != appID {
		return "", fmt.Errorf("attribution: countersign: the click token is for app %q, not %q", click.Claims.Advertiser, appID)
	}
	claims := InstallClaims{TokenHash: TokenHashString(clickToken), DeviceID: deviceID, ClaimedAt: claimTime.Unix(), AppID: appID}
	if err := claims.validate(); err != nil {
		return "", fmt.Errorf("attribution: install claims: %w", err)
	}
	return signJWS(priv, kid, TypInstall, claims)
}

// ParseInstall parses an install countersignature without verifying it.
// Failures are fraud_bad_countersignature.
func ParseInstall(token string) (*Install, error) {
	in := &Install{}
	j, err := parseJWS(token, TypInstall, CodeBadCountersignature, &in.Claims, installClaimNames)
	if err != nil {
		return nil, err
	}
	in.JWS = *j
	if err := in.Claims.validate(); err != nil {
		return nil, fail(CodeBadCountersignature, ReasonMalformed, "claims: %v", err)
	}
	return in, nil
}

// Verify checks the countersignature against pub, the advertiser's
// registered SDK key, and its binding to click, the click token presented
// with it:
//
//   - kid is KeyID(pub) and the signature verifies (else fraud_bad_countersignature);
//   - th is the hash of click.Raw (else fraud_bad_countersignature, token_hash_mismatch);
//   - app is the click's aud (else fraud_app_mismatch).
//
// The caller must also check that pub is registered to the app named by app,
// and verify the click itself.
func (in *Install) Verify(pub ed25519.PublicKey, click *Click) error {
	if err := in.JWS.verify(pub, CodeBadCountersignature); err != nil {
		return err
	}
	if in.Claims.TokenHash != TokenHashString(click.Raw) {
		return fail(CodeBadCountersignature, ReasonTokenHashMismatch, "th is not the hash of the presented click token")
	}
	if in.Claims.AppID != click.Claims.Advertiser {
		return fail(CodeAppMismatch, ReasonAppMismatch, "installed app %q, the click was for %q", in.Claims.AppID, click.Claims.Advertiser)
	}
	return nil
}

// CheckTime checks the claim against its click and now (the verifier's
// clock), tolerating skew (negative counts as 0): the click token's own
// CheckTime at now (the claim reaches the verifier before exp + skew); the
// claim was made before the click expired, cat < exp + skew (else expired);
// and cat is not in the verifier's future, cat <= now + skew (else
// not_yet_valid). Failures are fraud_token_expired.
//
// A claim dated before its click is left to the click-to-install rule
// (CTIT, fraud_ctit_too_short), which sees a negative duration.
func (in *Install) CheckTime(click *Click, now time.Time, skew time.Duration) error {
	if err := click.CheckTime(now, skew); err != nil {
		return err
	}
	skew = max(skew, 0)
	cat, exp := unix(in.Claims.ClaimedAt), unix(click.Claims.ExpiresAt)
	switch {
	case !cat.Before(exp.Add(skew)):
		return fail(CodeTokenExpired, ReasonExpired, "claimed at %s, the click expired at %s", cat.Format(time.RFC3339), exp.Format(time.RFC3339))
	case cat.After(now.Add(skew)):
		return fail(CodeTokenExpired, ReasonNotYetValid, "claimed at %s, in the future of %s", cat.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}

// CTIT is the click-to-install time, cat - iat. Both come from the same
// device's clock (the publisher and the advertiser app run side by side),
// so device clock error cancels out. It is negative for a claim dated before
// its click.
func (in *Install) CTIT(click *Click) time.Duration {
	return time.Duration(in.Claims.ClaimedAt-click.Claims.IssuedAt) * time.Second
}
