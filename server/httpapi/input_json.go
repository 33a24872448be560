package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/openapi"
	"github.com/xpromo/xpromo/server/textcheck"
)

// checkJSON applies the input policy to a raw JSON body, before it is
// decoded. encoding/json is lenient where the policy is not: it replaces
// invalid UTF-8 and lone surrogate escapes (\ud800) with U+FFFD and keeps the
// last of two fields with the same name, so those are found on the raw text.
//
// hard is the first reason the body is refused whatever else is wrong with
// it: not UTF-8, a NUL, a lone surrogate (invalid_encoding), a field named
// twice in one object, at any depth (duplicate_field). soft is the first
// string or array that breaks a rule of schema (the operation's body in
// openapi.json; nil checks characters only): too long, not matching its
// pattern, holding a hidden character. It is reported only if the body
// otherwise decodes, so that unknown fields and wrong types are named first.
//
// A syntax error stops the walk with no error: the decoder that runs next
// describes it.
func checkJSON(raw []byte, schema *openapi.Schema) (hard, soft error) {
	if !utf8.Valid(raw) {
		return apperr.New(apperr.InvalidEncoding, "the body is not valid UTF-8"), nil
	}
	if loneSurrogate(raw) {
		return apperr.New(apperr.InvalidEncoding, `the body escapes half of a UTF-16 surrogate pair (such as \ud800 alone); escape a character outside the BMP as a full pair, or send it as UTF-8`), nil
	}
	w := jsonWalker{dec: json.NewDecoder(bytes.NewReader(raw))}
	w.dec.UseNumber()
	if err := w.value(schema); err != nil && !errors.Is(err, errSyntax) {
		return err, nil
	}
	return nil, w.soft
}

// errSyntax stops a walk at malformed JSON.
var errSyntax = errors.New("malformed JSON")

// jsonWalker walks a body that jsonbound.Check accepted (decodeBody runs it
// first), so its recursion is at most jsonbound.Request.MaxDepth deep and
// its steps at most MaxValues. The field path of the value under the walk
// is kept as a stack of segments and spelled out (path) only when a refusal
// names it: building it at every value, as this walk once did, cost time
// and memory in the square of the depth (issue 29).
type jsonWalker struct {
	dec  *json.Decoder
	soft error     // the first rule broken, if any
	at   []segment // the path of the value being walked
}

// segment is one step of a field path: an object's field, or an array's
// item (key == "" and index >= 0).
type segment struct {
	key   string
	index int
}

// path spells the current field path as the refusals name it:
// "a.b[2].c", "" for the body itself.
func (w *jsonWalker) path() string {
	var b strings.Builder
	for _, s := range w.at {
		if s.index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

func (w *jsonWalker) value(s *openapi.Schema) error {
	tok, err := w.dec.Token()
	if err != nil {
		return errSyntax
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return w.object(s)
		}
		if t == '[' {
			return w.array(s)
		}
		return errSyntax
	case string:
		return w.str(s, t)
	}
	return nil
}

func (w *jsonWalker) object(s *openapi.Schema) error {
	rules := rulesOf(s, "object")
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
		if !textcheck.Encoded(key) {
			return apperr.New(apperr.InvalidEncoding, "a field name holds a NUL")
		}
		w.at = append(w.at, segment{key: key, index: -1})
		if seen[key] {
			field := w.path()
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
		if err := w.value(prop); err != nil {
			return err
		}
		w.at = w.at[:len(w.at)-1]
	}
	if _, err := w.dec.Token(); err != nil {
		return errSyntax
	}
	return nil
}

func (w *jsonWalker) array(s *openapi.Schema) error {
	rules := rulesOf(s, "array")
	var items *openapi.Schema
	for _, r := range rules {
		if r.Items != nil {
			items = r.Items
			break
		}
	}
	n := 0
	for ; w.dec.More(); n++ {
		w.at = append(w.at, segment{index: n})
		if err := w.value(items); err != nil {
			return err
		}
		w.at = w.at[:len(w.at)-1]
	}
	if _, err := w.dec.Token(); err != nil {
		return errSyntax
	}
	for _, r := range rules {
		if r.MaxItems != nil && n > *r.MaxItems && w.soft == nil {
			path := w.path()
			w.fail(rules, apperr.TooLong, path, "%s has %d items; at most %d are allowed", path, n, *r.MaxItems)
		}
	}
	return nil
}

func (w *jsonWalker) str(s *openapi.Schema, v string) error {
	if !textcheck.Encoded(v) { // a \u0000 escape: UTF-8 was checked on the raw body
		path := w.path()
		return fieldErr(apperr.InvalidEncoding, path, "%s holds a NUL (\\u0000)", label(path))
	}
	if w.soft != nil {
		return nil // only the first broken rule is reported
	}
	rules := rulesOf(s, "string")
	if r, ok := textcheck.FirstHidden(v); ok {
		path := w.path()
		w.fail(rules, apperr.InvalidCharacters, path, "%s holds the character %U; control and invisible formatting characters are not allowed", label(path), r)
		return nil
	}
	for _, r := range rules {
		if r.MaxLength != nil && utf8.RuneCountInString(v) > *r.MaxLength {
			path := w.path()
			w.fail(rules, apperr.TooLong, path, "%s is longer than %d characters", label(path), *r.MaxLength)
			return nil
		}
		if !r.MatchString(v) {
			path := w.path()
			w.fail(rules, apperr.InvalidType, path, "%s must match %s", label(path), r.Pattern)
			return nil
		}
	}
	return nil
}

// fail records the first broken rule, under the field's own code when the
// document gives it one (x-error-code), else under code.
func (w *jsonWalker) fail(rules []*openapi.Schema, code, path, format string, args ...any) {
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

func label(path string) string {
	if path == "" {
		return "the body"
	}
	return strconv.Quote(path)
}

// loneSurrogate reports whether a JSON string in raw escapes half of a
// UTF-16 surrogate pair: a high surrogate (\ud800–\udbff) not followed by a
// low one (\udc00–\udfff), or a low one alone.
func loneSurrogate(raw []byte) bool {
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			r, ok := escapedUnit(raw, i)
			if !ok {
				i++ // a one-character escape (\" \\ \n …), or malformed
				continue
			}
			i += 5 // at the escape's last hex digit
			switch {
			case r >= 0xD800 && r <= 0xDBFF:
				low, ok := escapedUnit(raw, i+1)
				if !ok || low < 0xDC00 || low > 0xDFFF {
					return true
				}
				i += 6
			case r >= 0xDC00 && r <= 0xDFFF:
				return true
			}
		}
	}
	return false
}

// escapedUnit reads the \uXXXX escape starting at raw[i], if there is one.
func escapedUnit(raw []byte, i int) (rune, bool) {
	if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
	return rune(n), err == nil
}
