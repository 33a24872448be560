package coherence_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/reputation"
	"github.com/xpromo/xpromo/server/reputation/coherence"
)

// consistent is a Mac app whose every fact agrees.
var consistent = coherence.Facts{
	Name:               "Clipboard Pro",
	Domain:             "https://www.clipboardpro.co.uk/",
	BundleID:           "uk.co.clipboardpro.mac",
	DownloadURL:        "https://dl.clipboardpro.co.uk/releases/ClipboardPro-3.11.zip",
	Contact:            "Support <support@clipboardpro.co.uk>",
	Publisher:          "ClipboardPro Ltd.",
	SignerOrganization: "ClipboardPro Limited",
	SignerCommonName:   "Developer ID Application: ClipboardPro Limited (AB12CD34EF)",
	TeamID:             "AB12CD34EF",
}

func pairs(r coherence.Result) map[string]bool {
	m := map[string]bool{}
	for _, p := range r.Pairs {
		m[p.Name] = p.Agree
	}
	return m
}

func TestEveryPairAgrees(t *testing.T) {
	r := coherence.Check(consistent)
	require.True(t, r.OK())
	assert.Equal(t, 100, r.Score)
	assert.Equal(t, map[string]bool{
		coherence.PairDownloadHost: true, coherence.PairContactDomain: true, coherence.PairBundleID: true,
		coherence.PairSignerPublisher: true, coherence.PairSignerDomain: true, coherence.PairSignerTeamID: true,
		coherence.PairName: true,
	}, pairs(r))
	assert.Empty(t, r.Skipped)
}

func TestDisagreements(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*coherence.Facts)
		pair   string
		want   int // score
	}{
		{"download elsewhere", func(f *coherence.Facts) { f.DownloadURL = "https://objects.githubusercontent.com/x.zip" }, coherence.PairDownloadHost, 86},
		{"free-mail contact", func(f *coherence.Facts) { f.Contact = "clipboardpro.dev@gmail.com" }, coherence.PairContactDomain, 86},
		{"contact elsewhere", func(f *coherence.Facts) { f.Contact = "me@other-company.com" }, coherence.PairContactDomain, 86},
		{"bundle id names another domain", func(f *coherence.Facts) { f.BundleID = "com.famousvendor.clipboardpro" }, coherence.PairBundleID, 86},
		{"signer is someone else", func(f *coherence.Facts) {
			f.SignerOrganization = "Famous Vendor Inc"
			f.SignerCommonName = "Developer ID Application: Famous Vendor Inc (AB12CD34EF)"
		}, coherence.PairSignerPublisher, 71},
		{"team id differs", func(f *coherence.Facts) { f.TeamID = "ZZ99ZZ99ZZ" }, coherence.PairSignerTeamID, 86},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := consistent
			c.change(&f)
			r := coherence.Check(f)
			require.True(t, r.OK())
			assert.False(t, pairs(r)[c.pair], "%+v", r.Pairs)
			assert.Equal(t, c.want, r.Score)
		})
	}
}

func TestRegistrableDomainComparisons(t *testing.T) {
	// Subdomains agree; a look-alike under another suffix does not.
	r := coherence.Check(coherence.Facts{Domain: "clipboardpro.com", DownloadURL: "https://cdn.eu.clipboardpro.com:443/a.zip"})
	assert.True(t, pairs(r)[coherence.PairDownloadHost])
	r = coherence.Check(coherence.Facts{Domain: "clipboardpro.com", DownloadURL: "https://clipboardpro.com.evil.net/a.zip"})
	assert.False(t, pairs(r)[coherence.PairDownloadHost])
	// Two sites on one private suffix are two owners.
	r = coherence.Check(coherence.Facts{Domain: "https://acme.github.io", DownloadURL: "https://other.github.io/a.zip"})
	assert.False(t, pairs(r)[coherence.PairDownloadHost])
	r = coherence.Check(coherence.Facts{Domain: "https://acme.github.io", DownloadURL: "https://acme.github.io/releases/a.zip"})
	assert.True(t, pairs(r)[coherence.PairDownloadHost])
	// Case and internationalised names.
	r = coherence.Check(coherence.Facts{Domain: "BÜCHER.de", DownloadURL: "https://dl.xn--bcher-kva.de/a.zip"})
	assert.True(t, pairs(r)[coherence.PairDownloadHost])
	// IP addresses and unknown suffixes cannot be compared.
	r = coherence.Check(coherence.Facts{Domain: "clipboardpro.com", DownloadURL: "http://203.0.113.7/a.zip"})
	assert.Contains(t, r.Skipped, coherence.PairDownloadHost)
	r = coherence.Check(coherence.Facts{Domain: "clipboardpro.internal", DownloadURL: "https://clipboardpro.internal/a.zip"})
	assert.Contains(t, r.Skipped, coherence.PairDownloadHost)
}

