package attribution

import (
	"testing"
	"time"
)

func TestHandoffURL(t *testing.T) {
	tok, _ := clickAt(t, time.Minute)
	u, err := HandoffURL("https://dl.example.com/Snip.zip?ref=site#x", tok)
	if err != nil {
		t.Fatal(err)
	}
	want := "https://dl.example.com/Snip.zip?ref=site&xpromo_click=" + tok + "#x"
	if u != want {
		t.Errorf("HandoffURL:\n got %s\nwant %s", u, want)
	}
	got, ok := TokenFromURL(u)
	if !ok || got != tok {
		t.Fatalf("TokenFromURL = %q %v", got, ok)
	}
	// Setting again replaces.
	u2, _ := HandoffURL(u, "a.b.c")
	if got, _ := TokenFromURL(u2); got != "a.b.c" {
		t.Errorf("replaced token = %q", got)
	}
	for _, bad := range []string{"ftp://x/y", "/relative", "https://", "::"} {
		if _, err := HandoffURL(bad, tok); err == nil {
			t.Errorf("HandoffURL(%q) accepted", bad)
		}
	}
	if _, ok := TokenFromURL("https://dl.example.com/Snip.zip"); ok {
		t.Error("token found in a URL without one")
	}
	if _, ok := TokenFromURL("%zz"); ok {
		t.Error("token found in an unparsable URL")
	}
}
