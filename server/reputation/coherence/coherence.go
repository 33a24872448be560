// Package coherence is the coherence signal of an app's reputation: how
// far what the vetting gate saw about an app agrees with itself. It is pure
// computation (no I/O): the caller passes the facts, Check compares them in
// pairs and scores the share of comparable pairs that agree.
//
// The pairs (Pair.Name), each compared only when both sides are known:
//
//   - download_host: the registrable domain of the download URL's host is
//     the app's domain's;
//   - contact_domain: the contact email's domain is the app's domain's (a
//     free-mail provider — gmail.com, outlook.com, icloud.com, … — never
//     agrees, unless it is the app's own domain);
//   - bundle_id: the bundle id read as reverse DNS ("com.example.app" →
//     example.com) names the app's domain (only for bundle ids whose
//     reversed form ends in a public suffix);
//   - signer_publisher: the signer's organisation (or the name in its
//     common name) is the declared publisher, ignoring case, punctuation and
//     legal forms (Inc, Ltd, GmbH, …);
//   - signer_domain: the signer's organisation contains the domain's name
//     (example.com → "example") or the other way round;
//   - signer_team_id: the team ID in the signer's common name ("Developer
//     ID Application: Example Ltd (AB12CD34EF)") is the signature's team ID;
//   - name: the app's name and the domain's name or one of the bundle id's
//     labels contain one another ("Clipboard Pro", clipboardpro.com).
//
// Registrable domains follow the whole Public Suffix List
// (golang.org/x/net/publicsuffix), private suffixes included, so two apps
// on github.io do not agree with each other. Score: round(100 × agreeing /
// compared); with no comparable pair the signal is
// coherence_insufficient_data.
//
// Limits: agreement is evidence of care, not of honesty — a fraudster can
// make every fact agree; disagreement is common among honest apps too
// (downloads on a CDN or GitHub, a publisher's company domain that is not
// the app's). The weight of 10% reflects that.
package coherence

import (
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"

	"github.com/xpromo/xpromo/server/reputation"
)

// Facts is what the gate saw about an app; empty means unknown.
type Facts struct {
	Name        string // the registered app name
	Domain      string // the app's domain (a host or a URL)
	BundleID    string // the registered bundle id
	DownloadURL string // the download URL (or its host)
	Contact     string // the contact email address
	Publisher   string // the publisher the app declared
	// The code signature's signer: the leaf certificate's organisation (O)
	// and common name (CN), and for macOS the team ID.
	SignerOrganization string
	SignerCommonName   string
	TeamID             string
}

// Pair names.
const (
	PairDownloadHost    = "download_host"
	PairContactDomain   = "contact_domain"
	PairBundleID        = "bundle_id"
	PairSignerPublisher = "signer_publisher"
	PairSignerDomain    = "signer_domain"
	PairSignerTeamID    = "signer_team_id"
	PairName            = "name"
)

// Pair is one comparison and its outcome.
type Pair struct {
	Name   string
	Agree  bool
	Detail string // what was compared, e.g. "example.com = example.com"
}

// Result is the signal with its evidence.
type Result struct {
	reputation.Signal
	// Pairs are the comparisons made, in the order of the package comment.
	Pairs []Pair
	// Skipped names the pairs that could not be compared (a side unknown).
	Skipped []string
}

