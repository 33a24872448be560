package attribution

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"
)

// decodeFlat is decodeObject's one pass for what tokens of this package
// hold: one object of strings and integers, member names and strings without
// escapes. It answers only "decoded, exactly as decodeObject would have" or
// "not sure" (false), when decodeObject's token walk and json.Unmarshal run
// and word the refusal; FuzzDecodeFlat compares the two.
func decodeFlat(data []byte, dst any, names []string) bool {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || len(names) > 64 || !utf8.Valid(data) {
		return false
	}
	plan := flatPlanOf(v.Type().Elem())
	if plan == nil {
		return false
	}
	v = v.Elem()
	d := flatDecoder{b: data}
	d.space()
	if !d.byte('{') {
		return false
	}
	var seen uint64
	d.space()
	if !d.byte('}') {
		for {
			d.space()
			key, ok := d.str()
			if !ok {
				return false
			}
			idx := -1
			for i, n := range names {
				if n == string(key) {
					idx = i
					break
				}
			}
			path, known := plan[string(key)]
			if idx < 0 || !known || seen&(1<<idx) != 0 {
				return false
			}
			seen |= 1 << idx
			d.space()
			if !d.byte(':') {
				return false
			}
			d.space()
			f := v.FieldByIndex(path)
			if f.Kind() == reflect.String {
				s, ok := d.str()
				if !ok {
					return false
				}
				f.SetString(string(s))
			} else {
				n, ok := d.integer()
				if !ok {
					return false
				}
				f.SetInt(n)
			}
			d.space()
			if d.byte('}') {
				break
			}
			if !d.byte(',') {
				return false
			}
		}
	}
	d.space()
	return d.i == len(d.b) && seen == 1<<len(names)-1
}

// flatPlans caches, per type, its JSON member names → field index path, or
// nil when the type is not a struct of plain string and int64 fields (and of
// embedded structs of such fields, promoted as encoding/json promotes them:
// a click's claims embed its Offer).
var flatPlans sync.Map

func flatPlanOf(t reflect.Type) map[string][]int {
	if p, ok := flatPlans.Load(t); ok {
		return p.(map[string][]int)
	}
	plan := map[string][]int{}
	if !buildFlatPlan(t, nil, plan) {
		plan = nil
	}
	flatPlans.Store(t, plan)
	return plan
}

// buildFlatPlan adds t's members to plan, their paths under prefix; false
// when t is not such a struct. Anything encoding/json would resolve by its
// finer rules (a tagged or pointer embedding, a name twice, a type with its
// own unmarshalling) is refused, and the token walk decodes it.
func buildFlatPlan(t reflect.Type, prefix []int, plan map[string][]int) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(reflect.TypeFor[json.Unmarshaler]()) || pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("json")
		path := append(append([]int(nil), prefix...), i)
		if f.Anonymous && name == "" && f.IsExported() && f.Type.Kind() == reflect.Struct {
			if !buildFlatPlan(f.Type, path, plan) {
				return false
			}
			continue
		}
		pt := reflect.PointerTo(f.Type)
		switch {
		case !f.IsExported() || f.Anonymous || name == "" || name == "-",
			pt.Implements(reflect.TypeFor[json.Unmarshaler]()), pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()),
			f.Type.Kind() != reflect.String && f.Type.Kind() != reflect.Int64:
			return false // a tag option (,string …) also lands here: name holds a comma
		}
		for _, c := range name {
			if c == ',' {
				return false
			}
		}
		if _, twice := plan[name]; twice {
			return false
		}
		plan[name] = path
	}
	return true
}

type flatDecoder struct {
	b []byte
	i int
}

func (d *flatDecoder) space() {
	for d.i < len(d.b) && (d.b[d.i] == ' ' || d.b[d.i] == '\t' || d.b[d.i] == '\n' || d.b[d.i] == '\r') {
		d.i++
	}
}

func (d *flatDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a string without escapes or control characters.
func (d *flatDecoder) str() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	for j := d.i; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			s := d.b[d.i:j]
			d.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// integer reads an integer literal: no fraction, no exponent, no leading
// zero, within int64.
func (d *flatDecoder) integer() (int64, bool) {
	start := d.i
	d.byte('-')
	digits := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	if d.i == digits || (d.b[digits] == '0' && d.i-digits > 1) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	return n, err == nil
}
