package attribution

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/txunit"
)

// The canary check (docs/apps.md "Canary check"): now and then a fill
// answers a canary instead of the auction's live offer — an offer an honest
// SDK never shows and so never clicks. A client that signs clicks for offers
// it never showed (a click spammer harvesting the attribution of organic
// installs) clicks canaries, and the lifecycle review suspends it.
//
// The fill path stays free of writes: a canary is recognised statelessly by
// its jti, 8 random bytes followed by the first 8 bytes of
// HMAC-SHA256(canary key, those bytes), where the canary key is derived
// from the offer MAC secret that sealed the offer. Without the server's
// secret a canary jti cannot be told from a random one.

// CanaryVariant is the way a canary is unfit to show.
type CanaryVariant string

// Canary variants.
const (
	// CanaryLapsed: a normal offer and creative of the auction's winner,
	// offered (oat) at least CanaryLapse ago, so it lapsed long before it
	// arrived. An honest SDK shows nothing (sdk/slots: no fill,
	// offer_lapsed).
	CanaryLapsed CanaryVariant = "lapsed"
	// CanaryMismatch: the winner's creative with an offer whose aud is
	// another app id than the creative's advertiser_app_id. An honest SDK
	// refuses it (sdk/slots: the offer advertises another app).
	CanaryMismatch CanaryVariant = "mismatch"
)

// CanaryLapse is how long before the fill a lapsed canary was offered, at
// least (a random part of up to as much again is added).
const CanaryLapse = 24 * time.Hour

// canaryTagSize is the size of each half of a canary jti: the random part
// and the truncated HMAC over it.
const canaryTagSize = token.NonceSize / 2

// canaryKey is the key marking canary jtis of offers sealed with the MAC
// secret macSecret: a separate key derived from it, so the offer MAC and
// the canary mark never share a key.
func canaryKey(macSecret []byte) []byte {
	m := hmac.New(sha256.New, macSecret)
	m.Write([]byte("xpromo canary jti key v1"))
	return m.Sum(nil)
}

func canaryTag(key, random []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(random)
	return m.Sum(nil)[:canaryTagSize]
}

// newCanaryNonce draws a canary jti for an offer sealed with macSecret.
func newCanaryNonce(macSecret []byte) (string, error) {
	var b [token.NonceSize]byte
	if _, err := rand.Read(b[:canaryTagSize]); err != nil {
		return "", err
	}
	copy(b[canaryTagSize:], canaryTag(canaryKey(macSecret), b[:canaryTagSize]))
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// isCanary reports whether o, an offer whose MAC verified, is a canary:
// its jti carries the mark of the canary key of the secret that sealed it.
func (s *Service) isCanary(o token.Offer) bool {
	secret, ok := s.MACKeys[o.MACKeyID]
	if !ok {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(o.Nonce)
	if err != nil || len(b) != token.NonceSize {
		return false
	}
	return hmac.Equal(b[canaryTagSize:], canaryTag(canaryKey(secret), b[:canaryTagSize]))
}

// canaryDue decides whether this fill is a canary: one in CanaryRate on
// average, drawn from crypto/rand so no client can predict it.
func (s *Service) canaryDue() bool {
	if s.CanaryRate <= 0 {
		return false
	}
	if s.CanaryRate == 1 {
		return true
	}
	return randUint64()%uint64(s.CanaryRate) == 0
}

func randUint64() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return binary.BigEndian.Uint64(b[:])
}

// randomVariant picks a canary variant at random.
func randomVariant() CanaryVariant {
	if randUint64()&1 == 0 {
		return CanaryLapsed
	}
	return CanaryMismatch
}

// canaryFill turns the live fill f (its award, creative and offer as the
// auction made them) into a canary of variant v, sealed with the current
// MAC key, and counts it as served to the publisher once the fill is
// answered. Nothing is priced: no hold, no spend, no impression of the
// campaign.
func (s *Service) canaryFill(ctx context.Context, f Fill, v CanaryVariant, now time.Time) (Fill, error) {
	o := f.Offer
	nonce, err := newCanaryNonce(s.MACKey.Secret)
	if err != nil {
		return Fill{}, err
	}
	o.Nonce, o.MACKeyID, o.MAC = nonce, "", ""
	switch v {
	case CanaryLapsed:
		extra := time.Duration(randUint64()%uint64(CanaryLapse/time.Second)) * time.Second
		o.OfferedAt = now.Add(-CanaryLapse - extra).Unix()
	case CanaryMismatch:
		// An app id of the usual shape that no app has: the offer names
		// another advertiser than the creative.
		o.Advertiser = ids.New("app")
	}
	if f.Offer, err = token.SealOffer(s.MACKey, o); err != nil {
		return Fill{}, err
	}
	k := canaryDay{day(now), o.Publisher}
	txunit.AfterCommit(ctx, func() { s.canaries.add(k, 1) })
	return f, nil
}

// canaryAnswer is the refusal a click or claim on a canary gets when the
// ordinary checks found nothing to refuse (a mismatch canary whose times
// are fine): exactly the answer to an offer whose MAC does not verify, as
// if the offer had been forged, recorded as nothing.
func (s *Service) canaryAnswer(click *token.Click, what string) *refusal {
	// The token package words the refusal; a key that did not seal the
	// offer (its canary key) makes it say exactly what a forged MAC gets.
	err := token.VerifyOfferMAC(canaryKey(s.MACKeys[click.Claims.MACKeyID]), click.Claims.Offer)
	return &refusal{code: FraudBadSignature, msg: what + ": " + tokenErrorMessage(err), click: click}
}

// CanaryClick records that a publisher's SDK signed a click token for a
// canary: the click report or the install claim carrying it. Via says which
// ("click" or "install"). One per jti.
type CanaryClick struct {
	Nonce string // the canary's jti
	AppID string // the publisher whose registered key signed the click token
	Via   string
	At    time.Time
}

// Ways a canary click reaches the server.
const (
	CanaryViaClick   = "click"
	CanaryViaInstall = "install"
)

// CanaryCount is a number of canaries served to one publisher app on one
// UTC day.
type CanaryCount struct {
	Day   time.Time // midnight UTC
	AppID string
	Count int64
}

// recordCanaryClick stores c unless its jti was recorded before, in tx.
func recordCanaryClick(ctx context.Context, tx Tx, c CanaryClick, log func(CanaryClick)) error {
	inserted, err := tx.InsertCanaryClick(ctx, c)
	if err == nil && inserted {
		log(c)
	}
	return err
}