// Check compares the facts and scores them.
func Check(f Facts) Result {
	var res Result
	add := func(name string, ok bool, agree bool, detail string) {
		if !ok {
			res.Skipped = append(res.Skipped, name)
			return
		}
		res.Pairs = append(res.Pairs, Pair{Name: name, Agree: agree, Detail: detail})
	}

	domain, haveDomain := registrable(f.Domain)
	label := domainLabel(domain)

	dl, haveDL := registrable(f.DownloadURL)
	add(PairDownloadHost, haveDomain && haveDL, dl == domain, fmt.Sprintf("%s vs %s", dl, domain))

	contact, haveContact := emailDomain(f.Contact)
	switch {
	case !haveDomain || !haveContact:
		add(PairContactDomain, false, false, "")
	case contact == domain:
		add(PairContactDomain, true, true, fmt.Sprintf("%s vs %s", contact, domain))
	case freeMail[contact]:
		add(PairContactDomain, true, false, fmt.Sprintf("%s is a free-mail provider", contact))
	default:
		add(PairContactDomain, true, false, fmt.Sprintf("%s vs %s", contact, domain))
	}

	bundleDomain, haveBundle := reverseDNS(f.BundleID)
	add(PairBundleID, haveDomain && haveBundle, bundleDomain == domain, fmt.Sprintf("%s vs %s", bundleDomain, domain))

	signer := signerName(f.SignerOrganization, f.SignerCommonName)
	sig, pub := organisation(signer), organisation(f.Publisher)
	add(PairSignerPublisher, sig != "" && pub != "", sig == pub, fmt.Sprintf("%q vs %q", signer, f.Publisher))

	add(PairSignerDomain, sig != "" && len(label) >= 3, containsEither(sig, label), fmt.Sprintf("%q vs %s", signer, domain))

	cnTeam := teamIDInCN(f.SignerCommonName)
	team := strings.ToUpper(strings.TrimSpace(f.TeamID))
	add(PairSignerTeamID, cnTeam != "" && team != "", cnTeam == team, fmt.Sprintf("%s vs %s", cnTeam, team))

	name := compact(f.Name)
	var candidates []string
	if len(label) >= 3 {
		candidates = append(candidates, label)
	}
	for _, l := range strings.Split(f.BundleID, ".") {
		if l = compact(l); len(l) >= 3 {
			candidates = append(candidates, l)
		}
	}
	agree := false
	for _, c := range candidates {
		agree = agree || containsEither(name, c)
	}
	add(PairName, len(name) >= 3 && len(candidates) > 0, agree, fmt.Sprintf("%q vs %s, %s", f.Name, domain, f.BundleID))

	if len(res.Pairs) == 0 {
		res.Signal = reputation.Unread(reputation.ReasonCoherenceInsufficient)
		return res
	}
	agreeing := 0
	for _, p := range res.Pairs {
		if p.Agree {
			agreeing++
		}
	}
	res.Signal = reputation.Read((200*agreeing + len(res.Pairs)) / (2 * len(res.Pairs))) // round half up
	return res
}

