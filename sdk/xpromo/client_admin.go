package xpromo

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// The operators' surface (/v1/admin/…). These methods send the admin token
// (WithAdminToken), never the API key; a missing or wrong token answers 401
// unauthorized. Every change is recorded in the audit log (AdminAudit).

// AdminAction is an operator action on an app's status.
type AdminAction string

// Operator actions (see docs/apps.md for the transitions each allows).
const (
	AdminApprove   AdminAction = "approve"   // pending → approved
	AdminReject    AdminAction = "reject"    // → rejected; needs a reason
	AdminSuspend   AdminAction = "suspend"   // → suspended
	AdminReinstate AdminAction = "reinstate" // suspended → the status before
	AdminReview    AdminAction = "review"    // rejected → pending, for another look
)

// AdminAct applies action to an app (POST /v1/admin/apps/{app_id}/{action})
// with an optional reason ("" sends no body; reject requires one), and
// returns the app as operators see it. A status that does not allow the
// action answers 409 invalid_transition.
func (c *Client) AdminAct(ctx context.Context, appID string, action AdminAction, reason string, opts ...CallOption) (*AdminApp, error) {
	r := request{method: http.MethodPost, path: pathf("/v1/admin/apps/%s/%s", appID, string(action)), auth: authAdmin}
	if reason != "" {
		r.body = AdminActionRequest{Reason: reason}
	}
	out := new(AdminApp)
	_, err := c.call(ctx, r, out, opts)
	return result(out, err)
}

// AdminApproveApp approves a pending app (AdminAct with AdminApprove).
func (c *Client) AdminApproveApp(ctx context.Context, appID, reason string, opts ...CallOption) (*AdminApp, error) {
	return c.AdminAct(ctx, appID, AdminApprove, reason, opts...)
}

// AdminRejectApp rejects an app; reason is required (AdminAct with AdminReject).
func (c *Client) AdminRejectApp(ctx context.Context, appID, reason string, opts ...CallOption) (*AdminApp, error) {
	return c.AdminAct(ctx, appID, AdminReject, reason, opts...)
}

// AdminSuspendApp suspends an app (AdminAct with AdminSuspend).
func (c *Client) AdminSuspendApp(ctx context.Context, appID, reason string, opts ...CallOption) (*AdminApp, error) {
	return c.AdminAct(ctx, appID, AdminSuspend, reason, opts...)
}

// AdminReinstateApp lifts a suspension (AdminAct with AdminReinstate).
func (c *Client) AdminReinstateApp(ctx context.Context, appID, reason string, opts ...CallOption) (*AdminApp, error) {
	return c.AdminAct(ctx, appID, AdminReinstate, reason, opts...)
}

// AdminReviewApp sends a rejected app back to review (AdminAct with AdminReview).
func (c *Client) AdminReviewApp(ctx context.Context, appID, reason string, opts ...CallOption) (*AdminApp, error) {
	return c.AdminAct(ctx, appID, AdminReview, reason, opts...)
}

// AdminGetApp reads an app with its status history (GET
// /v1/admin/apps/{app_id}).
func (c *Client) AdminGetApp(ctx context.Context, appID string, opts ...CallOption) (*AdminApp, error) {
	out := new(AdminApp)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/admin/apps/%s", appID), auth: authAdmin}, out, opts)
	return result(out, err)
}

// AdminAudit reads the newest limit entries of the operator audit log,
// newest first (GET /v1/admin/audit); limit 0 means the server's default
// (100), at most 1000.
func (c *Client) AdminAudit(ctx context.Context, limit int, opts ...CallOption) (*AuditPage, error) {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	out := new(AuditPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/admin/audit", query: q, auth: authAdmin}, out, opts)
	return result(out, err)
}

// AdminSetPayoutAccount connects the account an app's payouts go to,
// replacing any previous one (PUT /v1/admin/apps/{app_id}/payout-account).
// accountID is "acct_…".
func (c *Client) AdminSetPayoutAccount(ctx context.Context, appID, accountID string, opts ...CallOption) (*PayoutAccount, error) {
	out := new(PayoutAccount)
	_, err := c.call(ctx, request{
		method: http.MethodPut,
		path:   pathf("/v1/admin/apps/%s/payout-account", appID),
		body:   PayoutAccount{AccountID: accountID},
		auth:   authAdmin,
	}, out, opts)
	return result(out, err)
}

// AdminCutFloor lowers a category's floor on one platform (POST
// /v1/admin/categories/{category}/floors) and returns the category's
// current floors. Floors never rise: a higher one answers 409
// floor_cannot_rise; an equal one changes nothing.
func (c *Client) AdminCutFloor(ctx context.Context, category string, cut FloorCut, opts ...CallOption) (*CategoryFloors, error) {
	out := new(CategoryFloors)
	_, err := c.call(ctx, request{
		method: http.MethodPost,
		path:   pathf("/v1/admin/categories/%s/floors", category),
		body:   cut,
		auth:   authAdmin,
	}, out, opts)
	return result(out, err)
}

// AdminAdjustWallet posts an operator's correction to an app's wallet (POST
// /v1/admin/apps/{app_id}/adjustments) and returns its `adjustment` ledger
// line. A debit never takes the wallet below zero: 409 insufficient_funds.
// Pass WithIdempotencyKey (a ticket number, say) so that repeating the
// correction cannot post it twice.
func (c *Client) AdminAdjustWallet(ctx context.Context, appID string, adj Adjustment, opts ...CallOption) (*LedgerLine, error) {
	out := new(LedgerLine)
	_, err := c.call(ctx, request{
		method: http.MethodPost,
		path:   pathf("/v1/admin/apps/%s/adjustments", appID),
		body:   adj,
		auth:   authAdmin,
	}, out, opts)
	return result(out, err)
}
