package httpapi

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	wirex402 "github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/x402"
)

// mountMoney: top-up (checkout and x402), the test checkout page, the ledger,
// payouts and /.well-known/x402.
func (s *Server) mountMoney(public, protected, admin chi.Router) {
	protected.Post("/apps/{app_id}/top-up", s.topUp)
	protected.Get("/apps/{app_id}/ledger", s.getLedger)
	protected.Post("/apps/{app_id}/payout", s.requestPayout) // payments.Payout detaches from the unit of work itself: it transfers between its writes
	admin.Put("/admin/apps/{app_id}/payout-account", s.setPayoutAccount)
	admin.Post("/admin/apps/{app_id}/adjustments", s.adjustWallet)
	s.mountStripe(protected)

	// Outside /v1: the descriptor lives at its well-known path, and the test
	// checkout page is opened by a person's browser from checkout_url.
	root := s.router.With(s.identify, s.rateLimit, s.input)
	root.Get("/.well-known/x402", s.x402Descriptor)
	root.Get("/test/checkout/{session_id}", s.testCheckoutPage)
	root.With(s.idempotent).Post("/test/checkout/{session_id}", s.completeTestCheckout)
}

// publicURL is the absolute URL of path on this server: under the configured
// BaseURL, else under the host the request came to.
func (s *Server) publicURL(r *http.Request, path string) string {
	base := strings.TrimRight(s.services.BaseURL, "/")
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return base + path
}

// x402 preference: `Prefer: payment=x402` (RFC 7240 syntax, any letter case,
// among other preferences).
func prefersX402(r *http.Request) bool {
	for _, h := range r.Header.Values("Prefer") {
		for pref := range strings.SplitSeq(h, ",") {
			pref, _, _ = strings.Cut(pref, ";")
			name, value, _ := strings.Cut(pref, "=")
			if strings.EqualFold(strings.TrimSpace(name), "payment") &&
				strings.EqualFold(strings.Trim(strings.TrimSpace(value), `"`), "x402") {
				return true
			}
		}
	}
	return false
}

// topUp answers a person with a checkout_url, and an x402 caller with 402
// and the challenge. The paid retry (X-PAYMENT) is verified and settled
// (payments.X402TopUp): 200 with the wallet's topup line and
// X-PAYMENT-RESPONSE, or a catalogued refusal (with X-PAYMENT-RESPONSE when
// the facilitator's settlement refused it).
func (s *Server) topUp(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	var req struct {
		AmountCents *int64 `json:"amount_cents"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeErr(w, r, err)
		return
	}
	if req.AmountCents == nil {
		e := apperr.New(apperr.MissingField, "amount_cents is required")
		e.Field = "amount_cents"
		s.writeErr(w, r, e)
		return
	}
	amount := *req.AmountCents
	if err := payments.ValidateTopUp(amount); err != nil {
		s.writeErr(w, r, err)
		return
	}
	resource := s.publicURL(r, r.URL.Path)
	if _, paid := r.Header[http.CanonicalHeaderKey("X-PAYMENT")]; paid {
		p, err := x402.Decode(r.Header.Get("X-PAYMENT"))
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		res, err := s.services.Payments.X402TopUp(r.Context(), appID, amount, resource, p)
		if res.Settle.Network != "" || res.Settle.Success {
			if h, herr := wirex402.Encode(res.Settle); herr == nil {
				w.Header().Set("X-PAYMENT-RESPONSE", h)
				w.Header().Add("Access-Control-Expose-Headers", "X-PAYMENT-RESPONSE")
			}
		}
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, ledgerLine(res.Line))
		return
	}
	if prefersX402(r) {
		ch, err := s.services.Payments.X402Quoted(r.Context(), resource, appID, amount, payments.X402PaymentRequired)
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		w.Header().Set("Preference-Applied", "payment=x402")
		writeJSON(w, http.StatusPaymentRequired, ch)
		return
	}
	_, url, err := s.services.Payments.TopUp(r.Context(), appID, amount)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, xpromo.TopUpResponse{CheckoutURL: url})
}

func (s *Server) getLedger(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	q, err := payments.ParseLedgerQuery(appID, r.URL.Query())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	lines, next, err := s.services.Payments.LedgerPage(r.Context(), appID, q)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	page := xpromo.LedgerPage{Lines: make([]xpromo.LedgerLine, len(lines))}
	for i, l := range lines {
		page.Lines[i] = ledgerLine(l)
	}
	if next != "" {
		page.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, page)
}

// ledgerLine maps a wallet line to the API's LedgerLine ("" → null).
func ledgerLine(l ledger.Line) xpromo.LedgerLine {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return xpromo.LedgerLine{
		ID:                l.ID,
		Ts:                l.CreatedAt.UTC(),
		Type:              xpromo.LineType(l.Type),
		AmountCents:       l.Amount,
		CounterpartyAppID: opt(l.Counterparty),
		EventChainID:      opt(l.ChainID),
		BalanceAfter:      l.BalanceAfter,
		Note:              opt(l.Note),
	}
}

func (s *Server) requestPayout(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	p, err := s.services.Payments.Payout(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p.Wire())
}

// payoutAccount is the body and answer of PUT /v1/admin/apps/{app_id}/payout-account.
type payoutAccount struct {
	AppID     string `json:"app_id,omitempty"`
	AccountID string `json:"account_id"`
}

func (s *Server) setPayoutAccount(w http.ResponseWriter, r *http.Request) {
	appID := chi.URLParam(r, "app_id")
	var req struct {
		AccountID string `json:"account_id"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeErr(w, r, err)
		return
	}
	if err := s.services.Payments.SetPayoutAccount(r.Context(), appID, req.AccountID); err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, payoutAccount{AppID: appID, AccountID: req.AccountID})
}

