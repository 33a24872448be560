package attribution

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Lifetimes and the default tolerance for clocks that disagree.
const (
	// OfferTTL: an offer not clicked within this long after its oat lapses.
	OfferTTL = 15 * time.Minute
	// ClickTTL: exp is exactly iat + ClickTTL.
	ClickTTL = 15 * time.Minute
	// DefaultClockSkew is the clock disagreement verifiers tolerate between
	// a device and the server, unless configured otherwise.
	DefaultClockSkew = 2 * time.Minute
)

// Platforms of an offer (the same strings as the REST API's Platform).
const (
	PlatformMac = "mac"
	PlatformWin = "win"
)

// Sizes.
const (
	// NonceSize is how many random bytes NewNonce draws (128 bits).
	NonceSize = 16
	// MinNonceSize and MaxNonceSize bound the decoded nonce a parser accepts.
	MinNonceSize = 16
	MaxNonceSize = 64
	// MinMACSecretSize is the shortest server MAC secret SealOffer accepts.
	MinMACSecretSize = 32
	// MaxIDLen is the longest identifier (app, campaign, category, device,
	// key ids) a message may carry.
	MaxIDLen = 128
)

// maxUnix is 9999-12-31T23:59:59Z: every time claim is in (0, maxUnix], so
// adding lifetimes and skews never overflows.
const maxUnix = 253402300799

// Offer is the unsigned body the server hands the publisher's SDK at fill:
// which campaign of which advertiser is shown in which publisher app, at
// what price, when; bound to the server by a MAC. Its members are also the
// first members of the click token's claims (ClickClaims), under the same
// names, so the SDK signs the offer it was given, adding only iat and exp.
type Offer struct {
	// Nonce is the fill's unique id: at least 128 random bits, unpadded
	// base64url. It is the JWT id of the click token and makes it single use.
	Nonce string `json:"jti"`
	// Publisher is the app id of the publisher, whose SDK signs the click.
	Publisher string `json:"iss"`
	// Advertiser is the app id of the advertised app, whose SDK countersigns.
	Advertiser string `json:"aud"`
	CampaignID string `json:"campaign_id"`
	// Category is the rate-card category the fill was sold in.
	Category string `json:"category"`
	// Platform is "mac" or "win".
	Platform string `json:"platform"`
	// PriceCents is the price of a cleared install, locked at fill.
	PriceCents int64 `json:"price_cents"`
	// OfferedAt (oat) is the fill time, unix seconds, server clock.
	OfferedAt int64 `json:"oat"`
	// MACKeyID names the server secret the MAC was computed with.
	MACKeyID string `json:"mac_kid"`
	// MAC is HMAC-SHA256(secret, CanonicalOffer), unpadded base64url.
	MAC string `json:"mac"`
}

// offerMACInput is the offer without its MAC, in canonical member order.
type offerMACInput struct {
	Nonce      string `json:"jti"`
	Publisher  string `json:"iss"`
	Advertiser string `json:"aud"`
	CampaignID string `json:"campaign_id"`
	Category   string `json:"category"`
	Platform   string `json:"platform"`
	PriceCents int64  `json:"price_cents"`
	OfferedAt  int64  `json:"oat"`
	MACKeyID   string `json:"mac_kid"`
}

// CanonicalOffer is the byte string the offer MAC covers: the offer's JSON
// without "mac", members in the order jti, iss, aud, campaign_id, category,
// platform, price_cents, oat, mac_kid, no whitespace. Identifiers are
// restricted to characters JSON never escapes, so the bytes are the same in
// every language.
func CanonicalOffer(o Offer) []byte {
	b, err := json.Marshal(offerMACInput{o.Nonce, o.Publisher, o.Advertiser, o.CampaignID,
		o.Category, o.Platform, o.PriceCents, o.OfferedAt, o.MACKeyID})
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	return b
}

// Expires is when the offer lapses: oat + OfferTTL.
func (o Offer) Expires() time.Time { return unix(o.OfferedAt).Add(OfferTTL) }

// NewNonce draws NonceSize bytes from random (nil means crypto/rand) and
// encodes them as an offer nonce.
func NewNonce(random io.Reader) (string, error) {
	if random == nil {
		random = rand.Reader
	}
	var b [NonceSize]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return "", fmt.Errorf("attribution: nonce: %w", err)
	}
	return b64(b[:]), nil
}

