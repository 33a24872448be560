package httpapi

import (
	"errors"
	"reflect"
	"testing"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/openapi"
)

// fastTestBody has the kinds decodeFast handles that the fill body does
// not: integers, booleans, slices, nested structs, pointers to them.
type fastTestBody struct {
	N     int64          `json:"n"`
	Small *int8          `json:"small"`
	OK    bool           `json:"ok"`
	Tags  []string       `json:"tags"`
	Inner *fastTestInner `json:"inner"`
	List  []fastTestInner
	plain string //nolint:unused // an unexported field is not a JSON name
}

type fastTestInner struct {
	Name string  `json:"name,omitempty"`
	Ref  *string `json:"ref"`
}

func bodySchema(t testing.TB, method, path string) *openapi.Schema {
	op := documented()[method+" "+path]
	if op == nil || op.Body == nil {
		t.Fatalf("%s %s has no documented body", method, path)
	}
	return op.Body
}

// FuzzDecodeFast is the differential test of the one-pass decoder: on any
// body, decodeBody (one pass, falling back to two) and decodeTwoPass (the
// policy walk, then encoding/json: the decoder as it was) accept and refuse
// the same bodies, with the same code, message and field, and decode an
// accepted body to the same value.
func FuzzDecodeFast(f *testing.F) {
	for _, seed := range []string{
		`{"app_id":"app_1","slot":"onboarding_complete","platform":"mac","device_id":"dev_1","locale":"en-US","signature":"a.b.c"}`,
		`{"app_id":"a\u00e9\n","slot":"\ud83d\ude00","platform":"\ud800","signature":"\/"}`,
		`{"app_id":"x","APP_ID":"y"}`, `{"app_id":"x","app_id":"y"}`, `{"app_id":1}`, `{"nope":1}`,
		`{"app_id":"` + "\u202e" + `"}`, `{"app_id":"\u0000"}`, ` {"slot":null} `, `{"slot":"a"} x`, `null`, `[]`, `{`,
		`{"name":"A","platform":"mac","bundle_id":"a.b","domain":"a.com","download_url":"https://a.com/a.dmg","contact_email":"a@a.com"}`,
		`{"n":-0,"small":127,"ok":true,"tags":["a","b"],"inner":{"name":"x","ref":null},"List":[{"ref":"r"}]}`,
		`{"n":1.0}`, `{"n":1e3}`, `{"small":128}`, `{"n":01}`, `{"tags":[]}`, `{"tags":null}`, `{"ok":tru}`,
		`{"inner":{"name":"a","name":"b"}}`, `{"list":[]}`, `{"plain":"x"}`, "{\"app_id\":\"\xff\"}", `{"app_id":"\u00"}`,
	} {
		f.Add(seed)
	}
	fill := bodySchema(f, "POST", "/v1/sdk/fill")
	apps := bodySchema(f, "POST", "/v1/apps")
	cases := []struct {
		schema *openapi.Schema
		dst    func() any
	}{
		{fill, func() any { return new(fillBody) }},
		{apps, func() any { return new(xpromo.RegisterAppRequest) }},
		{nil, func() any { return new(fastTestBody) }},
		{apps, func() any { return new(fastTestBody) }},
		{nil, func() any { return new(any) }},
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, c := range cases {
			want, got := c.dst(), c.dst()
			wantErr := decodeTwoPass([]byte(body), c.schema, want)
			gotErr := decodeBody([]byte(body), c.schema, got)
			if !sameRefusal(wantErr, gotErr) {
				t.Fatalf("%T %q: two passes %v, decodeBody %v", want, body, wantErr, gotErr)
			}
			if wantErr == nil && !reflect.DeepEqual(want, got) {
				t.Fatalf("%T %q: two passes decoded %+v, decodeBody %+v", want, body, want, got)
			}
		}
	})
}

func sameRefusal(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ea, eb *apperr.Error
	if !errors.As(a, &ea) || !errors.As(b, &eb) {
		return a.Error() == b.Error()
	}
	return ea.Code == eb.Code && ea.Message == eb.Message && ea.Field == eb.Field
}

// The fill path's usual body must take the one pass, or the optimisation
// is silently gone.
func TestDecodeFastTakesTheFillBody(t *testing.T) {
	var b fillBody
	body := `{"app_id":"app_1","slot":"onboarding_complete","platform":"mac","device_id":"dev_1","locale":"en-US","signature":"eyJh.eyJh.c2ln"}`
	if !decodeFast([]byte(body), bodySchema(t, "POST", "/v1/sdk/fill"), &b) {
		t.Fatal("decodeFast left the usual fill body to the two passes")
	}
	if *b.AppID != "app_1" || *b.Signature != "eyJh.eyJh.c2ln" || b.Locale != "en-US" {
		t.Fatalf("decoded %+v", b)
	}
}

func BenchmarkDecodeBody(b *testing.B) {
	schema := bodySchema(b, "POST", "/v1/sdk/fill")
	body := []byte(`{"app_id":"app_01HZX3K5Q8","slot":"onboarding_complete","platform":"mac","device_id":"dev_9f8e7d6c5b4a","locale":"en-US","signature":"eyJhbGciOiJFZDI1NTE5Iiwia2lkIjoic2RrXzAxSFpYM0s1UTgiLCJ0eXAiOiJ4cHJvbW8tZmlsbCtqd3QifQ.eyJhcHAiOiJhcHBfMDFIWlgzSzVROCIsInNsb3QiOiJvbmJvYXJkaW5nX2NvbXBsZXRlIiwicGxhdGZvcm0iOiJtYWMiLCJkZXYiOiJkZXZfOWY4ZTdkNmM1YjRhIiwibG9jIjoiZW4tVVMiLCJpYXQiOjE3NjQwMDAwMDB9.c2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJl"}`)
	for _, bc := range []struct {
		name   string
		decode func([]byte, *openapi.Schema, any) error
	}{{"one-pass", decodeBody}, {"two-pass", decodeTwoPass}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var v fillBody
				if err := bc.decode(body, schema, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
