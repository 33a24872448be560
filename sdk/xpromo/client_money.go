package xpromo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/xpromo/xpromo/sdk/x402"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// TopUp buys credits for the app's wallet (POST /v1/apps/{app_id}/top-up).
// The answer depends on how the caller pays (see TopUpResult): a person gets
// a CheckoutURL; a machine payer (PreferX402, or a Payment) gets the 402 x402
// Challenge, which is a result here, never an error.
//
// With a wallet (WithX402Wallet) and no Payment, TopUp asks for x402, pays
// the 402 and returns the settled top-up's Line: one request for the
// challenge, one with X-PAYMENT (both with opts, so the same
// Idempotency-Key; the server stores no 402 answers).
//
// Refusals: 422 below_minimum (under MinTopUpCents), 400
// invalid_payment_header; with a payment, the x402_* codes of
// docs/errors.md (x402_pending: the outcome is not known yet, do not pay
// again).
func (c *Client) TopUp(ctx context.Context, appID string, params *TopUpParams, opts ...CallOption) (*TopUpResult, error) {
	p := nonNil(params)
	if w := c.cfg.wallet; w != nil && p.Payment == "" {
		ask := *p
		ask.PreferX402 = true
		res, err := c.topUp(ctx, appID, &ask, opts)
		if err != nil || !res.PaymentRequired() {
			return res, err
		}
		header, err := payChallenge(w, res.Challenge)
		if err != nil {
			return res, err
		}
		ask.PreferX402, ask.Payment = false, header
		return c.topUp(ctx, appID, &ask, opts)
	}
	return c.topUp(ctx, appID, p, opts)
}

// payChallenge signs the first entry of ch that w can pay.
func payChallenge(w *x402.Wallet, ch *X402Challenge) (string, error) {
	var why error
	for _, a := range ch.Accepts {
		h, err := w.PaymentHeader(x402.Requirements{
			Scheme: a.Scheme, Network: a.Network, MaxAmountRequired: a.MaxAmountRequired, Resource: a.Resource,
			Description: a.Description, MimeType: a.MimeType, PayTo: a.PayTo, MaxTimeoutSeconds: int64(a.MaxTimeoutSeconds),
			Asset: a.Asset, Extra: x402.Extra{Name: a.Extra.Name, Version: a.Extra.Version},
		})
		if err == nil {
			return h, nil
		}
		why = err
	}
	if why == nil {
		why = errors.New("the challenge offers no way to pay")
	}
	return "", fmt.Errorf("xpromo: top-up: cannot pay the x402 challenge with this wallet: %w", why)
}

