package attribution

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Seeds: valid messages of every kind, and damaged variants.
func fuzzSeeds(f *testing.F) {
	c, in := installAt(f, time.Minute)
	_, hb := testHeartbeat(f, 1, t0)
	fill := testFill(f, testFillClaims(t0))
	for _, tok := range []string{c.Raw, in, hb, fill} {
		h, p, s := segments(tok)
		f.Add(tok)
		f.Add(h + "." + p + ".")
		f.Add(h + "." + p + "." + s + "=")
		f.Add(strings.ToUpper(tok))
		f.Add(tok[:len(tok)/2])
		f.Add(b64([]byte(`{"alg":"none","kid":"sk_x","typ":"xpromo-click+jwt"}`)) + "." + p + "." + s)
	}
	eddsa := resign(pubKeys.Private, header(AlgEdDSA, pubKeys.ID, TypClick), string(c.PayloadJSON))
	f.Add(eddsa)
	f.Add(resign(pubKeys.Private, header(AlgEd25519, pubKeys.ID, TypClick), `{"jti":1,"jti":2}`))
	f.Add(resign(pubKeys.Private, header(AlgEd25519, pubKeys.ID, TypClick), `{"jti":`+strings.Repeat("[", 20)+strings.Repeat("]", 20)+`}`)) // beyond maxJSONDepth
	f.Add(resign(advKeys.Private, header(AlgEd25519, advKeys.ID, TypInstall), `{"th":"","dev":[{"a":1,"a":2}],"cat":1,"app":"x"}`))
	f.Add("")
	f.Add("..")
	f.Add("a.b.c")
}

// checkAccepted asserts the properties of every accepted message: it
// re-serializes to the exact token, its claims are valid and survive a JSON
// round trip, and verification runs (with any result) without panicking.
func checkAccepted(t *testing.T, token string, j *JWS, claims any, validate func() error, verify func() error) {
	t.Helper()
	if got := j.Encode(); got != token {
		t.Fatalf("accepted token re-serializes differently:\n got %q\nwant %q", got, token)
	}
	if err := validate(); err != nil {
		t.Fatalf("accepted invalid claims: %v", err)
	}
	if j.Header.Alg != AlgEd25519 && j.Header.Alg != AlgEdDSA {
		t.Fatalf("accepted alg %q", j.Header.Alg)
	}
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	back := reflect.New(reflect.TypeOf(claims).Elem())
	if err := json.Unmarshal(b, back.Interface()); err != nil || !reflect.DeepEqual(back.Interface(), claims) {
		t.Fatalf("claims do not survive a JSON round trip: %v", err)
	}
	if err := verify(); err != nil && Code(err) == "" {
		t.Fatalf("verification error without a code: %v", err)
	}
}

// failsWithCode asserts a refusal is an *Error with the message's code.
func failsWithCode(t *testing.T, err error, code string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code || e.Reason == "" {
		t.Fatalf("refusal %v is not an *Error with code %s", err, code)
	}
}

func FuzzParseClick(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, token string) {
		c, err := ParseClick(token)
		if err != nil {
			failsWithCode(t, err, CodeBadSignature)
			return
		}
		checkAccepted(t, token, &c.JWS, &c.Claims, c.Claims.validate, func() error {
			if err := c.Verify(pubKeys.Public); err != nil {
				return err
			}
			return c.CheckTime(t0, DefaultClockSkew)
		})
	})
}

func FuzzParseInstall(f *testing.F) {
	fuzzSeeds(f)
	click, _ := clickAt(f, time.Minute)
	c, err := ParseClick(click)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		in, err := ParseInstall(token)
		if err != nil {
			failsWithCode(t, err, CodeBadCountersignature)
			return
		}
		checkAccepted(t, token, &in.JWS, &in.Claims, in.Claims.validate, func() error {
			if err := in.Verify(advKeys.Public, c); err != nil {
				return err
			}
			return in.CheckTime(c, t0, DefaultClockSkew)
		})
	})
}

func FuzzParseHeartbeat(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, token string) {
		h, err := ParseHeartbeat(token)
		if err != nil {
			failsWithCode(t, err, CodeBadSignature)
			return
		}
		checkAccepted(t, token, &h.JWS, &h.Claims, h.Claims.validate, func() error {
			if err := h.Verify(advKeys.Public); err != nil {
				return err
			}
			return h.CheckTime(t0, DefaultClockSkew)
		})
	})
}

func FuzzParseFill(f *testing.F) {
	fuzzSeeds(f)
	f.Add(resign(pubKeys.Private, header(AlgEd25519, pubKeys.ID, TypFill), `{"app":"a","slot":"s","platform":"mac","dev":"","loc":"","iat":1,"iat":2}`))
	f.Fuzz(func(t *testing.T, token string) {
		fl, err := ParseFill(token)
		if err != nil {
			failsWithCode(t, err, CodeBadSignature)
			return
		}
		checkAccepted(t, token, &fl.JWS, &fl.Claims, fl.Claims.validate, func() error {
			if err := fl.Verify(pubKeys.Public); err != nil {
				return err
			}
			if err := fl.Covers(testFillClaims(t0)); err != nil {
				return err
			}
			return fl.CheckTime(t0, DefaultClockSkew)
		})
	})
}

// FuzzClickPayload signs arbitrary claim bytes properly, so the fuzzer
// explores the JSON strictness of the claims rather than base64 and
// signatures: whatever is accepted verifies, has exactly the documented
// members once each, and reads the same through a plain JSON decoder.
func FuzzClickPayload(f *testing.F) {
	tok, _ := clickAt(f, time.Minute)
	c, err := ParseClick(tok)
	if err != nil {
		f.Fatal(err)
	}
	p := string(c.PayloadJSON)
	f.Add(p)
	f.Add(strings.Replace(p, `"price_cents":140`, `"price_cents":140,"price_cents":1`, 1))
	f.Add(strings.Replace(p, `"iss"`, `"ISS"`, 1))
	f.Add(strings.Replace(p, `"category":"productivity"`, `"category":"\u0070roductivity"`, 1))
	f.Add(" " + p + " ")
	f.Add(`{}`)
	hdr := header(AlgEd25519, pubKeys.ID, TypClick)
	f.Fuzz(func(t *testing.T, payload string) {
		token := resign(pubKeys.Private, hdr, payload)
		c, err := ParseClick(token)
		if err != nil {
			if len(token) <= MaxTokenSize {
				failsWithCode(t, err, CodeBadSignature)
				if r := ReasonOf(err); r != ReasonMalformed {
					t.Fatalf("well-signed payload refused for %s: %v", r, err)
				}
			}
			return
		}
		if err := c.Verify(pubKeys.Public); err != nil {
			t.Fatalf("accepted well-signed token does not verify: %v", err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(payload), &m); err != nil {
			t.Fatalf("accepted payload a plain decoder refuses: %v", err)
		}
		if len(m) != len(clickClaimNames) {
			t.Fatalf("accepted payload with %d members", len(m))
		}
		for _, n := range clickClaimNames {
			if _, ok := m[n]; !ok {
				t.Fatalf("accepted payload without %q", n)
			}
		}
		var plain ClickClaims
		if err := json.Unmarshal([]byte(payload), &plain); err != nil || plain != c.Claims {
			t.Fatalf("plain decoding reads %+v, parser %+v (%v)", plain, c.Claims, err)
		}
	})
}
