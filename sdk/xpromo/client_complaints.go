package xpromo

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// EarnMode reads how the app takes its publisher earnings, and since when
// (GET /v1/apps/{app_id}/earn-mode).
func (c *Client) EarnMode(ctx context.Context, appID string, opts ...CallOption) (*EarnModeState, error) {
	out := new(EarnModeState)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/earn-mode", appID)}, out, opts)
	return result(out, err)
}

// SetEarnMode chooses how the app takes the earnings of the chains that
// clear from now on (POST /v1/apps/{app_id}/earn-mode): EarnModeCash,
// withdrawable, or EarnModeCredits, ×1.2, spendable on campaigns and never
// withdrawable. Earnings already cleared keep their mode. A suspended or
// rejected app gets 409 earn_mode_not_allowed.
func (c *Client) SetEarnMode(ctx context.Context, appID string, mode EarnMode, opts ...CallOption) (*EarnModeState, error) {
	out := new(EarnModeState)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/earn-mode", appID), body: SetEarnModeRequest{EarnMode: mode}}, out, opts)
	return result(out, err)
}

// FileComplaint reports params.AppID on behalf of the app appID, the
// caller (POST /v1/apps/{app_id}/complaints). Refusals: 403
// complaint_not_allowed (the caller neither traded with the app nor is
// approved, throttled or live; or it names itself), 409 complaint_open (one
// open complaint per app), 404 not_found (no such app).
func (c *Client) FileComplaint(ctx context.Context, appID string, params *CreateComplaintRequest, opts ...CallOption) (*Complaint, error) {
	out := new(Complaint)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/complaints", appID), body: nonNil(params)}, out, opts)
	return result(out, err)
}

// Complaints lists the complaints the app filed, newest first (GET
// /v1/apps/{app_id}/complaints). limit 0 means the server's default (100).
func (c *Client) Complaints(ctx context.Context, appID string, limit int, opts ...CallOption) (*ComplaintPage, error) {
	out := new(ComplaintPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/complaints", appID), query: limitQuery(limit)}, out, opts)
	return result(out, err)
}

// AdminComplaints lists every app's complaints, newest first, only those
// with status when it is not "" (GET /v1/admin/complaints). limit 0 means
// the server's default (100).
func (c *Client) AdminComplaints(ctx context.Context, status ComplaintStatus, limit int, opts ...CallOption) (*ComplaintPage, error) {
	q := limitQuery(limit)
	if status != "" {
		q.Set("status", string(status))
	}
	out := new(ComplaintPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/admin/complaints", query: q, auth: authAdmin}, out, opts)
	return result(out, err)
}

// AdminResolveComplaint resolves an open complaint as ComplaintUpheld or
// ComplaintDismissed, with an optional note (POST
// /v1/admin/complaints/{complaint_id}/resolve). A resolved complaint is 409
// complaint_resolved.
func (c *Client) AdminResolveComplaint(ctx context.Context, complaintID string, params *ResolveComplaintRequest, opts ...CallOption) (*Complaint, error) {
	out := new(Complaint)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/admin/complaints/%s/resolve", complaintID), body: nonNil(params), auth: authAdmin}, out, opts)
	return result(out, err)
}

func limitQuery(limit int) url.Values {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}
