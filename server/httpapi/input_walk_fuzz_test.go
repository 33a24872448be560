package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/openapi"
	"github.com/xpromo/xpromo/server/textcheck"
)

// FuzzCheckJSON is the differential test of the policy walk (checkJSON):
// on any body jsonbound accepts, it refuses exactly as the walk it replaced
// (refWalk below: the same rules, building every value's path as it went,
// which cost the square of the depth; issue 29), with the same code, field
// and message. Bodies jsonbound refuses never reach it.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `"x"`, `{"a":1,"a":2}`, `{"a":{"b":[1,{"c":1,"c":2}]}}`,
		`{"name":"\u202e","categories":["games",""]}`, `{"app_id":"` + strings.Repeat("x", 200) + `"}`,
		`[[["\u0000"]]]`, `{"a":[{"b":"\u200b"}]}`, `{"categories":["a","b","c","d","e","f","g","h","i","j","k"]}`,
		`{"a":`, `{"a" 1}`, `[1,]`, `{"\u0000":1}`, `{"a\"b":{"a\"b":1,"a\"b":2}}`,
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	ops, err := openapi.Operations()
	if err != nil {
		f.Fatal(err)
	}
	var schemas []*openapi.Schema
	for _, op := range ops {
		if op.Body != nil {
			schemas = append(schemas, op.Body)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, which uint8) {
		if checkBound(raw) != nil {
			return
		}
		var schema *openapi.Schema // nil: characters only
		if which > 0 {
			schema = schemas[int(which)%len(schemas)]
		}
		hard, soft := checkJSON(raw, schema)
		wantHard, wantSoft := refCheckJSON(raw, schema)
		if describe(hard) != describe(wantHard) || describe(soft) != describe(wantSoft) {
			t.Fatalf("%q:\n got  %s / %s\n want %s / %s", raw, describe(hard), describe(soft), describe(wantHard), describe(wantSoft))
		}
	})
}

func describe(err error) string {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code + " " + strconv.Quote(e.Field) + " " + e.Message
	}
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// refCheckJSON is checkJSON as it was before issue 29, kept as the oracle.
func refCheckJSON(raw []byte, schema *openapi.Schema) (hard, soft error) {
	if !utf8.Valid(raw) {
		return apperr.New(apperr.InvalidEncoding, "the body is not valid UTF-8"), nil
	}
	if loneSurrogate(raw) {
		return apperr.New(apperr.InvalidEncoding, `the body escapes half of a UTF-16 surrogate pair (such as \ud800 alone); escape a character outside the BMP as a full pair, or send it as UTF-8`), nil
	}
	w := refWalker{dec: json.NewDecoder(bytes.NewReader(raw))}
	w.dec.UseNumber()
	if err := w.value(schema, ""); err != nil && !errors.Is(err, errSyntax) {
		return err, nil
	}
	return nil, w.soft
}

type refWalker struct {
	dec  *json.Decoder
	soft error
}

func (w *refWalker) value(s *openapi.Schema, path string) error {
	tok, err := w.dec.Token()
	if err != nil {
		return errSyntax
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return w.object(s, path)
		}
		if t == '[' {
			return w.array(s, path)
		}
		return errSyntax
	case string:
		return w.str(s, path, t)
	}
	return nil
}

func (w *refWalker) object(s *openapi.Schema, path string) error {
	rules := s.Rules("object")
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return errSyntax
		}
		key, ok := tok.(string)
		if !ok {
			return errSyntax
		}
		field := key
		if path != "" {
			field = path + "." + key
		}
		if !textcheck.Encoded(key) {
			return apperr.New(apperr.InvalidEncoding, "a field name holds a NUL")
		}
		if seen[key] {
			return fieldErr(apperr.DuplicateField, field, "field %q appears twice in one object; send each field once", field)
		}
		seen[key] = true
		var prop *openapi.Schema
		for _, r := range rules {
			if p := r.Properties[key]; p != nil {
				prop = p
				break
			}
		}
		if err := w.value(prop, field); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil {
		return errSyntax
	}
	return nil
}

func (w *refWalker) array(s *openapi.Schema, path string) error {
	rules := s.Rules("array")
	var items *openapi.Schema
	for _, r := range rules {
		if r.Items != nil {
			items = r.Items
			break
		}
	}
	n := 0
	for ; w.dec.More(); n++ {
		if err := w.value(items, path+"["+strconv.Itoa(n)+"]"); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil {
		return errSyntax
	}
	for _, r := range rules {
		if r.MaxItems != nil && n > *r.MaxItems {
			w.fail(rules, apperr.TooLong, path, "%s has %d items; at most %d are allowed", path, n, *r.MaxItems)
		}
	}
	return nil
}

func (w *refWalker) str(s *openapi.Schema, path, v string) error {
	if !textcheck.Encoded(v) {
		return fieldErr(apperr.InvalidEncoding, path, "%s holds a NUL (\\u0000)", label(path))
	}
	rules := s.Rules("string")
	if r, ok := textcheck.FirstHidden(v); ok {
		w.fail(rules, apperr.InvalidCharacters, path, "%s holds the character %U; control and invisible formatting characters are not allowed", label(path), r)
	}
	for _, r := range rules {
		if r.MaxLength != nil && utf8.RuneCountInString(v) > *r.MaxLength {
			w.fail(rules, apperr.TooLong, path, "%s is longer than %d characters", label(path), *r.MaxLength)
		}
		if !r.MatchString(v) {
			w.fail(rules, apperr.InvalidType, path, "%s must match %s", label(path), r.Pattern)
		}
	}
	return nil
}

func (w *refWalker) fail(rules []*openapi.Schema, code, path, format string, args ...any) {
	if w.soft != nil {
		return
	}
	for _, r := range rules {
		if r.ErrorCode != "" {
			code = r.ErrorCode
			break
		}
	}
	w.soft = fieldErr(code, path, format, args...)
}
