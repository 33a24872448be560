package attribution

import (
	"crypto/ed25519"
	"fmt"
	"time"
)

// HeartbeatClaims are the claims of a heartbeat: the advertiser's SDK says,
// periodically after an attributed install, that the app is still in use on
// the device. Member order when signed: app, dev, th, seq, ts.
type HeartbeatClaims struct {
	// AppID (app) is the advertiser's app id, as in the countersignature.
	AppID string `json:"app"`
	// DeviceID (dev) is the device id of the countersignature.
	DeviceID string `json:"dev"`
	// TokenHash (th) names the chain: the hash of its click token.
	TokenHash string `json:"th"`
	// Seq numbers the heartbeats of one chain, from 1, strictly increasing.
	Seq int64 `json:"seq"`
	// SentAt (ts) is when the heartbeat was signed, unix seconds, device clock.
	SentAt int64 `json:"ts"`
}

var heartbeatClaimNames = []string{"app", "dev", "th", "seq", "ts"}

// SentTime is ts as a time.
func (c HeartbeatClaims) SentTime() time.Time { return unix(c.SentAt) }

func (c HeartbeatClaims) validate() error {
	if !validID(c.AppID) {
		return fmt.Errorf("app %q is not an identifier", c.AppID)
	}
	if !validID(c.DeviceID) {
		return fmt.Errorf("dev %q is not an identifier", c.DeviceID)
	}
	if h, ok := unb64(c.TokenHash); !ok || len(h) != 32 {
		return fmt.Errorf("th is not 32 bytes of unpadded base64url")
	}
	if c.Seq < 1 {
		return fmt.Errorf("seq is not a positive integer")
	}
	if !validTime(c.SentAt) {
		return fmt.Errorf("ts is not a positive unix time")
	}
	return nil
}

// Heartbeat is a parsed, not yet verified, heartbeat.
type Heartbeat struct {
	JWS
	Claims HeartbeatClaims
}

// SignHeartbeat signs a heartbeat with the advertiser SDK's key (typ
// xpromo-heartbeat+jwt). kid must be KeyID of priv's public key. Sign each
// heartbeat when sending it (a retry signs again, with the next seq and a
// fresh ts): verifiers refuse stale ones.
func SignHeartbeat(priv ed25519.PrivateKey, kid string, claims HeartbeatClaims) (string, error) {
	if err := claims.validate(); err != nil {
		return "", fmt.Errorf("attribution: heartbeat claims: %w", err)
	}
	return signJWS(priv, kid, TypHeartbeat, claims)
}

// ParseHeartbeat parses a heartbeat without verifying it. Failures are
// fraud_bad_signature.
func ParseHeartbeat(token string) (*Heartbeat, error) {
	h := &Heartbeat{}
	j, err := parseJWS(token, TypHeartbeat, CodeBadSignature, &h.Claims, heartbeatClaimNames)
	if err != nil {
		return nil, err
	}
	h.JWS = *j
	if err := h.Claims.validate(); err != nil {
		return nil, fail(CodeBadSignature, ReasonMalformed, "claims: %v", err)
	}
	return h, nil
}

// Verify checks that kid is KeyID(pub) and the signature verifies under pub,
// the advertiser's registered SDK key. Failures are fraud_bad_signature. The
// caller must also check that the chain named by th was installed by app on
// dev, that pub is registered to app, and that seq is above the chain's
// last accepted seq.
func (h *Heartbeat) Verify(pub ed25519.PublicKey) error {
	return h.JWS.verify(pub, CodeBadSignature)
}

// CheckTime checks that the heartbeat is fresh: now - skew <= ts <= now +
// skew (negative skew counts as 0). Failures are fraud_token_expired with
// reason stale or not_yet_valid.
func (h *Heartbeat) CheckTime(now time.Time, skew time.Duration) error {
	return checkFresh("sent", h.Claims.SentAt, now, skew)
}
