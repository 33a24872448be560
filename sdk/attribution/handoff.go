package attribution

import (
	"errors"
	"net/url"
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
func HandoffURL(downloadURL, token string) (string, error) {
	u, err := url.Parse(downloadURL)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", errors.New("attribution: download URL is not an absolute http(s) URL")
	}
	q := u.Query()
	q.Set(HandoffParam, token)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// TokenFromURL returns the click token a handoff URL carries, if any. It
// does not parse the token.
func TokenFromURL(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	v := u.Query().Get(HandoffParam)
	return v, v != ""
}
