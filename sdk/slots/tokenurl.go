package slots

import (
	"net/url"
	"strings"

	"github.com/xpromo/xpromo/sdk/attribution"
)

// TokenParam is the query parameter that carries the signed click token in
// a download URL (attribution.HandoffParam):
//
//	https://dl.example.com/Notes.dmg?xpromo_click=<compact JWS>
//
// Browsers record the download URL with the file (macOS kMDItemWhereFroms,
// Windows Zone.Identifier HostUrl), so the advertiser's SDK can read the
// token back on first launch when the local inbox is not available.
// attribution.HandoffURL builds such a URL.
const TokenParam = attribution.HandoffParam

// maxURLLen bounds a URL read from outside input before it is parsed.
const maxURLLen = 4 * attribution.MaxTokenSize

// TokenFromURL returns the click token carried in raw's TokenParam query
// parameter, and whether there was one that parses as a click token
// (attribution.ParseClick: shape, header and claims; signatures are the
// server's business). When the parameter repeats, the first that parses
// wins.
func TokenFromURL(raw string) (string, bool) {
	toks := clickTokensInURL(raw)
	if len(toks) == 0 {
		return "", false
	}
	return toks[0], true
}

// clickTokensInURL returns every TokenParam value of raw that parses as a
// click token, in order.
func clickTokensInURL(raw string) []string {
	raw = strings.TrimSpace(raw)
	if len(raw) > maxURLLen {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range u.Query()[TokenParam] {
		if _, err := attribution.ParseClick(t); err == nil {
			out = append(out, t)
		}
	}
	return out
}
