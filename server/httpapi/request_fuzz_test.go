package httpapi

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
)

// FuzzDecodeJSON: whatever the body, decoding never panics, and a refusal is
// always an *apperr.Error with a catalogued 4xx code (never a 500).
func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []string{
		`{"name":"A","platform":"mac","bundle_id":"a.b","domain":"a.com","download_url":"https://a.com/a.dmg","contact_email":"a@a.com"}`,
		`{"name":1}`, `{"nope":true}`, `{`, ``, `[]`, `null`, `{"name":"a"} {}`, `{"name":"\u0000"}`,
		`{"platform":["mac"]}`, strings.Repeat(`{"a":`, 100),
	} {
		f.Add(seed, "application/json")
	}
	f.Add(`{}`, "text/plain")
	f.Add(`{}`, "application/json; charset=utf-8")
	f.Fuzz(func(t *testing.T, body, contentType string) {
		r := httptest.NewRequest("POST", "/v1/apps", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		var dst xpromo.RegisterAppRequest
		err := decodeJSON(httptest.NewRecorder(), r, &dst)
		if err == nil {
			return
		}
		var e *apperr.Error
		if !errors.As(err, &e) {
			t.Fatalf("non-application error %T: %v", err, err)
		}
		if s := apperr.HTTPStatus(e); s < 400 || s > 499 || !apperr.Known(e.Code) {
			t.Fatalf("refusal %q with status %d", e.Code, s)
		}
	})
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
