package dashboard

import (
	"errors"
	"net/http"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/payments"
)

// The money screen's other forms: the earn mode, the payout account's
// onboarding, and the payout.

type payoutData struct {
	EarnMode   apps.EarnModeState
	Account    *payments.AccountStatus
	AccountMsg string // why there is no account status to show
	EarnKey    string
	OnboardKey string
	PayoutKey  string
}

// payoutSection reads what the money screen shows of earn mode and payouts.
func (d *Dashboard) payoutSection(r *http.Request) (payoutData, error) {
	ctx, id := r.Context(), appID(r)
	out := payoutData{EarnKey: newFormKey(), OnboardKey: newFormKey(), PayoutKey: newFormKey()}
	var err error
	if out.EarnMode, err = d.cfg.Services.Apps.EarnMode(ctx, id); err != nil {
		return out, err
	}
	st, err := d.cfg.Services.Payments.PayoutAccountStatus(ctx, id)
	var ae *apperr.Error
	switch {
	case err == nil:
		out.Account = &st
	case errors.As(err, &ae):
		out.AccountMsg = ae.Message // no account yet, or the processor's answer
	default:
		out.AccountMsg = "The payment processor could not be asked just now."
	}
	return out, nil
}

func (d *Dashboard) setEarnMode(w http.ResponseWriter, r *http.Request) {
	if _, err := d.cfg.Services.Apps.SetEarnMode(r.Context(), appID(r), r.PostForm.Get("earn_mode")); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/money?done=earnmode", http.StatusSeeOther)
}

// onboard starts (or continues) the payout account's onboarding at the
// payment processor and sends the browser there.
func (d *Dashboard) onboard(w http.ResponseWriter, r *http.Request) {
	o, err := d.cfg.Services.Payments.StartOnboarding(r.Context(), appID(r))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, o.URL, http.StatusSeeOther)
}

// payout transfers the withdrawable amount to the payout account.
func (d *Dashboard) payout(w http.ResponseWriter, r *http.Request) {
	if _, err := d.cfg.Services.Payments.Payout(r.Context(), appID(r)); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/money?done=payout", http.StatusSeeOther)
}
