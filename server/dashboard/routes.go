package dashboard

import (
	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/server/dashboard/session"
)

func (d *Dashboard) routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(d.withSession)
		r.Get("/", d.home)
		r.Get("/sign-in", d.signInPage)
		r.Post("/sign-in", d.signIn)
		r.Post("/sign-out", d.signOut)

		r.Group(func(r chi.Router) {
			r.Use(d.requireRole(session.RoleApp))
			r.Get("/installs", d.installs)
			r.Get("/installs/{chain_id}", d.chainDetail)
			r.Get("/money", d.money)
			r.Get("/money/ledger.csv", d.ledgerCSV)
			r.With(d.idempotentForm).Post("/money/top-up", d.topUp)
			r.With(d.idempotentForm).Post("/money/earn-mode", d.setEarnMode)
			r.With(d.idempotentForm).Post("/money/payout-account", d.onboard)
			r.With(d.idempotentForm).Post("/money/payout", d.payout)
			r.Get("/score", d.score)
			r.With(d.idempotentForm).Post("/score/recheck", d.recheck)
			r.Get("/developers", d.developers)
			r.With(d.idempotentForm).Post("/developers/keys/rotate", d.rotateKey)
			r.With(d.idempotentForm).Post("/developers/webhooks", d.createEndpoint)
			r.Get("/developers/webhooks/{endpoint_id}", d.endpoint)
			r.With(d.idempotentForm).Post("/developers/webhooks/{endpoint_id}/redeliver", d.redeliver)
			r.Get("/campaigns", d.campaigns)
			r.With(d.idempotentForm).Post("/campaigns", d.createCampaign)
			r.Get("/campaigns/{campaign_id}", d.campaign)
			r.With(d.idempotentForm).Post("/campaigns/{campaign_id}", d.updateCampaign)
			r.With(d.idempotentForm).Post("/campaigns/{campaign_id}/pause", d.pauseCampaign)
			r.With(d.idempotentForm).Post("/campaigns/{campaign_id}/resume", d.resumeCampaign)
		})

		r.Group(func(r chi.Router) {
			r.Use(d.requireRole(session.RoleOperator))
			r.Get("/operator/review", d.review)
			r.Get("/operator/apps/{app_id}", d.operatorApp)
			r.With(d.idempotentForm).Post("/operator/apps/{app_id}/actions", d.act)
			r.Get("/operator/complaints", d.operatorComplaints)
			r.With(d.idempotentForm).Post("/operator/complaints/{complaint_id}/resolve", d.resolveComplaint)
			r.Get("/operator/audit", d.audit)
			r.Get("/operator/network", d.network)
			r.With(d.idempotentForm).Post("/operator/clock/advance", d.advanceClock)
			r.With(d.idempotentForm).Post("/operator/sweep", d.sweep)
		})
	})
}
