package dashboard

import (
	"net/http"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/reputation"
)

// The score screen: the vetting gate's five checks, each with what fixes
// it and a recheck, the reputation with its weights, and the behaviour
// signals.

type gateCheck struct {
	Name, Label, Fix string
	OK               bool
}

type repSignal struct {
	Label         string
	Value, Weight int
}

type scoreData struct {
	Score      xpromo.Score
	Checks     []gateCheck
	Signals    []repSignal
	RecheckKey string
	// Thresholds: how close the app is to the go-live bar and each
	// suspension bar (GET /v1/apps/{app_id}/thresholds); nil when the
	// server runs without the lifecycle service.
	Thresholds *xpromo.Thresholds
}

// fixes say what makes each failing check pass (docs/gate.md).
func gateChecks(g xpromo.Gate) []gateCheck {
	return []gateCheck{
		{"signed", "Signed", "Sign the build: a Developer ID–signed and notarised .app, zipped or in a .dmg, or a Developer ID Installer–signed .pkg (macOS); an Authenticode-signed .exe, .msi or .msix (Windows), at the download URL.", g.Signed},
		{"malware_clean", "Malware scan clean", "The scanner found a threat or could not read the file: ship a clean build; the reason codes say which.", g.MalwareClean},
		{"domain_age_ok", "Domain age", "The domain must be registered for long enough (RDAP): use the domain your app has had longest.", g.DomainAgeOK},
		{"contact_verified", "Contact verified", "Open the link, or enter the code, of the mail sent to the contact address (POST /v1/apps/{app_id}/contact/resend sends it again).", g.ContactVerified},
		{"bundle_match", "Bundle id matches", "The bundle id (or package identity) in the downloaded build must be the one registered.", g.BundleMatch},
	}
}

func (d *Dashboard) score(w http.ResponseWriter, r *http.Request) {
	sc, err := d.cfg.Services.Apps.Score(r.Context(), appID(r))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	rep := sc.Reputation
	data := scoreData{Score: sc, Checks: gateChecks(sc.Gate), RecheckKey: newFormKey(), Signals: []repSignal{
		{"AI visibility", rep.AIVisibility, reputation.WeightAIVisibility},
		{"Release cadence", rep.Cadence, reputation.WeightCadence},
		{"Reviews", rep.Reviews, reputation.WeightReviews},
		{"Coherence", rep.Coherence, reputation.WeightCoherence},
	}}
	if lc := d.cfg.Services.Lifecycle; lc != nil {
		th, err := lc.Thresholds(r.Context(), appID(r))
		if err != nil {
			d.fail(w, r, err)
			return
		}
		data.Thresholds = &th
	}
	d.render(w, r, http.StatusOK, "score", viewOf("Score", "score", data))
}

// recheck queues the gate again (after a fix).
func (d *Dashboard) recheck(w http.ResponseWriter, r *http.Request) {
	if _, err := d.cfg.Services.Gate.Recheck(r.Context(), appID(r)); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/score?done=recheck", http.StatusSeeOther)
}
