package dashboard

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// VENDORED.md's checksums are the embedded files' own.
func TestVendoredChecksums(t *testing.T) {
	doc, err := fs.ReadFile(staticFS, "static/VENDORED.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^\| ([^ |]+\.(?:js|css)) \|.*\| ([0-9a-f]{64}) \|$`).FindAllStringSubmatch(string(doc), -1)
	if len(rows) != 3 {
		t.Fatalf("VENDORED.md lists %d files, want 3", len(rows))
	}
	for _, row := range rows {
		raw, err := fs.ReadFile(staticFS, "static/"+row[1])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		if got := hex.EncodeToString(sum[:]); got != row[2] {
			t.Errorf("%s: sha256 %s, VENDORED.md says %s", row[1], got, row[2])
		}
	}
}

func TestParseEuros(t *testing.T) {
	for in, want := range map[string]int64{"100": 10000, "25.5": 2550, "25.50": 2550, "0.05": 5, "7.": 700} {
		if got, err := parseEuros(in); err != nil || got != want {
			t.Errorf("parseEuros(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", ".5", "1.234", "-5", "1e3", "12,50", "99999999999999", "1.-1", "+1"} {
		if got, err := parseEuros(in); err == nil {
			t.Errorf("parseEuros(%q) = %d, want an error", in, got)
		}
	}
}

// FuzzParseEuros: any text is an amount of at most 12 characters' worth or
// an error, never a panic or a negative amount.
func FuzzParseEuros(f *testing.F) {
	for _, s := range []string{"100", "25.50", "", "1.2.3", "-1", "4294967295.99"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseEuros(s)
		if err == nil && (c < 0 || len(s) > 12) {
			t.Fatalf("parseEuros(%q) = %d", s, c)
		}
	})
}

// FuzzCampaignForm: any form body reads as a campaign or is refused, with
// at most 32 categories.
func FuzzCampaignForm(f *testing.F) {
	f.Add("category=productivity&daily_budget_eur=50&max_bid_eur=4.50")
	f.Add("category=a&category=b&daily_budget_eur=1")
	f.Add(strings.Repeat("category=x&", 40) + "daily_budget_eur=5")
	f.Fuzz(func(t *testing.T, body string) {
		v, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		cats, budget, bid, ok := campaignForm(v)
		if ok && (len(cats) > 32 || budget < 0 || (bid != nil && *bid < 0)) {
			t.Fatalf("campaignForm(%q) = %v %d %v", body, cats, budget, bid)
		}
	})
}
