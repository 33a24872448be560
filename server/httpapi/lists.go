package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/payments"
)

// mountLists: the reads a dashboard needs beside the other endpoints'
// (docs/dashboard.md "API"): an app's balance, payouts, chains and API
// keys, and the operators' apps by status (the review queue).
func (s *Server) mountLists(protected, admin chi.Router) {
	protected.Get("/apps/{app_id}/balance", s.getBalance)
	protected.Get("/apps/{app_id}/payouts", s.listPayouts)
	protected.Get("/apps/{app_id}/keys", s.listAPIKeys)
	protected.Get("/chains", s.listChains)
	admin.Get("/admin/apps", s.adminListApps)
}

// optCursor is a page's next_cursor: absent on the last page.
func optCursor(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

func (s *Server) getBalance(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	b, err := s.services.Payments.Balance(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, WireBalance(appID, b))
}

// WireBalance is b as the API answers it.
func WireBalance(appID string, b payments.Balance) xpromo.Balance {
	return xpromo.Balance{AppID: appID, Currency: payments.Currency, WalletCents: b.WalletCents,
		EscrowHeldCents: b.EscrowHeldCents, WithdrawableCents: b.WithdrawableCents, CreditsCents: b.CreditsCents,
		MinPayoutCents: payments.MinPayoutCents, PayoutPending: b.PayoutPending, AsOf: b.AsOf}
}

func (s *Server) listPayouts(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	q, err := payments.ParsePayoutQuery(appID, r.URL.Query())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	page, err := s.services.Payments.ListPayouts(r.Context(), q)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	out := xpromo.PayoutPage{Payouts: make([]xpromo.Payout, len(page.Payouts)), NextCursor: optCursor(page.Next)}
	for i, p := range page.Payouts {
		out.Payouts[i] = WirePayout(p)
	}
	writeJSON(w, http.StatusOK, out)
}

// WirePayout is p as the payouts list answers it.
func WirePayout(p payments.Payout) xpromo.Payout {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return xpromo.Payout{PayoutID: p.ID, AmountCents: p.AmountCents, Currency: payments.Currency,
		Status: xpromo.PayoutStatus(p.Status), Destination: p.Destination, TransferID: opt(p.TransferID),
		Failure: opt(p.Failure), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func (s *Server) listAPIKeys(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	keys, err := s.services.Apps.APIKeys(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	out := xpromo.APIKeyList{Keys: make([]xpromo.APIKeyInfo, len(keys))}
	for i, k := range keys {
		out.Keys[i] = xpromo.APIKeyInfo{Prefix: k.Prefix, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, Active: k.Active}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listChains(w http.ResponseWriter, r *http.Request) {
	q, err := attribution.ParseChainQuery(callerApp(r.Context()), r.URL.Query())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	page, err := s.services.Attribution.ListChains(r.Context(), q)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	out := xpromo.ChainPage{Chains: make([]xpromo.Chain, len(page.Chains)), NextCursor: optCursor(page.Next)}
	for i, c := range page.Chains {
		out.Chains[i] = attribution.Wire(c)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) adminListApps(w http.ResponseWriter, r *http.Request) {
	q, err := apps.ParseAppQuery(r.URL.Query())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	page, err := s.services.Apps.ListApps(r.Context(), q)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	out := xpromo.AdminAppPage{Apps: make([]xpromo.App, len(page.Apps)), NextCursor: optCursor(page.Next)}
	for i, a := range page.Apps {
		out.Apps[i] = wireApp(a)
	}
	writeJSON(w, http.StatusOK, out)
}
