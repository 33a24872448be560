// Package jsonbound is the server's one limit on the structure of a JSON
// text it takes from outside: a request body, an MCP message, a token's
// payload, the answer of another service. It scans the raw bytes once,
// without recursion and without allocating, before any decoder or walker
// that recurses or builds paths runs, so that those only ever see a text
// whose depth, number of values and key lengths are bounded.
//
// The scan counts structure, it does not validate syntax: a text it accepts
// may still be malformed JSON, which the decoder that runs next reports. A
// text it refuses is refused whatever else is wrong with it.
//
// Like textcheck, it has no dependencies, so the HTTP edge, the MCP server
// and the clients of other services share it; each maps Error to its own
// answer (the HTTP edge: 400 json_too_deep, json_too_wide,
// json_key_too_long).
package jsonbound

import (
	"fmt"
	"io"
)

// Limits bounds a JSON text. A zero field means no limit of that kind.
type Limits struct {
	// MaxDepth is the deepest nesting of arrays and objects: `[]` is 1,
	// `{"a":[1]}` is 2.
	MaxDepth int
	// MaxValues is the most arrays, objects, array items and object
	// fields the text may hold in all (`{"a":[1,2]}` holds 4: the object,
	// the field a, the array, and one more item).
	MaxValues int
	// MaxKeyBytes is the longest object key, in raw bytes between its
	// quotes (escapes counted as written).
	MaxKeyBytes int
}

// Request is the limit on every request body the server parses (docs/limits.md):
// no operation's document is deeper than a few levels nor holds more than a
// few hundred values, so these leave a wide margin and still bound the work
// of any walk over an accepted body to a few thousand steps.
var Request = Limits{MaxDepth: 32, MaxValues: 10_000, MaxKeyBytes: 256}

// Answer is the limit on the JSON answers of other services (Stripe, the
// x402 facilitator, RDAP, the model endpoint, store ratings): deeper and
// wider than a request, since their documents are not ours.
var Answer = Limits{MaxDepth: 64, MaxValues: 200_000, MaxKeyBytes: 1024}

// Kind names the limit a text broke.
type Kind string

const (
	TooDeep    Kind = "depth"
	TooWide    Kind = "values"
	KeyTooLong Kind = "key"
)

// Error reports the first limit broken and where.
type Error struct {
	Kind   Kind
	Limit  int // the limit broken
	Offset int // byte offset in the text where it was broken
}

func (e *Error) Error() string {
	switch e.Kind {
	case TooDeep:
		return fmt.Sprintf("JSON nests deeper than %d levels (at byte %d)", e.Limit, e.Offset)
	case TooWide:
		return fmt.Sprintf("JSON holds more than %d values (arrays, objects, items and fields; at byte %d)", e.Limit, e.Offset)
	default:
		return fmt.Sprintf("JSON has an object key longer than %d bytes (at byte %d)", e.Limit, e.Offset)
	}
}

// Check scans raw once and returns the first limit of l it breaks as an
// *Error, or nil. Time is linear in len(raw), memory constant.
func Check(raw []byte, l Limits) error {
	depth, values := 0, 0
	inString, escaped := false, false
	strStart, keyLen := 0, -1 // keyLen: the length of the string just closed, -1 after any other token
	// opened: the last token opened a container, so the next one, unless it
	// closes it, is its first item (the others follow a comma).
	opened := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				keyLen = i - strStart
			}
			continue
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		if opened && c != ']' && c != '}' {
			values++ // the container's first item
		}
		opened = false
		switch c {
		case '"':
			inString, strStart = true, i+1 // keyLen is set when it closes
		case ':':
			if l.MaxKeyBytes > 0 && keyLen > l.MaxKeyBytes {
				return &Error{Kind: KeyTooLong, Limit: l.MaxKeyBytes, Offset: i}
			}
		case '[', '{':
			depth++
			if l.MaxDepth > 0 && depth > l.MaxDepth {
				return &Error{Kind: TooDeep, Limit: l.MaxDepth, Offset: i}
			}
			values++
			opened = true
		case ']', '}':
			depth--
		case ',':
			values++ // one more item or field
		}
		if c != '"' {
			keyLen = -1
		}
		if l.MaxValues > 0 && values > l.MaxValues {
			return &Error{Kind: TooWide, Limit: l.MaxValues, Offset: i}
		}
	}
	return nil
}

// ErrTooLarge is returned by Read for a text longer than its maxBytes.
type ErrTooLarge struct{ Limit int64 }

func (e *ErrTooLarge) Error() string {
	return fmt.Sprintf("JSON text is larger than %d bytes", e.Limit)
}

// Read reads at most maxBytes of r and checks the text against l: the
// bounded way to take a JSON answer of another service before decoding it.
// A text longer than maxBytes is *ErrTooLarge; one breaking l, *Error.
func Read(r io.Reader, maxBytes int64, l Limits) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > maxBytes {
		return nil, &ErrTooLarge{Limit: maxBytes}
	}
	if err := Check(raw, l); err != nil {
		return nil, err
	}
	return raw, nil
}
