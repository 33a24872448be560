package textcheck_test

import (
	"testing"

	"github.com/xpromo/xpromo/server/textcheck"
)

func TestEncoded(t *testing.T) {
	for s, want := range map[string]bool{
		"":                true,
		"Snip":            true,
		"Café ☕ 日本":       true,
		"a\x00b":          false,
		"\x00":            false,
		"\xff":            false,
		"a\xc3":           false, // truncated sequence
		"\xed\xa0\x80":    false, // an encoded surrogate (U+D800) is not UTF-8
		"tab\tand\nlines": true,  // control characters are Hidden's business
	} {
		if got := textcheck.Encoded(s); got != want {
			t.Errorf("Encoded(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestHidden(t *testing.T) {
	hidden := []rune{0x00, 0x09, 0x0A, 0x0D, 0x1B, 0x1F, 0x7F, 0x80, 0x85, 0x9F,
		0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069,
		0x200E, 0x200F, 0x061C, 0x2028, 0x2029, 0xFEFF}
	for _, r := range hidden {
		if !textcheck.Hidden(r) {
			t.Errorf("Hidden(%U) = false", r)
		}
	}
	// Ordinary text, including the joiners emoji and several scripts need.
	for _, r := range "aZ09 -_.éßЖ日本👍\u200c\u200d\u00a0\u05d0\u0627" {
		if textcheck.Hidden(r) {
			t.Errorf("Hidden(%U) = true", r)
		}
	}
}

func TestFirstHidden(t *testing.T) {
	if r, ok := textcheck.FirstHidden("Snip\u202Egnp.exe"); !ok || r != 0x202E {
		t.Errorf("FirstHidden found %U %v", r, ok)
	}
	if _, ok := textcheck.FirstHidden("Snip Pro"); ok {
		t.Error("FirstHidden found a character in plain text")
	}
}
