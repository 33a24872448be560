package attribution

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// MaxTokenSize is the largest compact token, in bytes, any parser accepts.
const MaxTokenSize = 4096

// JWS "alg" values. Signers emit AlgEd25519 (RFC 9864, fully specified);
// verifiers also accept the polymorphic AlgEdDSA (RFC 8037), which RFC 9864
// deprecates but many JOSE libraries still emit. Everything else, "none"
// included, is refused.
const (
	AlgEd25519 = "Ed25519"
	AlgEdDSA   = "EdDSA"
)

// JWS "typ" values, one per message kind. A token of one kind is never
// accepted as another.
const (
	TypClick     = "xpromo-click+jwt"
	TypInstall   = "xpromo-install+jwt"
	TypHeartbeat = "xpromo-heartbeat+jwt"
	TypFill      = "xpromo-fill+jwt"
)

// Header is the JWS protected header of every xpromo message. It has exactly
// these three members, in this order when we sign.
type Header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// JWS is the part every parsed message shares: the compact token as
// presented and its decoded parts. Parsing does not verify; the Verify
// method of the message does.
type JWS struct {
	// Raw is the compact token exactly as presented.
	Raw    string
	Header Header
	// HeaderJSON and PayloadJSON are the decoded bytes of the first two
	// segments: what the signature covers (their base64url form).
	HeaderJSON  []byte
	PayloadJSON []byte
	// Signature is the decoded third segment (64 bytes).
	Signature []byte
	// SigningInput is base64url(HeaderJSON) "." base64url(PayloadJSON), the
	// ASCII string the Ed25519 signature is computed over (RFC 7515 §5.1).
	SigningInput string
}

// Encode serializes the parts again as a compact JWS. For every parsed
// token it returns Raw unchanged: the encoding admits one spelling only.
func (j *JWS) Encode() string {
	return b64(j.HeaderJSON) + "." + b64(j.PayloadJSON) + "." + b64(j.Signature)
}

// verify checks that the header's kid names pub and that the signature
// verifies under pub. Failures carry code.
func (j *JWS) verify(pub ed25519.PublicKey, code string) error {
	if len(pub) != ed25519.PublicKeySize {
		return fail(code, ReasonSignatureMismatch, "verifying key is %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	if want := KeyID(pub); j.Header.Kid != want {
		return fail(code, ReasonKidMismatch, "kid %q is not the verifying key %q", j.Header.Kid, want)
	}
	if !verifyEd25519(pub, j) {
		return fail(code, ReasonSignatureMismatch, "signature does not verify under %s", j.Header.Kid)
	}
	return nil
}

var b64enc = base64.RawURLEncoding.Strict()

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// unb64 decodes canonical unpadded base64url: only the 64 alphabet
// characters (no padding, no line breaks, which Go's decoder would skip),
// and zero trailing bits, so every byte string has exactly one spelling.
func unb64(s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return nil, false
		}
	}
	b, err := b64enc.DecodeString(s)
	if err != nil {
		return nil, false
	}
	return b, true
}

// signCompact returns the compact JWS of headerJSON and payload.
func signCompact(priv ed25519.PrivateKey, headerJSON, payload []byte) string {
	input := b64(headerJSON) + "." + b64(payload)
	return input + "." + b64(ed25519.Sign(priv, []byte(input)))
}

func verifyEd25519(pub ed25519.PublicKey, j *JWS) bool {
	return len(j.Signature) == ed25519.SignatureSize && ed25519.Verify(pub, []byte(j.SigningInput), j.Signature)
}

// splitCompact checks the structure of a compact JWS (size, three non-empty
// canonical base64url segments, a 64-byte signature) and decodes it. It
// reads no JSON.
func splitCompact(token string) (*JWS, error) {
	if len(token) > MaxTokenSize {
		return nil, errTooLarge
	}
	first := strings.IndexByte(token, '.')
	last := strings.LastIndexByte(token, '.')
	if first < 0 || first == last || strings.Count(token, ".") != 2 {
		return nil, errors.New("not three dot-separated segments")
	}
	hs, ps, ss := token[:first], token[first+1:last], token[last+1:]
	if hs == "" || ps == "" || ss == "" {
		return nil, errors.New("empty segment")
	}
	h, ok1 := unb64(hs)
	p, ok2 := unb64(ps)
	s, ok3 := unb64(ss)
	if !ok1 || !ok2 || !ok3 {
		return nil, errors.New("segment is not canonical unpadded base64url")
	}
	if len(s) != ed25519.SignatureSize {
		return nil, fmt.Errorf("signature is %d bytes, want %d", len(s), ed25519.SignatureSize)
	}
	return &JWS{Raw: token, HeaderJSON: h, PayloadJSON: p, Signature: s, SigningInput: token[:last]}, nil
}

var errTooLarge = errors.New("token too large")