func (c *Client) topUp(ctx context.Context, appID string, p *TopUpParams, opts []CallOption) (*TopUpResult, error) {
	var extra []CallOption
	if p.PreferX402 {
		extra = append(extra, WithHeader(headerPrefer, "payment=x402"))
	}
	if p.Payment != "" {
		extra = append(extra, WithHeader(headerPayment, p.Payment))
	}
	var raw json.RawMessage
	meta, err := c.call(ctx, request{
		method: http.MethodPost,
		path:   pathf("/v1/apps/%s/top-up", appID),
		body:   TopUpRequest{AmountCents: p.AmountCents},
		ok:     []int{http.StatusPaymentRequired},
	}, &raw, append(extra, opts...))
	if err != nil {
		return nil, err
	}
	res := &TopUpResult{PaymentResponse: meta.Header.Get(headerPaymentResponse)}
	fail := func(err error) (*TopUpResult, error) {
		return nil, fmt.Errorf("xpromo: top-up: decoding the %d answer: %w (request %s)", meta.StatusCode, err, meta.RequestID)
	}
	if meta.StatusCode == http.StatusPaymentRequired {
		res.Challenge = new(X402Challenge)
		if err := json.Unmarshal(raw, res.Challenge); err != nil {
			return fail(err)
		}
		return res, nil
	}
	// 200: checkout_url for a person, or the topup line of a settled x402
	// payment.
	var probe struct {
		CheckoutURL *string `json:"checkout_url"`
		ID          *string `json:"id"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return fail(err)
	}
	switch {
	case probe.CheckoutURL != nil:
		res.CheckoutURL = *probe.CheckoutURL
	case probe.ID != nil:
		res.Line = new(LedgerLine)
		if err := json.Unmarshal(raw, res.Line); err != nil {
			return fail(err)
		}
	default:
		return fail(errors.New("neither checkout_url nor a ledger line"))
	}
	return res, nil
}

// CompleteTestCheckout pays a test-mode checkout (POST
// /test/checkout/{session_id}): the wallet is credited with a `topup` line
// at once. checkout is TopUpResult.CheckoutURL as the server gave it, or
// just its session id ("cs_…"); a URL is used as is, and no credential is
// sent to it (the endpoint is public). Completing a completed session
// changes nothing. A live-mode server answers 403 test_mode_only.
func (c *Client) CompleteTestCheckout(ctx context.Context, checkout string, opts ...CallOption) (*CheckoutSession, error) {
	r := request{method: http.MethodPost, auth: authNone}
	if strings.Contains(checkout, "://") {
		u, err := url.Parse(checkout)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("xpromo: checkout URL %q is not an http(s) URL", checkout)
		}
		r.path = u.String()
	} else {
		r.path = pathf("/test/checkout/%s", checkout)
	}
	out := new(CheckoutSession)
	_, err := c.call(ctx, r, out, opts)
	return result(out, err)
}

// GetLedger reads one page of the app's ledger, lines in sequence order
// (GET /v1/apps/{app_id}/ledger). When more lines exist the page's
// NextCursor is set: pass it back as params.Cursor. params may be nil.
// LedgerLines walks every page.
//
// Refusals: 422 invalid_date, invalid_range, invalid_limit, invalid_cursor.
func (c *Client) GetLedger(ctx context.Context, appID string, params *LedgerParams, opts ...CallOption) (*LedgerPage, error) {
	q := url.Values{}
	if p := params; p != nil {
		if p.From != "" {
			q.Set("from", p.From)
		}
		if p.To != "" {
			q.Set("to", p.To)
		}
		if p.Limit != 0 {
			q.Set("limit", strconv.Itoa(p.Limit))
		}
		if p.Cursor != "" {
			q.Set("cursor", p.Cursor)
		}
	}
	out := new(LedgerPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/ledger", appID), query: q}, out, opts)
	return result(out, err)
}

// LedgerLines iterates over every line of the app's ledger from
// params.Cursor on (nil params: from the start), fetching page after page
// of params.Limit lines. An error ends the iteration, yielded with a zero
// line:
//
//	for line, err := range c.LedgerLines(ctx, appID, nil) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(line.Type, line.AmountCents, line.BalanceAfter)
//	}
func (c *Client) LedgerLines(ctx context.Context, appID string, params *LedgerParams, opts ...CallOption) iter.Seq2[LedgerLine, error] {
	var p LedgerParams
	if params != nil {
		p = *params
	}
	return paginate(p.Cursor, "ledger of "+appID, func(cursor string) ([]LedgerLine, string, bool, error) {
		p := p
		p.Cursor = cursor
		page, err := c.GetLedger(ctx, appID, &p, opts...)
		if err != nil {
			return nil, "", false, err
		}
		next := ""
		if page.NextCursor != nil {
			next = *page.NextCursor
		}
		return page.Lines, next, next != "", nil
	})
}

// RequestPayout transfers the app's withdrawable balance to its connected
// account (POST /v1/apps/{app_id}/payout).
//
// Refusals: 409 below_minimum (withdrawable balance under MinPayoutCents),
// payout_account_missing, payout_in_progress, payout_not_allowed (the app
// is suspended or rejected); 503 unavailable when the processor refused or
// did not confirm the transfer (retry with the same Idempotency-Key to get
// the payout's outcome).
func (c *Client) RequestPayout(ctx context.Context, appID string, opts ...CallOption) (*PayoutResponse, error) {
	out := new(PayoutResponse)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/payout", appID)}, out, opts)
	return result(out, err)
}

// StartPayoutOnboarding links a connected payout account to the app
// (creating a Stripe Express account in live mode) and answers the link
// where its owner completes it (POST
// /v1/apps/{app_id}/payout-account/onboarding). Call again for a fresh link.
func (c *Client) StartPayoutOnboarding(ctx context.Context, appID string, opts ...CallOption) (*PayoutOnboarding, error) {
	out := new(PayoutOnboarding)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/payout-account/onboarding", appID)}, out, opts)
	return result(out, err)
}

// GetPayoutAccount reads the app's connected payout account's status (GET
// /v1/apps/{app_id}/payout-account); 409 payout_account_missing when it has
// none.
func (c *Client) GetPayoutAccount(ctx context.Context, appID string, opts ...CallOption) (*PayoutAccountStatus, error) {
	out := new(PayoutAccountStatus)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/payout-account", appID)}, out, opts)
	return result(out, err)
}

// GetX402Descriptor reads the server's x402 descriptor (GET
// /.well-known/x402; public).
func (c *Client) GetX402Descriptor(ctx context.Context, opts ...CallOption) (*X402Descriptor, error) {
	out := new(X402Descriptor)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/.well-known/x402"}, out, opts)
	return result(out, err)
}