// registrable returns the registrable domain (eTLD+1, the whole Public
// Suffix List) of a host, a host:port or a URL, lower-case A-labels.
func registrable(hostOrURL string) (string, bool) {
	host := strings.TrimSpace(hostOrURL)
	if host == "" {
		return "", false
	}
	if strings.Contains(host, "://") {
		u, err := url.Parse(host)
		if err != nil {
			return "", false
		}
		host = u.Hostname()
	} else if h, _, ok := strings.Cut(host, "/"); ok {
		host = h
	}
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	host = strings.TrimSuffix(host, ".")
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil || host == "" {
		return "", false
	}
	ascii, err := idna.Lookup.ToASCII(host)
	if err != nil {
		return "", false
	}
	if _, icann := publicsuffix.PublicSuffix(ascii); !icann && !privateSuffix(ascii) {
		return "", false // not under a known suffix ("localhost", "app.internal")
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(ascii)
	if err != nil {
		return "", false
	}
	return d, true
}

// privateSuffix reports whether host sits under a private-section suffix
// of the list (github.io), which PublicSuffix reports as not ICANN, unlike
// a TLD the list does not know at all.
func privateSuffix(host string) bool {
	suffix, icann := publicsuffix.PublicSuffix(host)
	return !icann && strings.Contains(suffix, ".")
}

// domainLabel is the registrable domain without its public suffix
// ("example" for "example.co.uk"), compacted.
func domainLabel(domain string) string {
	if domain == "" {
		return ""
	}
	suffix, _ := publicsuffix.PublicSuffix(domain)
	return compact(strings.TrimSuffix(strings.TrimSuffix(domain, suffix), "."))
}

func emailDomain(addr string) (string, bool) {
	a, err := mail.ParseAddress(strings.TrimSpace(addr))
	if err != nil {
		return "", false
	}
	at := strings.LastIndexByte(a.Address, '@')
	if at < 0 {
		return "", false
	}
	return registrable(a.Address[at+1:])
}

// reverseDNS reads a bundle id as a reverse-DNS name and returns the
// registrable domain it names: "com.example.mac.app" → "example.com".
func reverseDNS(bundleID string) (string, bool) {
	labels := strings.Split(strings.TrimSpace(bundleID), ".")
	if len(labels) < 2 {
		return "", false
	}
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	host := strings.Join(labels, ".")
	if _, icann := publicsuffix.PublicSuffix(strings.ToLower(host)); !icann {
		return "", false
	}
	return registrable(host)
}

var cnPrefix = regexp.MustCompile(`(?i)^(developer id application|developer id installer|apple development|apple distribution|mac developer|3rd party mac developer application)\s*:\s*`)
var cnTeam = regexp.MustCompile(`\(([A-Z0-9]{10})\)\s*$`)

// signerName is the signer's organisation, or the name in its common name
// ("Developer ID Application: Example Ltd (AB12CD34EF)" → "Example Ltd").
func signerName(org, cn string) string {
	if strings.TrimSpace(org) != "" {
		return strings.TrimSpace(org)
	}
	cn = cnPrefix.ReplaceAllString(strings.TrimSpace(cn), "")
	return strings.TrimSpace(cnTeam.ReplaceAllString(cn, ""))
}

func teamIDInCN(cn string) string {
	if m := cnTeam.FindStringSubmatch(strings.TrimSpace(cn)); m != nil {
		return m[1]
	}
	return ""
}

// legalForms are dropped when organisation names are compared.
var legalForms = map[string]bool{
	"inc": true, "incorporated": true, "llc": true, "llp": true, "ltd": true, "limited": true, "corp": true,
	"corporation": true, "co": true, "company": true, "plc": true, "gmbh": true, "ag": true, "kg": true,
	"ug": true, "sa": true, "sas": true, "sarl": true, "srl": true, "spa": true, "bv": true, "nv": true,
	"oy": true, "ab": true, "as": true, "aps": true, "pty": true, "kk": true, "sl": true, "se": true,
}

// organisation normalises an organisation name for comparison: lower
// case, letters and digits only, legal forms dropped.
func organisation(s string) string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '.'
	}) {
		w = strings.ReplaceAll(w, ".", "") // "Inc." and "S.A." → "inc", "sa"
		if w != "" && !legalForms[w] {
			words = append(words, w)
		}
	}
	return strings.Join(words, "")
}

// compact is s in lower case with letters and digits only.
func compact(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func containsEither(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return strings.Contains(a, b) || strings.Contains(b, a)
}

// freeMail are mailbox providers anyone can get an address at: a contact
// there says nothing about the app's domain.
var freeMail = map[string]bool{}

func init() {
	for _, d := range []string{
		"gmail.com", "googlemail.com", "outlook.com", "hotmail.com", "live.com", "msn.com",
		"yahoo.com", "ymail.com", "icloud.com", "me.com", "mac.com", "aol.com", "proton.me",
		"protonmail.com", "pm.me", "gmx.com", "gmx.de", "gmx.net", "web.de", "mail.com",
		"yandex.ru", "yandex.com", "mail.ru", "qq.com", "163.com", "126.com", "zoho.com",
		"tutanota.com", "tuta.io", "fastmail.com", "hey.com", "free.fr", "orange.fr", "laposte.net",
	} {
		freeMail[d] = true
	}
}
