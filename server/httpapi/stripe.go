package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/payments"
)

// StripeWebhook receives Stripe's events (payments/stripe.Webhook).
type StripeWebhook interface {
	Receive(ctx context.Context, payload []byte, signature string) error
}

// maxStripeEventBytes bounds a webhook body; Stripe's events are a few KiB.
const maxStripeEventBytes = 1 << 20

// mountStripe: the Stripe webhook (live mode, where Stripe is configured) and the
// connected-account endpoints.
func (s *Server) mountStripe(protected chi.Router) {
	protected.Post("/apps/{app_id}/payout-account/onboarding", s.startOnboarding)
	protected.Get("/apps/{app_id}/payout-account", s.getPayoutAccount)
	if s.services.StripeWebhook != nil {
		// Outside the /v1 middleware: Stripe signs the raw body (the input
		// policy must not touch it), and its bursts of deliveries from few
		// addresses must not be rate-limited per IP (a signature is checked
		// before anything is stored). Stripe's callback, not an operation
		// of the API: openapi.json leaves it out, docs/payments.md has it.
		s.router.With(s.realIP).Post("/v1/stripe/webhook", s.stripeWebhook)
	}
}

// stripeWebhook is POST /v1/stripe/webhook.
func (s *Server) stripeWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxStripeEventBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.writeErr(w, r, apperr.New(apperr.BodyTooLarge, "a Stripe event is at most %d bytes", maxStripeEventBytes))
			return
		}
		s.writeErr(w, r, apperr.New(apperr.MalformedJSON, "reading the body: %v", err))
		return
	}
	if err := s.services.StripeWebhook.Receive(r.Context(), body, r.Header.Get("Stripe-Signature")); err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"received": true})
}

func (s *Server) startOnboarding(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	o, err := s.services.Payments.StartOnboarding(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, xpromo.PayoutOnboarding{AccountID: o.AccountID, OnboardingURL: o.URL})
}

func (s *Server) getPayoutAccount(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	st, err := s.services.Payments.PayoutAccountStatus(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wireAccountStatus(st))
}

func wireAccountStatus(st payments.AccountStatus) xpromo.PayoutAccountStatus {
	a := xpromo.PayoutAccountStatus{AccountID: st.AccountID, ChargesEnabled: st.ChargesEnabled, PayoutsEnabled: st.PayoutsEnabled,
		DetailsSubmitted: st.DetailsSubmitted, RequirementsDue: st.RequirementsDue}
	if st.DisabledReason != "" {
		a.DisabledReason = &st.DisabledReason
	}
	return a
}
