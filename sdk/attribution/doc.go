// Package attribution is the token format of xpromo's deterministic install
// attribution: the fill request the publisher's SDK signs, the offer the
// server seals at fill, the click token the publisher's SDK signs, the
// install countersignature the advertiser's SDK signs, and the heartbeats
// that prove the install is still in use. The SDK
// inside apps and the reference server both use it, so the two cannot
// drift. docs/protocol.md is the full, language-neutral specification.
//
// # Messages
//
//  0. Fill request (publisher SDK): app, slot, platform, dev, loc (the
//     fields of the request) and iat, signed with the publisher's SDK key
//     (SignFill, ParseFill, Fill.Verify, Fill.Covers, Fill.CheckTime), so
//     that only the app's own SDK can ask for its fills.
//  1. Offer (server → publisher SDK, at fill): an unsigned body — nonce
//     (jti), publisher (iss) and advertiser (aud) app ids, campaign_id,
//     category, platform, price_cents, offer time (oat) — bound to the
//     server by an HMAC-SHA256 under a server secret named by mac_kid
//     (SealOffer, VerifyOfferMAC, MACKeys). No write happens at fill. An
//     offer not clicked within OfferTTL (15 minutes) lapses.
//  2. Click token (publisher SDK): the offer's members plus iat (click time)
//     and exp = iat + ClickTTL (15 minutes), signed as a compact JWS with
//     the publisher's SDK key (SignClick, ParseClick, Click.Verify,
//     Click.CheckTime).
//  3. Install countersignature (advertiser SDK, first launch): th (the
//     click token's hash), dev (device id), cat (claim time), app (the
//     advertiser's app id), signed with the advertiser's SDK key
//     (Countersign, ParseInstall, Install.Verify, Install.CheckTime).
//  4. Heartbeat (advertiser SDK): app, dev, th, seq, ts, signed the same way
//     (SignHeartbeat, ParseHeartbeat, Heartbeat.Verify, Heartbeat.CheckTime).
//
// # Encoding
//
// Every signed message is an RFC 7515 compact JWS: base64url(header) "."
// base64url(payload) "." base64url(signature), unpadded base64url, the
// signature Ed25519 over the ASCII of the first two parts. The protected
// header is exactly {"alg","kid","typ"}: alg "Ed25519" when signing (RFC
// 9864); verifiers also accept "EdDSA" (RFC 8037) and refuse anything else,
// "none" included. kid is the signer's SDK key id (KeyID: "sk_" + base64url
// of the first 15 bytes of SHA-256 of the public key), which a verifier
// checks against the key it verifies with; typ names the message kind, and
// a token of one kind is never accepted as another.
//
// Parsers are strict, so that every accepted token has exactly one
// spelling and one reading: at most MaxTokenSize (4 KiB); canonical
// base64url only (no padding, no line breaks, zero trailing bits); the
// header and the claims are JSON objects with exactly the documented
// members, each once (duplicates refused at any depth), of the documented
// types; identifiers are 1 to 128 characters of A-Z a-z 0-9 - _ . : ~.
// Signers emit claims in a fixed member order, but verifiers do not require
// it: the signature covers the exact bytes, so other languages may serialize
// the claims in any order.
//
// # Time
//
// Verification never reads the clock: every time check takes now and the
// tolerated clock skew (DefaultClockSkew, 2 minutes) explicitly. Times on
// the wire are unix seconds.
//
// # Errors
//
// Every parse and verification failure is an *Error carrying the fraud
// code the server records on the chain (Code) and the check that failed
// (Reason):
//
//   - fraud_bad_signature: a click token, heartbeat or fill request that
//     is malformed (Reason malformed or too_large: a token that does not
//     parse is no more trustworthy than a forged one), has a refused alg or
//     typ, a kid that is not the verifying key, a signature that does not
//     verify, an offer whose MAC does not verify (bad_mac,
//     unknown_mac_key), or a fill request whose claims are not the
//     request's (request_mismatch);
//   - fraud_bad_countersignature: the same failures of an install
//     countersignature, and a th that is not the hash of the presented
//     click token (token_hash_mismatch);
//   - fraud_token_expired: a click after its offer lapsed, a token used at
//     or after exp (+ skew), a message dated in the verifier's future, a
//     stale heartbeat or fill request;
//   - fraud_app_mismatch: the countersigning app is not the click's aud.
//
// Code(err) and ReasonOf(err) read them; errors.Is(err, ErrBadSignature)
// and friends match on the code. Signing functions return plain errors.
//
// # What the caller checks
//
// This package checks the cryptography, the binding between the messages
// and their times. The server also checks what needs its state: that each
// kid is registered to the app that signs with it (iss for the click, app
// for the countersignature, heartbeats and fill requests), single use of jti
// (fraud_token_reused), the fraud rules (CTIT, velocity, ASN, …) and
// heartbeat sequence numbers.
package attribution
