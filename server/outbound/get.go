package outbound

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// StatusError is an answer of Get other than 200 OK.
type StatusError struct {
	URL  string // redacted: no userinfo password
	Code int
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s answered %d", e.URL, e.Code) }

// Get fetches rawURL with c (a client from New) and returns the body of a
// 200 answer, read up to max bytes: a longer body is ErrResponseTooLarge,
// another status a *StatusError, anything else the transport's error.
// It is the one GET of the signal clients that read a small document
// (an appcast, a store lookup), so each only maps these errors to its own.
func Get(ctx context.Context, c *http.Client, rawURL, accept string, max int64) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("outbound: %q is not an absolute http(s) URL", rawURL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{URL: u.Redacted(), Code: resp.StatusCode}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes from %s", ErrResponseTooLarge, max, u.Redacted())
	}
	return body, nil
}
