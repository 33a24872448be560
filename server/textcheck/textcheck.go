// Package textcheck is the server's one rule for the text it accepts from
// clients (docs/errors.md, "Input policy"):
//
//   - every string is valid UTF-8 and holds no NUL (PostgreSQL cannot store
//     one, and C libraries end strings there);
//   - a string people read (a name, a note, a reason) holds no control
//     characters and no invisible formatting characters that reorder or hide
//     text: the bidirectional overrides, embeddings, isolates and marks, the
//     line and paragraph separators, and the byte-order mark.
//
// It has no dependencies so that the HTTP edge and the domain validators can
// share it.
package textcheck

import (
	"unicode"
	"unicode/utf8"
)

// Encoded reports whether s is valid UTF-8 without a NUL.
func Encoded(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return false
		}
	}
	return utf8.ValidString(s)
}

// Hidden reports whether r is a character refused in text people read: a
// control character (C0, DEL, C1), or a formatting character that changes
// how the text around it is shown without being seen itself.
func Hidden(r rune) bool {
	switch {
	case unicode.IsControl(r): // U+0000–U+001F, U+007F–U+009F
		return true
	case r >= 0x202A && r <= 0x202E: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	}
	switch r {
	case 0x200E, 0x200F, 0x061C: // LRM, RLM, ALM
		return true
	case 0x2028, 0x2029: // line and paragraph separators
		return true
	case 0xFEFF: // byte-order mark, zero-width no-break space
		return true
	}
	return false
}

// FirstHidden returns the first Hidden character of s and true, or false
// when there is none.
func FirstHidden(s string) (rune, bool) {
	for _, r := range s {
		if Hidden(r) {
			return r, true
		}
	}
	return 0, false
}