// parseJWS parses a compact JWS of the xpromo profile: header with exactly
// alg, kid, typ; alg Ed25519 or EdDSA; typ == typ; the payload a JSON object
// with exactly the member names of claimNames, decoded into claims. Every
// failure is an *Error with code.
func parseJWS(token, typ, code string, claims any, claimNames []string) (*JWS, error) {
	j, err := splitCompact(token)
	if errors.Is(err, errTooLarge) {
		return nil, fail(code, ReasonTooLarge, "token is %d bytes, more than %d", len(token), MaxTokenSize)
	}
	if err != nil {
		return nil, fail(code, ReasonMalformed, "%v", err)
	}
	if err := decodeObject(j.HeaderJSON, &j.Header, "alg", "kid", "typ"); err != nil {
		return nil, fail(code, ReasonMalformed, "header: %v", err)
	}
	if j.Header.Alg != AlgEd25519 && j.Header.Alg != AlgEdDSA {
		return nil, fail(code, ReasonBadAlg, "alg %q is not accepted (want %s)", j.Header.Alg, AlgEd25519)
	}
	if j.Header.Typ != typ {
		return nil, fail(code, ReasonBadTyp, "typ %q, want %q", j.Header.Typ, typ)
	}
	if !validID(j.Header.Kid) || !strings.HasPrefix(j.Header.Kid, KeyIDPrefix) {
		return nil, fail(code, ReasonMalformed, "kid %q is not an SDK key id", j.Header.Kid)
	}
	if err := decodeObject(j.PayloadJSON, claims, claimNames...); err != nil {
		return nil, fail(code, ReasonMalformed, "claims: %v", err)
	}
	return j, nil
}

// signJWS checks that kid is the id of priv's public key, then signs claims
// (a struct whose JSON member order is fixed) under the xpromo header.
func signJWS(priv ed25519.PrivateKey, kid, typ string, claims any) (string, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("attribution: private key is %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	if want := KeyID(priv.Public().(ed25519.PublicKey)); kid != want {
		return "", fmt.Errorf("attribution: kid %q is not the id of the signing key (%s)", kid, want)
	}
	h, err := json.Marshal(Header{Alg: AlgEd25519, Kid: kid, Typ: typ})
	if err != nil {
		return "", err
	}
	p, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	tok := signCompact(priv, h, p)
	if len(tok) > MaxTokenSize {
		return "", fmt.Errorf("attribution: token would be %d bytes, more than %d", len(tok), MaxTokenSize)
	}
	return tok, nil
}

// decodeObject decodes data, which must be one JSON object whose member names
// are exactly names (each once, case-sensitive), into dst. It refuses invalid
// UTF-8, other JSON values, trailing data, and duplicate member names at any
// depth: the signature covers the exact bytes, but two parsers that resolve
// a duplicate differently would read different claims from one token.
func decodeObject(data []byte, dst any, names ...string) error {
	if decodeFlat(data, dst, names) {
		return nil
	}
	// dst starts again from its zero value (every caller passes a zero
	// one), so nothing the one pass set can leak into it.
	if v := reflect.ValueOf(dst); v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().SetZero()
	}
	return decodeObjectWalk(data, dst, names...)
}

// decodeObjectWalk is decodeObject's token walk, then json.Unmarshal: the
// reference decodeFlat is fuzzed against, and the one that words refusals.
func decodeObjectWalk(data []byte, dst any, names ...string) error {
	if !utf8.Valid(data) {
		return errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	seen := make(map[string]bool, len(names))
	values := 0
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := k.(string)
		if seen[key] {
			return fmt.Errorf("duplicate member %q", key)
		}
		seen[key] = true
		known := false
		for _, n := range names {
			known = known || n == key
		}
		if !known {
			return fmt.Errorf("unknown member %q", key)
		}
		if err := skipValue(dec, 2, &values); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	for _, n := range names {
		if !seen[n] {
			return fmt.Errorf("missing member %q", n)
		}
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return err
	}
	return nil
}

// Bounds of the token walk (MaxTokenSize bounds the bytes): claims are
// flat, so a member nested deeper, or more values than any message has,
// is refused before the walk recurses or allocates further.
const (
	maxJSONDepth  = 4
	maxJSONValues = 256
)

// skipValue consumes one JSON value at depth (the claims object is 1) from
// dec, refusing duplicate member names in any object inside it, and values
// nested deeper than maxJSONDepth or more than maxJSONValues in all
// (*values counts them).
func skipValue(dec *json.Decoder, depth int, values *int) error {
	if *values++; *values > maxJSONValues {
		return fmt.Errorf("more than %d JSON values", maxJSONValues)
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == json.Delim('{') || tok == json.Delim('[') {
		if depth > maxJSONDepth {
			return fmt.Errorf("JSON nested deeper than %d levels", maxJSONDepth)
		}
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			if seen[key] {
				return fmt.Errorf("duplicate member %q", key)
			}
			seen[key] = true
			if err := skipValue(dec, depth+1, values); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		for dec.More() {
			if err := skipValue(dec, depth+1, values); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}