// MACKey is a server MAC secret and its id.
type MACKey struct {
	ID     string
	Secret []byte
}

// OfferMAC computes HMAC-SHA256 under secret over CanonicalOffer(o) (which
// includes o.MACKeyID) and returns it in unpadded base64url.
func OfferMAC(secret []byte, o Offer) string {
	m := hmac.New(sha256.New, secret)
	m.Write(CanonicalOffer(o))
	return b64(m.Sum(nil))
}

// SealOffer validates o, sets its MACKeyID to key.ID and its MAC, and
// returns it. The server calls it at fill.
func SealOffer(key MACKey, o Offer) (Offer, error) {
	if len(key.Secret) < MinMACSecretSize {
		return Offer{}, fmt.Errorf("attribution: MAC secret is %d bytes, want at least %d", len(key.Secret), MinMACSecretSize)
	}
	o.MACKeyID = key.ID
	o.MAC = OfferMAC(key.Secret, o)
	if err := o.validate(); err != nil {
		return Offer{}, fmt.Errorf("attribution: offer: %w", err)
	}
	return o, nil
}

// VerifyOfferMAC checks o's MAC under secret (the secret o.MACKeyID names).
// Failures are fraud_bad_signature: the offer was not issued by this server.
func VerifyOfferMAC(secret []byte, o Offer) error {
	if err := o.validate(); err != nil {
		return fail(CodeBadSignature, ReasonMalformed, "offer: %v", err)
	}
	got, _ := unb64(o.MAC) // validate checked it decodes
	want := hmac.New(sha256.New, secret)
	want.Write(CanonicalOffer(o))
	if !hmac.Equal(got, want.Sum(nil)) {
		return fail(CodeBadSignature, ReasonBadMAC, "offer MAC does not verify under %q", o.MACKeyID)
	}
	return nil
}

// MACKeys holds the server's MAC secrets by id: the current one, which
// SealOffer uses, and the previous ones kept while their offers can still
// be in flight (OfferTTL + ClickTTL + 2 × skew after a rotation).
type MACKeys map[string][]byte

// Verify checks o's MAC under the secret its mac_kid names.
func (k MACKeys) Verify(o Offer) error {
	secret, ok := k[o.MACKeyID]
	if !ok {
		if err := o.validate(); err != nil {
			return fail(CodeBadSignature, ReasonMalformed, "offer: %v", err)
		}
		return fail(CodeBadSignature, ReasonUnknownMACKey, "no MAC key %q", o.MACKeyID)
	}
	return VerifyOfferMAC(secret, o)
}

// validate checks the shape of every member (not the MAC's value).
func (o Offer) validate() error {
	if n, ok := unb64(o.Nonce); !ok || len(n) < MinNonceSize || len(n) > MaxNonceSize {
		return fmt.Errorf("jti is not %d to %d bytes of unpadded base64url", MinNonceSize, MaxNonceSize)
	}
	for _, f := range []struct{ name, v string }{
		{"iss", o.Publisher}, {"aud", o.Advertiser}, {"campaign_id", o.CampaignID},
		{"category", o.Category}, {"mac_kid", o.MACKeyID},
	} {
		if !validID(f.v) {
			return fmt.Errorf("%s %q is not an identifier", f.name, f.v)
		}
	}
	if o.Platform != PlatformMac && o.Platform != PlatformWin {
		return fmt.Errorf("platform %q is not mac or win", o.Platform)
	}
	if o.PriceCents <= 0 {
		return errors.New("price_cents is not positive")
	}
	if !validTime(o.OfferedAt) {
		return errors.New("oat is not a positive unix time")
	}
	if m, ok := unb64(o.MAC); !ok || len(m) != sha256.Size {
		return errors.New("mac is not 32 bytes of unpadded base64url")
	}
	return nil
}

// validID reports whether s is an identifier: 1 to MaxIDLen characters of
// A-Z a-z 0-9 - _ . : ~ (none of which JSON escapes).
func validID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == ':' || c == '~') {
			return false
		}
	}
	return true
}

func validTime(t int64) bool { return t > 0 && t <= maxUnix }

func unix(t int64) time.Time { return time.Unix(t, 0).UTC() }
