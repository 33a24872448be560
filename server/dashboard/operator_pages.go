package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/cursor"
)

// The operators' screens: the review queue, an app's record with its
// decisions, the complaints, the audit log, the network's figures and, in
// test mode, the clock and the sweep.

type reviewData struct {
	Status   string
	Statuses []string
	Apps     []apps.App
	Next     string
}

// review lists apps by status, oldest first: ?status=pending (the default)
// is the review queue.
func (d *Dashboard) review(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	if !v.Has("status") {
		v.Set("status", string(xpromo.AppStatusPending))
	}
	if v.Get("status") == "" {
		v.Del("status") // every status
	}
	if v.Get("cursor") == "" {
		v.Del("cursor")
	}
	q, err := apps.ParseAppQuery(v)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	page, err := d.cfg.Services.Apps.ListApps(r.Context(), q)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := reviewData{Status: string(q.Status), Apps: page.Apps,
		Statuses: []string{"pending", "approved", "throttled", "live", "suspended", "rejected"}}
	if page.Next != "" {
		data.Next = url.Values{"status": {string(q.Status)}, "cursor": {page.Next}}.Encode()
	}
	title := "Review queue"
	if q.Status != xpromo.AppStatusPending {
		title = "Apps"
	}
	d.render(w, r, http.StatusOK, "review", view{Title: title, Active: "review", Data: data})
}

type operatorAppData struct {
	View       apps.AppView
	Actions    []actionForm
	Complaints []complaints.Complaint
}

type actionForm struct {
	Action, Label  string
	NeedsReason    bool
	IdempotencyKey string
}

// actionsFor are the operator actions the app's status allows (apps'
// transitions), each a form.
func actionsFor(status xpromo.AppStatus) []actionForm {
	var out []actionForm
	add := func(a apps.Action, label string, reason bool) {
		out = append(out, actionForm{Action: string(a), Label: label, NeedsReason: reason, IdempotencyKey: newFormKey()})
	}
	switch status {
	case xpromo.AppStatusPending:
		add(apps.Approve, "Approve", false)
		add(apps.Reject, "Reject", true)
	case xpromo.AppStatusApproved, xpromo.AppStatusThrottled, xpromo.AppStatusLive:
		add(apps.Suspend, "Suspend", true)
	case xpromo.AppStatusSuspended:
		add(apps.Reinstate, "Reinstate", false)
	case xpromo.AppStatusRejected:
		add(apps.Review, "Review again (runs the gate again)", false)
	}
	return out
}