// adjustWallet is POST /v1/admin/apps/{app_id}/adjustments: an operator's
// correction of a wallet, answered with its ledger line.
func (s *Server) adjustWallet(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AmountCents *int64 `json:"amount_cents"`
		Note        string `json:"note"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeErr(w, r, err)
		return
	}
	if req.AmountCents == nil {
		e := apperr.New(apperr.MissingField, "amount_cents is required")
		e.Field = "amount_cents"
		s.writeErr(w, r, e)
		return
	}
	line, err := s.services.Payments.Adjust(r.Context(), chi.URLParam(r, "app_id"), *req.AmountCents, req.Note)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, ledgerLine(line))
}

// x402Descriptor answers GET /.well-known/x402. resources holds only
// URIs (openapi.json says format uri, and validating proxies check it): the
// caller's own top-up URL when it sends its API key, none otherwise. The
// top-up of any app is published as an RFC 6570 URI template in
// resourceTemplates, {app_id} being the payer's own app.
func (s *Server) x402Descriptor(w http.ResponseWriter, r *http.Request) {
	d := xpromo.X402Descriptor{
		X402Version:       xpromo.X402Version,
		Resources:         []string{},
		ResourceTemplates: []string{s.publicURL(r, "/v1/apps/{app_id}/top-up")},
	}
	if app := callerApp(r.Context()); app != "" {
		d.Resources = append(d.Resources, s.publicURL(r, "/v1/apps/"+url.PathEscape(app)+"/top-up"))
	}
	writeJSON(w, http.StatusOK, d)
}

// checkoutStatus is the JSON answer of POST /test/checkout/{session_id}.
type checkoutStatus struct {
	SessionID   string `json:"session_id"`
	Status      string `json:"status"`
	AmountCents int64  `json:"amount_cents"`
	AppID       string `json:"app_id"`
}

func (s *Server) testCheckoutPage(w http.ResponseWriter, r *http.Request) {
	sess, err := s.services.Payments.TestCheckout(r.Context(), chi.URLParam(r, "session_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeCheckoutPage(w, sess)
}

func (s *Server) completeTestCheckout(w http.ResponseWriter, r *http.Request) {
	sess, err := s.services.Payments.CompleteTestCheckout(r.Context(), chi.URLParam(r, "session_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "text/html") {
		writeCheckoutPage(w, sess)
		return
	}
	writeJSON(w, http.StatusOK, checkoutStatus{SessionID: sess.ID, Status: sess.Status, AmountCents: sess.AmountCents, AppID: sess.AppID})
}

var checkoutPage = template.Must(template.New("checkout").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>xpromo test checkout: EUR {{.Amount}}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; color: #222; }
.banner { background: #fff3cd; border: 2px solid #d39e00; padding: .75rem 1rem; font-weight: bold; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .4rem 1rem; }
dt { color: #666; }
button { font-size: 1.1rem; padding: .6rem 1.6rem; cursor: pointer; }
</style>
</head>
<body>
<p class="banner">TEST MODE — no money moves. Paying here credits the wallet with test credits.</p>
<h1>Top up EUR {{.Amount}}</h1>
<dl>
<dt>Amount</dt><dd>EUR {{.Amount}} ({{.Session.AmountCents}} credits)</dd>
<dt>App</dt><dd><code>{{.Session.AppID}}</code></dd>
<dt>Session</dt><dd><code>{{.Session.ID}}</code></dd>
<dt>Status</dt><dd><strong>{{.Session.Status}}</strong></dd>
<dt>Expires</dt><dd>{{.Expires}}</dd>
</dl>
{{if eq .Session.Status "open"}}<form method="post" action="{{.Action}}"><button type="submit">Pay EUR {{.Amount}}</button></form>
{{else if eq .Session.Status "completed"}}<p>Paid on {{.Completed}}: the wallet was credited {{.Session.AmountCents}} credits.</p>
{{else}}<p>This checkout expired unpaid. Start a new top-up.</p>
{{end}}</body>
</html>
`))

func writeCheckoutPage(w http.ResponseWriter, sess payments.CheckoutSession) {
	data := struct {
		Session            payments.CheckoutSession
		Amount, Action     string
		Expires, Completed string
	}{
		Session:   sess,
		Amount:    payments.EUR(sess.AmountCents),
		Action:    payments.TestCheckoutPath(sess.ID),
		Expires:   sess.ExpiresAt.UTC().Format(time.RFC3339),
		Completed: sess.CompletedAt.UTC().Format(time.RFC3339),
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = checkoutPage.Execute(w, data)
}
