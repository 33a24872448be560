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
		})
	})
}
