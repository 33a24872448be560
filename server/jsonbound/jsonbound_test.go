package jsonbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckCounts(t *testing.T) {
	for _, tc := range []struct {
		text         string
		depth, items int // the smallest MaxDepth and MaxValues that accept it
	}{
		{`1`, 0, 0},
		{`"a[{,"`, 0, 0}, // brackets in a string are text
		{`[]`, 1, 1},
		{`{}`, 1, 1},
		{`[1]`, 1, 2},
		{`[1, 2 ,3]`, 1, 4},
		{`{"a":[1,2]}`, 2, 4 + 1},
		{`[[[]]]`, 3, 5},
		{`[[], {}]`, 2, 5},
		{`{"a\"[":{"b":"}"}}`, 2, 4},
		{` [ "x" , [ ] ] `, 2, 4},
	} {
		if err := Check([]byte(tc.text), Limits{MaxDepth: tc.depth, MaxValues: tc.items}); err != nil && tc.depth > 0 {
			t.Errorf("%s: refused at its own limits: %v", tc.text, err)
		}
		if tc.depth > 1 { // a zero limit is none
			var e *Error
			if err := Check([]byte(tc.text), Limits{MaxDepth: tc.depth - 1}); !errors.As(err, &e) || e.Kind != TooDeep {
				t.Errorf("%s: MaxDepth %d: got %v, want too deep", tc.text, tc.depth-1, err)
			}
		}
		if tc.items > 1 {
			var e *Error
			if err := Check([]byte(tc.text), Limits{MaxValues: tc.items - 1}); !errors.As(err, &e) || e.Kind != TooWide {
				t.Errorf("%s: MaxValues %d: got %v, want too many values", tc.text, tc.items-1, err)
			}
		}
	}
}

func TestCheckKeys(t *testing.T) {
	long := `{"` + strings.Repeat("k", 300) + `":1}`
	var e *Error
	if err := Check([]byte(long), Request); !errors.As(err, &e) || e.Kind != KeyTooLong {
		t.Fatalf("a 300-byte key: got %v", err)
	}
	// A long string value is not a key.
	if err := Check([]byte(`{"k":"`+strings.Repeat("v", 300)+`"}`), Request); err != nil {
		t.Fatalf("a long value: %v", err)
	}
	if err := Check([]byte(`["`+strings.Repeat("v", 300)+`"]`), Request); err != nil {
		t.Fatalf("a long item: %v", err)
	}
}

// The bomb of issue 29: 50,000 [ then 50,000 ]. Refused at the 33rd byte.
func TestCheckDepthBomb(t *testing.T) {
	bomb := strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000)
	var e *Error
	if err := Check([]byte(bomb), Request); !errors.As(err, &e) || e.Kind != TooDeep || e.Offset != Request.MaxDepth {
		t.Fatalf("got %v", err)
	}
	wide := "[" + strings.Repeat("0,", 20_000) + "0]"
	if err := Check([]byte(wide), Request); !errors.As(err, &e) || e.Kind != TooWide {
		t.Fatalf("width bomb: got %v", err)
	}
}

func TestCheckAllocatesNothing(t *testing.T) {
	raw := []byte(`{"a":[1,2,{"b":"c\"d"}],"e":{"f":null}}`)
	if n := testing.AllocsPerRun(100, func() { _ = Check(raw, Request) }); n != 0 {
		t.Fatalf("Check allocates %v times", n)
	}
}

func TestRead(t *testing.T) {
	var tl *ErrTooLarge
	if _, err := Read(strings.NewReader(`{"a":1}`), 6, Answer); !errors.As(err, &tl) {
		t.Fatalf("7 bytes under a 6-byte limit: %v", err)
	}
	raw, err := Read(strings.NewReader(`{"a":1}`), 7, Answer)
	if err != nil || string(raw) != `{"a":1}` {
		t.Fatalf("got %q, %v", raw, err)
	}
}

// FuzzCheck: on valid JSON, Check refuses a text exactly when its decoded
// value breaks the limit it names, so the limits mean what they say.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`[]`, `{"a":[1,{"b":[]}]}`, `"x"`, `[[[[1]]],2]`, `{"a\\":"]"}`, `[`, `]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := Check(raw, Limits{MaxDepth: 8, MaxValues: 50, MaxKeyBytes: 16})
		if !json.Valid(raw) {
			return
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		if dec.Decode(&v) != nil {
			return
		}
		depth, values, key := measure(v)
		var e *Error
		switch {
		case err == nil:
			// A decoded key is never longer than its raw text, except
			// that encoding/json turns each byte of invalid UTF-8 into
			// U+FFFD (three bytes); the limit is on the raw text.
			if depth > 8 || values > 50 || (key > 16 && utf8.Valid(raw)) {
				t.Fatalf("%q: depth %d values %d key %d accepted", raw, depth, values, key)
			}
		case !errors.As(err, &e):
			t.Fatalf("%q: %v", raw, err)
		case e.Kind == TooDeep && depth <= 8, e.Kind == TooWide && values <= 50:
			t.Fatalf("%q: depth %d values %d: Check says %v", raw, depth, values, err)
		}
	})
}

func measure(v any) (depth, values, key int) {
	switch x := v.(type) {
	case []any:
		depth, values = 1, 1+len(x)
		for _, it := range x {
			d, n, k := measure(it)
			depth, values, key = max(depth, d+1), values+n, max(key, k)
		}
	case map[string]any:
		depth, values = 1, 1+len(x)
		for name, it := range x {
			d, n, k := measure(it)
			depth, values, key = max(depth, d+1), values+n, max(key, k, len(name))
		}
	}
	return depth, values, key
}