func (d *Dashboard) operatorApp(w http.ResponseWriter, r *http.Request) {
	view, err := d.cfg.Services.Apps.AppView(r.Context(), chi.URLParam(r, "app_id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := operatorAppData{View: view, Actions: actionsFor(view.App.Status)}
	d.render(w, r, http.StatusOK, "operator_app", viewOf("App "+view.App.Name, "review", data))
}

func viewOf(title, active string, data any) view {
	return view{Title: title, Active: active, Data: data}
}

// maxReasonBytes bounds a decision's reason (the API's reason field's
// bound is larger; a form's is kept short).
const maxReasonBytes = 1000

// act applies an operator action to an app (approve, reject with a
// reason, …) and goes back to the app's page.
func (d *Dashboard) act(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "app_id")
	action := apps.Action(r.PostForm.Get("action"))
	reason := r.PostForm.Get("reason")
	if len(reason) > maxReasonBytes {
		d.renderError(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("The reason is longer than %d bytes.", maxReasonBytes))
		return
	}
	if _, err := d.cfg.Services.Apps.Act(r.Context(), id, action, reason); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/operator/apps/"+url.PathEscape(id)+"?done="+string(action), http.StatusSeeOther)
}

type complaintsData struct {
	Status   string
	Statuses []string
	Rows     []complaintRow
	Next     string
}

type complaintRow struct {
	complaints.Complaint
	IdempotencyKey string
}

func (d *Dashboard) operatorComplaints(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	if !v.Has("status") {
		v.Set("status", string(complaints.Open))
	}
	status := v.Get("status")
	after, err := parseCursor(v.Get("cursor"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	list, next, err := d.cfg.Services.Complaints.List(r.Context(), status, after, 50)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := complaintsData{Status: status, Statuses: []string{"open", "upheld", "dismissed"}}
	for _, c := range list {
		data.Rows = append(data.Rows, complaintRow{Complaint: c, IdempotencyKey: newFormKey()})
	}
	if next != "" {
		data.Next = url.Values{"status": {status}, "cursor": {next}}.Encode()
	}
	d.render(w, r, http.StatusOK, "complaints", viewOf("Complaints", "complaints", data))
}

// parseCursor reads a list's cursor ("" is the first page).
func parseCursor(s string) (*cursor.Position, error) {
	if s == "" {
		return nil, nil
	}
	p, err := cursor.Decode(s)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

func (d *Dashboard) resolveComplaint(w http.ResponseWriter, r *http.Request) {
	note := r.PostForm.Get("note")
	if len(note) > maxReasonBytes {
		d.renderError(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("The note is longer than %d bytes.", maxReasonBytes))
		return
	}
	if _, err := d.cfg.Services.Complaints.Resolve(r.Context(), chi.URLParam(r, "complaint_id"), r.PostForm.Get("resolution"), note); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/operator/complaints?done=resolved", http.StatusSeeOther)
}

type auditData struct {
	Entries []apps.AuditEntry
	Next    string
}

func (d *Dashboard) audit(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	if v.Get("cursor") == "" {
		v.Del("cursor")
	}
	q, err := apps.ParseAuditQuery(v)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	page, err := d.cfg.Services.Apps.Audit(r.Context(), q)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := auditData{Entries: page.Entries}
	if page.Next != "" {
		data.Next = url.Values{"cursor": {page.Next}}.Encode()
	}
	d.render(w, r, http.StatusOK, "audit", viewOf("Audit log", "audit", data))
}

type networkData struct {
	Stats    xpromo.NetworkStats
	RateCard xpromo.RateCard
	TestMode bool
	Clock    time.Time
	Offset   time.Duration
	ClockKey string
	SweepKey string
}

func (d *Dashboard) network(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	stats, err := d.cfg.Services.Market.NetworkStats(ctx)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	card, err := d.cfg.Services.Market.RateCard(ctx)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := networkData{Stats: stats, RateCard: card, TestMode: d.testClock(), ClockKey: newFormKey(), SweepKey: newFormKey()}
	if c := d.cfg.Services.Clock; c != nil {
		data.Clock, data.Offset = c.Now(), c.Offset()
	}
	d.render(w, r, http.StatusOK, "network", viewOf("Network", "network", data))
}

func (d *Dashboard) testClock() bool {
	c := d.cfg.Services.Clock
	return c != nil && c.TestMode()
}

// maxAdvanceHours bounds one advance of the test clock from the form.
const maxAdvanceHours = 24 * 366

func (d *Dashboard) advanceClock(w http.ResponseWriter, r *http.Request) {
	if !d.testClock() {
		d.fail(w, r, apperr.New(apperr.TestModeOnly, "the clock moves only in test mode"))
		return
	}
	hours, err := strconv.Atoi(r.PostForm.Get("hours"))
	if err != nil || hours < 1 || hours > maxAdvanceHours {
		d.renderError(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("Hours must be a whole number from 1 to %d.", maxAdvanceHours))
		return
	}
	if _, _, err := d.cfg.Services.Clock.Advance(r.Context(), time.Duration(hours)*time.Hour); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/operator/network?done=clock", http.StatusSeeOther)
}

func (d *Dashboard) sweep(w http.ResponseWriter, r *http.Request) {
	if !d.testClock() {
		d.fail(w, r, apperr.New(apperr.TestModeOnly, "the sweep runs by hand only in test mode"))
		return
	}
	res, err := d.cfg.Services.Attribution.Sweep(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	q := url.Values{"done": {"sweep"}, "cleared": {strconv.Itoa(res.Cleared)}, "refunded": {strconv.Itoa(res.Refunded)}, "failed": {strconv.Itoa(res.Failed)}}
	http.Redirect(w, r, Prefix+"/operator/network?"+q.Encode(), http.StatusSeeOther)
}
