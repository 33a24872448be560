package attribution

import (
	"errors"
	"net/url"
	"strings"
)

// HandoffParam is the query parameter that carries a click token in the
// download URL the publisher's SDK opens after a click. The browser records
// that URL with the downloaded file (macOS kMDItemWhereFroms / quarantine,
// Windows Zone.Identifier HostUrl), where the advertiser's SDK finds it on
// first launch. Compact tokens are URL-safe (base64url and dots), so the
// value needs no escaping.
const HandoffParam = "xpromo_click"

// HandoffURL returns downloadURL with the click token set as HandoffParam
// (replacing any earlier one). downloadURL must be an absolute http(s) URL.
// The advertiser's SDK reads it back with slots.TokenFromURL.
func HandoffURL(downloadURL, token string) (string, error) {
	u, err := url.Parse(downloadURL)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", errors.New("attribution: download URL is not an absolute http(s) URL")
	}
	// Keep the rest of the query exactly as the advertiser wrote it (order,
	// escaping): only earlier HandoffParam pairs go.
	var kept []string
	if u.RawQuery != "" {
		for _, pair := range strings.Split(u.RawQuery, "&") {
			key, _, _ := strings.Cut(pair, "=")
			if k, err := url.QueryUnescape(key); err == nil && k == HandoffParam {
				continue
			}
			kept = append(kept, pair)
		}
	}
	u.RawQuery = strings.Join(append(kept, HandoffParam+"="+url.QueryEscape(token)), "&")
	return u.String(), nil
}
