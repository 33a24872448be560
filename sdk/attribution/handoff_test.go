package attribution

import (
	"net/url"
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
	parsed, err := url.Parse(u)
	if err != nil || parsed.Query().Get(HandoffParam) != tok {
		t.Fatalf("token does not read back from %s: %v", u, err)
	}
	// Setting again replaces.
	u2, _ := HandoffURL(u, "a.b.c")
	if p2, _ := url.Parse(u2); len(p2.Query()[HandoffParam]) != 1 || p2.Query().Get(HandoffParam) != "a.b.c" {
		t.Errorf("replaced: %s", u2)
	}
	// The advertiser's own parameters keep their order and spelling.
	u3, _ := HandoffURL("https://dl.example.com/a.dmg?z=1&a=x+y&xpromo_click=old&b=%2F", tok)
	if want := "https://dl.example.com/a.dmg?z=1&a=x+y&b=%2F&xpromo_click=" + tok; u3 != want {
		t.Errorf("HandoffURL:\n got %s\nwant %s", u3, want)
	}
	for _, bad := range []string{"ftp://x/y", "/relative", "https://", "::"} {
		if _, err := HandoffURL(bad, tok); err == nil {
			t.Errorf("HandoffURL(%q) accepted", bad)
		}
	}
}
