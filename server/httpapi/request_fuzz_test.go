package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
)

// FuzzDecodeJSON: whatever the body, decoding never panics, a refusal is
// always an *apperr.Error with a catalogued 4xx code (never a 500), and an
// accepted body is valid UTF-8, names no field twice in one object, and
// holds no NUL and no lone surrogate escape (encoding/json alone would
// accept all four).
func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []string{
		`{"name":"A","platform":"mac","bundle_id":"a.b","domain":"a.com","download_url":"https://a.com/a.dmg","contact_email":"a@a.com"}`,
		`{"name":1}`, `{"nope":true}`, `{`, ``, `[]`, `null`, `{"name":"a"} {}`, `{"name":"\u0000"}`,
		`{"platform":["mac"]}`, strings.Repeat(`{"a":`, 100),
		`{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `[{"a":1},{"a":1,"a":1}]`, `{"a":1,"\u0061":2}`,
		`{"a":"\ud800"}`, `{"a":"\udc00"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\ud83dx"}`, `{"a":"\\ud800"}`,
		"{\"a\":\"\xff\"}", `{"a":"\u202e"}`, `{"a":"\ufffd"}`, "{\"a\":\"\xef\xbf\xbd\"}",
	} {
		f.Add(seed, "application/json")
	}
	f.Add(`{}`, "text/plain")
	f.Add(`{}`, "application/json; charset=utf-8")
	f.Fuzz(func(t *testing.T, body, contentType string) {
		for _, dst := range []any{new(xpromo.RegisterAppRequest), new(any)} {
			r := httptest.NewRequest("POST", "/v1/apps", strings.NewReader(body))
			r.Header.Set("Content-Type", contentType)
			err := decodeJSON(httptest.NewRecorder(), r, dst)
			if err == nil {
				if v, ok := dst.(*any); ok {
					checkAccepted(t, body, *v)
				}
				continue
			}
			var e *apperr.Error
			if !errors.As(err, &e) {
				t.Fatalf("non-application error %T: %v", err, err)
			}
			if s := apperr.HTTPStatus(e); s < 400 || s > 499 || !apperr.Known(e.Code) {
				t.Fatalf("refusal %q with status %d", e.Code, s)
			}
		}
	})
}

// checkAccepted fails unless an accepted body keeps the input policy,
// checked independently of checkJSON: v is what it decoded to.
func checkAccepted(t *testing.T, body string, v any) {
	t.Helper()
	if !utf8.ValidString(body) {
		t.Fatalf("accepted a body that is not UTF-8: %q", body)
	}
	if err := duplicateKey(json.NewDecoder(strings.NewReader(body))); err != nil {
		t.Fatalf("accepted %q: %v", body, err)
	}
	// encoding/json decodes a lone surrogate to U+FFFD: every U+FFFD
	// decoded must have been sent, as the character or as \ufffd.
	decoded, nuls := 0, false
	var walk func(any)
	walk = func(x any) {
		switch y := x.(type) {
		case string:
			decoded += strings.Count(y, "\ufffd")
			nuls = nuls || strings.ContainsRune(y, 0)
		case []any:
			for _, e := range y {
				walk(e)
			}
		case map[string]any:
			for k, e := range y {
				walk(k)
				walk(e)
			}
		}
	}
	walk(v)
	if nuls {
		t.Fatalf("accepted a NUL: %q", body)
	}
	if sent := strings.Count(body, "\ufffd") + strings.Count(strings.ToLower(body), `\ufffd`); decoded > sent {
		t.Fatalf("accepted a lone surrogate (decoded %d U+FFFD, %d sent): %q", decoded, sent, body)
	}
}

// duplicateKey walks a JSON text and reports the first object that names
// a field twice.
func duplicateKey(dec *json.Decoder) error {
	var value func() error
	value = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				if seen[k.(string)] {
					return fmt.Errorf("field %q twice", k)
				}
				seen[k.(string)] = true
				if err := value(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := value(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	return value()
}

func FuzzBearer(f *testing.F) {
	for _, s := range []string{"Bearer xp_test_abc", "bearer  x ", "Basic abc", "Bearer", "", "Bearer \t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		key, ok := bearer(header)
		if ok && (key == "" || strings.TrimSpace(key) != key) {
			t.Fatalf("accepted %q as key %q", header, key)
		}
	})
}

func TestDecodeJSONCodes(t *testing.T) {
	cases := []struct{ body, contentType, code string }{
		{`{"name":"x"}`, "text/plain", apperr.UnsupportedMediaType},
		{`{"name":"x","extra":1}`, "application/json", apperr.UnknownField},
		{`{"name":5}`, "application/json", apperr.InvalidType},
		{`{"name":`, "application/json", apperr.MalformedJSON},
		{``, "application/json", apperr.MalformedJSON},
		{`{"name":"x"} {"name":"y"}`, "application/json", apperr.MalformedJSON},
		{`{"name":"` + strings.Repeat("a", MaxBodyBytes) + `"}`, "application/json", apperr.BodyTooLarge},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		r.Header.Set("Content-Type", c.contentType)
		var dst xpromo.RegisterAppRequest
		if got := apperr.Code(decodeJSON(httptest.NewRecorder(), r, &dst)); got != c.code {
			t.Errorf("body %.40q (%s): code %s, want %s", c.body, c.contentType, got, c.code)
		}
	}
}
