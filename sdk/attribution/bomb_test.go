package attribution

import (
	"crypto/rand"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// allocated is the bytes f allocates (TotalAlloc around it, after a GC): an
// upper bound on how far the heap grew.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A token is at most MaxTokenSize bytes, and its claims' JSON is walked
// within maxJSONDepth and maxJSONValues: each bomb class in the payload of a
// click, fill or install token is refused as malformed (a huge one as too
// large) before any signature is checked, and parsing it allocates under
// 256 KiB. The server's claims (server/attribution) parse tokens with these
// functions.
func TestTokenBombs(t *testing.T) {
	kp, err := GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sig := b64(make([]byte, 64))
	token := func(typ, payload string) string {
		return b64([]byte(`{"alg":"Ed25519","kid":"`+kp.ID+`","typ":"`+typ+`"}`)) + "." + b64([]byte(payload)) + "." + sig
	}
	payloads := map[string]string{
		"deep":     `{"v":` + strings.Repeat("[", 1300) + strings.Repeat("]", 1300) + `}`,
		"wide":     `{"v":[` + strings.Repeat("0,", 1300) + `0]}`,
		"long key": `{"` + strings.Repeat("k", 2700) + `":1}`,
		"huge":     `{"v":"` + strings.Repeat("x", MaxTokenSize) + `"}`,
	}
	parsers := map[string]struct {
		typ   string
		parse func(string) error
	}{
		"click":   {TypClick, func(s string) error { _, err := ParseClick(s); return err }},
		"fill":    {TypFill, func(s string) error { _, err := ParseFill(s); return err }},
		"install": {TypInstall, func(s string) error { _, err := ParseInstall(s); return err }},
	}
	for name, p := range parsers {
		for class, payload := range payloads {
			tok := token(p.typ, payload)
			if class != "huge" && len(tok) > MaxTokenSize {
				t.Fatalf("%s bomb is %d bytes: make it fit a token", class, len(tok))
			}
			var err error
			if n := allocated(func() { err = p.parse(tok) }); n > 256<<10 {
				t.Errorf("%s %s: allocated %d bytes", name, class, n)
			}
			want := ReasonMalformed
			if class == "huge" {
				want = ReasonTooLarge
			}
			var e *Error
			if !errors.As(err, &e) || e.Reason != want {
				t.Errorf("%s %s: %v, want %s", name, class, err, want)
			}
		}
	}
	// The walk's own bounds, on a member the claims name.
	for class, v := range map[string]string{"deep": strings.Repeat("[", 5) + strings.Repeat("]", 5), "wide": "[" + strings.Repeat("0,", 300) + "0]"} {
		var claims struct {
			V any `json:"v"`
		}
		if err := decodeObjectWalk([]byte(`{"v":`+v+`}`), &claims, "v"); err == nil || !strings.Contains(err.Error(), "JSON") {
			t.Errorf("%s member: %v", class, err)
		}
	}
}
