package xpromo

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// The dashboard's reads (additive): balance, payouts, chains, API keys, and
// the operators' paged lists (apps by status, audit log, complaints).

// pageQuery adds p's limit and cursor to q.
func pageQuery(q url.Values, p PageParams) url.Values {
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}

// nextOf is the cursor a page names, "" for none.
func nextOf(c *string) string {
	if c == nil {
		return ""
	}
	return *c
}

// iterate is paginate over pages read by list, which reads the page at a
// cursor.
func iterate[T any](first, what string, list func(cursor string) ([]T, *string, error)) iter.Seq2[T, error] {
	return paginate(first, what, func(cursor string) ([]T, string, bool, error) {
		items, next, err := list(cursor)
		if err != nil {
			return nil, "", false, err
		}
		n := nextOf(next)
		return items, n, n != "", nil
	})
}

// GetBalance reads the app's balance (GET /v1/apps/{app_id}/balance): the
// wallet, the escrow its installs hold, what a payout would withdraw and
// the credits that are spendable only.
func (c *Client) GetBalance(ctx context.Context, appID string, opts ...CallOption) (*Balance, error) {
	out := new(Balance)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/balance", appID)}, out, opts)
	return result(out, err)
}

// ListPayouts reads one page of the app's payouts, newest first (GET
// /v1/apps/{app_id}/payouts). params may be nil. Payouts walks every page.
//
// Refusals: 422 invalid_limit, invalid_cursor.
func (c *Client) ListPayouts(ctx context.Context, appID string, params *PageParams, opts ...CallOption) (*PayoutPage, error) {
	var p PageParams
	if params != nil {
		p = *params
	}
	out := new(PayoutPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/payouts", appID), query: pageQuery(url.Values{}, p)}, out, opts)
	return result(out, err)
}

// Payouts iterates over the app's payouts, newest first, page after page.
// An error ends the iteration, yielded with a zero payout.
func (c *Client) Payouts(ctx context.Context, appID string, params *PageParams, opts ...CallOption) iter.Seq2[Payout, error] {
	var p PageParams
	if params != nil {
		p = *params
	}
	return iterate(p.Cursor, "payouts of "+appID, func(cursor string) ([]Payout, *string, error) {
		p := p
		p.Cursor = cursor
		page, err := c.ListPayouts(ctx, appID, &p, opts...)
		if err != nil {
			return nil, nil, err
		}
		return page.Payouts, page.NextCursor, nil
	})
}

// ListChains reads one page of the caller's app's chains, newest first (GET
// /v1/chains), on either side or the one params.Role names, with a state
// or campaign when set. params may be nil. Chains walks every page.
//
// Refusals: 422 invalid_chain_state, invalid_role, invalid_limit,
// invalid_cursor.
func (c *Client) ListChains(ctx context.Context, params *ChainListParams, opts ...CallOption) (*ChainPage, error) {
	q := url.Values{}
	if p := params; p != nil {
		if p.State != "" {
			q.Set("state", string(p.State))
		}
		if p.Role != "" {
			q.Set("role", string(p.Role))
		}
		if p.CampaignID != "" {
			q.Set("campaign_id", p.CampaignID)
		}
		pageQuery(q, p.PageParams)
	}
	out := new(ChainPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/chains", query: q}, out, opts)
	return result(out, err)
}

// Chains iterates over the caller's app's chains, newest first:
//
//	for ch, err := range c.Chains(ctx, &xpromo.ChainListParams{Role: xpromo.RoleAdvertiser, State: xpromo.ChainCleared}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(ch.ChainID, ch.PriceCents)
//	}
func (c *Client) Chains(ctx context.Context, params *ChainListParams, opts ...CallOption) iter.Seq2[Chain, error] {
	var p ChainListParams
	if params != nil {
		p = *params
	}
	return iterate(p.Cursor, "chains", func(cursor string) ([]Chain, *string, error) {
		p := p
		p.Cursor = cursor
		page, err := c.ListChains(ctx, &p, opts...)
		if err != nil {
			return nil, nil, err
		}
		return page.Chains, page.NextCursor, nil
	})
}

// ListAPIKeys reads the app's newest API keys (GET
// /v1/apps/{app_id}/keys): their prefix, creation and expiry, never the
// keys themselves.
func (c *Client) ListAPIKeys(ctx context.Context, appID string, opts ...CallOption) (*APIKeyList, error) {
	out := new(APIKeyList)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/keys", appID)}, out, opts)
	return result(out, err)
}

// AdminListApps reads one page of apps, oldest first, with params.Status
// when set (GET /v1/admin/apps): with AppStatusPending, the review queue.
// AdminApps walks every page.
//
// Refusals: 422 invalid_app_status, invalid_limit, invalid_cursor.
func (c *Client) AdminListApps(ctx context.Context, params *AdminAppListParams, opts ...CallOption) (*AdminAppPage, error) {
	q := url.Values{}
	if p := params; p != nil {
		if p.Status != "" {
			q.Set("status", string(p.Status))
		}
		pageQuery(q, p.PageParams)
	}
	out := new(AdminAppPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/admin/apps", query: q, auth: authAdmin}, out, opts)
	return result(out, err)
}

// AdminApps iterates over the apps, oldest first, page after page.
func (c *Client) AdminApps(ctx context.Context, params *AdminAppListParams, opts ...CallOption) iter.Seq2[App, error] {
	var p AdminAppListParams
	if params != nil {
		p = *params
	}
	return iterate(p.Cursor, "admin apps", func(cursor string) ([]App, *string, error) {
		p := p
		p.Cursor = cursor
		page, err := c.AdminListApps(ctx, &p, opts...)
		if err != nil {
			return nil, nil, err
		}
		return page.Apps, page.NextCursor, nil
	})
}

// AdminListAudit reads one page of the operator audit log, newest first
// (GET /v1/admin/audit). AdminAuditEntries walks every page.
func (c *Client) AdminListAudit(ctx context.Context, params *PageParams, opts ...CallOption) (*AuditPage, error) {
	var p PageParams
	if params != nil {
		p = *params
	}
	out := new(AuditPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/admin/audit", query: pageQuery(url.Values{}, p), auth: authAdmin}, out, opts)
	return result(out, err)
}

// AdminAuditEntries iterates over the audit log, newest first.
func (c *Client) AdminAuditEntries(ctx context.Context, params *PageParams, opts ...CallOption) iter.Seq2[AuditEntry, error] {
	var p PageParams
	if params != nil {
		p = *params
	}
	return iterate(p.Cursor, "audit log", func(cursor string) ([]AuditEntry, *string, error) {
		p := p
		p.Cursor = cursor
		page, err := c.AdminListAudit(ctx, &p, opts...)
		if err != nil {
			return nil, nil, err
		}
		return page.Entries, page.NextCursor, nil
	})
}

// AdminListComplaints reads one page of every app's complaints, newest
// first, with params.Status when set (GET /v1/admin/complaints).
// AdminAllComplaints walks every page.
func (c *Client) AdminListComplaints(ctx context.Context, params *AdminComplaintListParams, opts ...CallOption) (*ComplaintPage, error) {
	q := url.Values{}
	if p := params; p != nil {
		if p.Status != "" {
			q.Set("status", string(p.Status))
		}
		pageQuery(q, p.PageParams)
	}
	out := new(ComplaintPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/admin/complaints", query: q, auth: authAdmin}, out, opts)
	return result(out, err)
}

// AdminAllComplaints iterates over the complaints, newest first.
func (c *Client) AdminAllComplaints(ctx context.Context, params *AdminComplaintListParams, opts ...CallOption) iter.Seq2[Complaint, error] {
	var p AdminComplaintListParams
	if params != nil {
		p = *params
	}
	return iterate(p.Cursor, "complaints", func(cursor string) ([]Complaint, *string, error) {
		p := p
		p.Cursor = cursor
		page, err := c.AdminListComplaints(ctx, &p, opts...)
		if err != nil {
			return nil, nil, err
		}
		return page.Complaints, page.NextCursor, nil
	})
}
