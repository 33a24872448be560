package xpromo

import (
	"context"
	"net/http"
	"time"
)

// DashboardSignInLink is the 201 answer of POST /v1/dashboard/sign-in-links:
// a link that signs a browser in to the app's web dashboard, once, until
// ExpiresAt (5 minutes).
type DashboardSignInLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// DashboardLink mints a single-use sign-in link to the calling app's web
// dashboard (POST /v1/dashboard/sign-in-links). Open the URL in a browser
// within 5 minutes and press Continue; the link then stops working.
func (c *Client) DashboardLink(ctx context.Context, opts ...CallOption) (*DashboardSignInLink, error) {
	out := new(DashboardSignInLink)
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/dashboard/sign-in-links"}, out, opts)
	return result(out, err)
}
