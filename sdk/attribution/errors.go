package attribution

import (
	"errors"
	"fmt"
)

// Fraud reason codes produced by this package. They are the chain reason
// codes of the product (docs/errors.md, docs/protocol.md) and the keys of
// Stats.fraud_rejected; the server records them on a rejected chain.
const (
	// CodeBadSignature: the click token (or a heartbeat, or a signed fill
	// request) is malformed, uses an algorithm other than Ed25519, names a
	// key that is not the one it is verified with, carries a signature that
	// does not verify, holds an offer whose server MAC does not verify, or
	// (a fill) signs another request than the one it comes with.
	CodeBadSignature = "fraud_bad_signature"
	// CodeBadCountersignature: the install countersignature is malformed,
	// does not verify, or is not bound to the presented click token.
	CodeBadCountersignature = "fraud_bad_countersignature"
	// CodeTokenExpired: a time check failed: the click came after its offer
	// lapsed, the token is used after its exp, or a message is dated too far
	// from the verifier's clock.
	CodeTokenExpired = "fraud_token_expired"
	// CodeAppMismatch: the countersigning app is not the advertiser the
	// click token names.
	CodeAppMismatch = "fraud_app_mismatch"
)

// Reason refines a Code: it says which check failed. Reasons are stable
// strings, fit for logs and metrics; the Code is what reaches the chain.
type Reason string

// Reasons.
const (
	ReasonMalformed         Reason = "malformed"           // not a well-formed token of the expected kind
	ReasonTooLarge          Reason = "too_large"           // longer than MaxTokenSize
	ReasonBadAlg            Reason = "bad_alg"             // alg other than Ed25519 / EdDSA (e.g. "none")
	ReasonBadTyp            Reason = "bad_typ"             // typ is not the one of the expected message kind
	ReasonKidMismatch       Reason = "kid_mismatch"        // kid is not the id of the verifying key
	ReasonSignatureMismatch Reason = "signature_mismatch"  // the Ed25519 signature does not verify
	ReasonBadMAC            Reason = "bad_mac"             // the offer's server MAC does not verify
	ReasonUnknownMACKey     Reason = "unknown_mac_key"     // the offer names a server MAC key the verifier does not hold
	ReasonTokenHashMismatch Reason = "token_hash_mismatch" // countersignature th is not the hash of the click token
	ReasonAppMismatch       Reason = "app_mismatch"        // countersigning app is not the click's aud
	ReasonOfferLapsed       Reason = "offer_lapsed"        // click more than OfferTTL after the offer
	ReasonClickBeforeOffer  Reason = "click_before_offer"  // click dated before its offer (beyond skew)
	ReasonExpired           Reason = "expired"             // now (or the claim time) is at or past exp (+ skew)
	ReasonNotYetValid       Reason = "not_yet_valid"       // dated in the verifier's future (beyond skew)
	ReasonStale             Reason = "stale"               // heartbeat or fill request dated too far in the verifier's past
	ReasonRequestMismatch   Reason = "request_mismatch"    // a signed fill request's claims are not the request's fields
)

// Error is a verification failure: which fraud code applies (Code), which
// check failed (Reason) and a message for people (Msg, may change).
type Error struct {
	Code   string
	Reason Reason
	Msg    string
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("attribution: %s (%s)", e.Code, e.Reason)
	}
	return fmt.Sprintf("attribution: %s (%s): %s", e.Code, e.Reason, e.Msg)
}

// Is makes errors.Is match on Code, and on Reason when the target has one:
// errors.Is(err, ErrBadSignature) holds for every fraud_bad_signature
// failure, errors.Is(err, &Error{Code: CodeTokenExpired, Reason:
// ReasonOfferLapsed}) only for lapsed offers.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Code == e.Code && (t.Reason == "" || t.Reason == e.Reason)
}

// Sentinels for errors.Is, one per code.
var (
	ErrBadSignature        = &Error{Code: CodeBadSignature}
	ErrBadCountersignature = &Error{Code: CodeBadCountersignature}
	ErrTokenExpired        = &Error{Code: CodeTokenExpired}
	ErrAppMismatch         = &Error{Code: CodeAppMismatch}
)

// Code returns the fraud code of err when it is (or wraps) an *Error, and
// "" otherwise (including for nil).
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// ReasonOf returns the reason of err when it is (or wraps) an *Error, and
// "" otherwise.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func fail(code string, reason Reason, format string, args ...any) *Error {
	return &Error{Code: code, Reason: reason, Msg: fmt.Sprintf(format, args...)}
}