func TestBundleIDs(t *testing.T) {
	for bundle, agree := range map[string]bool{
		"com.clipboardpro.mac":        true,
		"com.clipboardpro":            true,
		"com.clipboardpro.Mac.Helper": true,
		"com.other.clipboardpro":      false,
		"io.github.clipboardpro":      false, // names github.io, not the app's domain
	} {
		r := coherence.Check(coherence.Facts{Domain: "clipboardpro.com", BundleID: bundle})
		assert.Equal(t, agree, pairs(r)[coherence.PairBundleID], bundle)
	}
	// Not reverse DNS (a Windows identity name): not comparable.
	r := coherence.Check(coherence.Facts{Domain: "clipboardpro.com", BundleID: "ClipboardPro.Desktop"})
	assert.Contains(t, r.Skipped, coherence.PairBundleID)
}

func TestSignerFromTheCommonNameAlone(t *testing.T) {
	r := coherence.Check(coherence.Facts{
		Domain:           "clipboardpro.com",
		Publisher:        "Clipboard-Pro GmbH",
		SignerCommonName: "Developer ID Application: ClipboardPro GmbH (AB12CD34EF)",
		TeamID:           "ab12cd34ef",
	})
	p := pairs(r)
	assert.True(t, p[coherence.PairSignerPublisher])
	assert.True(t, p[coherence.PairSignerDomain])
	assert.True(t, p[coherence.PairSignerTeamID])
}

func TestNothingToCompare(t *testing.T) {
	for _, f := range []coherence.Facts{
		{},
		{Name: "Clipboard Pro"},
		{Domain: "clipboardpro.com"},
		{Contact: "not an address", DownloadURL: "::::"},
	} {
		r := coherence.Check(f)
		assert.Equal(t, reputation.ReasonCoherenceInsufficient, r.Reason, "%+v", f)
		assert.Empty(t, r.Pairs)
	}
}

// Properties over random facts drawn from pools of agreeing and
// disagreeing values.
func TestProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(opts ...string) string { return opts[rng.IntN(len(opts))] }
	for i := 0; i < 5000; i++ {
		f := coherence.Facts{
			Name:               pick("", "Clipboard Pro", "Snip", "X"),
			Domain:             pick("", "clipboardpro.com", "https://snip.app", "acme.github.io", "localhost", "203.0.113.1"),
			BundleID:           pick("", "com.clipboardpro.mac", "app.snip", "io.github.acme.tool", "Contoso.App", "a"),
			DownloadURL:        pick("", "https://dl.clipboardpro.com/a.zip", "https://snip.app/x.dmg", "https://github.com/acme/tool/releases/a.zip", "ftp://["),
			Contact:            pick("", "a@clipboardpro.com", "b@gmail.com", "c@snip.app", "nope"),
			Publisher:          pick("", "ClipboardPro Inc.", "Snip Ltd", "Acme"),
			SignerOrganization: pick("", "ClipboardPro, Inc.", "Snip Limited", "Evil Corp"),
			SignerCommonName:   pick("", "Developer ID Application: Snip Limited (AB12CD34EF)", "Apple Development: x"),
			TeamID:             pick("", "AB12CD34EF", "ZZ99ZZ99ZZ"),
		}
		r := coherence.Check(f)
		if !r.OK() {
			assert.Empty(t, r.Pairs)
			assert.Equal(t, reputation.ReasonCoherenceInsufficient, r.Reason)
			continue
		}
		// Bounded, and every pair is either compared or skipped, once.
		require.True(t, r.Score >= 0 && r.Score <= 100, "%d", r.Score)
		assert.Len(t, append(append([]string{}, r.Skipped...), names(r.Pairs)...), 7)
		// 100 exactly when nothing disagrees; 0 exactly when nothing agrees.
		agree, disagree := 0, 0
		for _, p := range r.Pairs {
			if p.Agree {
				agree++
			} else {
				disagree++
			}
		}
		assert.Equal(t, disagree == 0, r.Score == 100, "%+v", r.Pairs)
		assert.Equal(t, agree == 0, r.Score == 0, "%+v", r.Pairs)
		// Case of host names and email domains does not matter.
		up := f
		up.Domain, up.DownloadURL = strings.ToUpper(f.Domain), strings.ToUpper(f.DownloadURL)
		if at := strings.LastIndexByte(f.Contact, '@'); at >= 0 {
			up.Contact = f.Contact[:at] + strings.ToUpper(f.Contact[at:])
		}
		assert.Equal(t, r.Score, coherence.Check(up).Score, "%+v", f)
		// Removing a fact never adds a comparison.
		less := f
		less.Publisher = ""
		assert.LessOrEqual(t, len(coherence.Check(less).Pairs), len(r.Pairs))
	}
}

func names(ps []coherence.Pair) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}
