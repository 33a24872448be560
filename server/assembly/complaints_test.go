package assembly_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// TestComplaints: complaints through the HTTP API on both stores (every
// exchange validated against openapi.json).
func TestComplaints(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		a := start(t, openapitest.New(t), s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
		contractComplaints(t, a)
	})
}

// contractComplaints exercises the complaint and earn mode operations, with
// their refusals, for TestContract and TestComplaints.
func contractComplaints(t *testing.T, a *api) {
	t.Helper()
	rep := a.register("Reporter", "com.example.reporter", "")
	bad := a.register("Shady", "com.example.shady", "")
	other := a.register("Bystander", "com.example.bystander", "")
	pendingReg := a.expect(201, a.do("POST", "/v1/apps", "", registration("Newcomer", "com.example.newcomer"))).json(t)
	pending := sdkApp{id: pendingReg["app_id"].(string), key: pendingReg["api_key"].(string)}
	base := func(app sdkApp) string { return "/v1/apps/" + app.id + "/complaints" }
	file := func(from sdkApp, body map[string]any, headers ...string) reply {
		return a.do("POST", base(from), from.key, body, headers...)
	}

	// Earn mode (TestEarnMode has the money side).
	assert.Equal(t, "cash", a.expect(200, a.do("GET", "/v1/apps/"+rep.id+"/earn-mode", rep.key, nil)).json(t)["earn_mode"])
	assert.Equal(t, "credits", a.expect(200, a.do("POST", "/v1/apps/"+rep.id+"/earn-mode", rep.key, map[string]any{"earn_mode": "credits"})).json(t)["earn_mode"])
	assert.Equal(t, "invalid_earn_mode", a.expect(422, a.do("POST", "/v1/apps/"+rep.id+"/earn-mode", rep.key, map[string]any{"earn_mode": "bitcoin"})).code(t))

	// An approved app files a complaint; the retry replays it.
	body := map[string]any{"app_id": bad.id, "reason": "misleading_ad", "detail": "The ad promises a free app; the download asks for payment."}
	first := a.expect(201, file(rep, body, "Idempotency-Key", "complaint-1"))
	c := decode[xpromo.Complaint](t, first)
	assert.Equal(t, rep.id, c.ReporterAppID)
	assert.Equal(t, bad.id, c.AppID)
	assert.Equal(t, xpromo.ComplaintMisleadingAd, c.Reason)
	assert.Equal(t, xpromo.ComplaintOpen, c.Status)
	assert.Nil(t, c.ResolvedAt)
	assert.Nil(t, c.ResolutionNote)
	assert.True(t, strings.HasPrefix(c.ComplaintID, "cmpl_"))
	retry := a.expect(201, file(rep, body, "Idempotency-Key", "complaint-1"))
	assert.JSONEq(t, string(first.Body), string(retry.Body))

	// One open complaint per pair; other pairs are fine.
	assert.Equal(t, "complaint_open", a.expect(409, file(rep, map[string]any{"app_id": bad.id, "reason": "fraud"})).code(t))
	a.expect(201, file(other, map[string]any{"app_id": bad.id, "reason": "malware"}))
	a.expect(201, file(bad, map[string]any{"app_id": rep.id, "reason": "other", "detail": "retaliation"}))

	// Refusals.
	assert.Equal(t, "complaint_not_allowed", a.expect(403, file(rep, map[string]any{"app_id": rep.id, "reason": "fraud"})).code(t))
	assert.Equal(t, "complaint_not_allowed", a.expect(403, file(pending, map[string]any{"app_id": bad.id, "reason": "fraud"})).code(t),
		"a pending app that never traded with it")
	assert.Equal(t, "not_found", a.expect(404, file(rep, map[string]any{"app_id": "app_nope", "reason": "fraud"})).code(t))
	assert.Equal(t, "not_found", a.expect(404, a.do("POST", base(rep), other.key, map[string]any{"app_id": bad.id, "reason": "fraud"})).code(t))
	assert.Equal(t, "invalid_complaint_reason", a.expect(422, file(rep, map[string]any{"app_id": other.id, "reason": "rude"})).code(t))
	assert.Equal(t, "missing_field", a.expect(422, file(rep, map[string]any{"app_id": other.id})).code(t))
	assert.Equal(t, "too_long", a.expect(422, file(rep, map[string]any{"app_id": other.id, "reason": "other", "detail": strings.Repeat("x", 2001)})).code(t))
	assert.Equal(t, "invalid_characters", a.expect(422, file(rep, map[string]any{"app_id": other.id, "reason": "other", "detail": "line\nbreak"})).code(t))

	// A pending app that traded with the app may complain: a chain links
	// them (here written straight to the store: a pending app cannot trade
	// through the API, but a rejected-then-reviewed one may have).
	require.NoError(t, a.store.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		now := a.clock.Now()
		_, err := tx.InsertChain(ctx, attribution.Chain{ID: "ch_complaint", Nonce: "n_complaint", State: attribution.StateClicked,
			PublisherAppID: bad.id, AdvertiserAppID: pending.id, Platform: xpromo.PlatformMac, CreatedAt: now, UpdatedAt: now})
		return err
	}))
	a.expect(201, file(pending, map[string]any{"app_id": bad.id, "reason": "broken_install"}))

	// The reporter lists its own complaints, newest first.
	mine := decode[xpromo.ComplaintPage](t, a.expect(200, a.do("GET", base(rep)+"?limit=10", rep.key, nil)))
	require.Len(t, mine.Complaints, 1)
	assert.Equal(t, c.ComplaintID, mine.Complaints[0].ComplaintID)
	assert.Equal(t, "invalid_limit", a.expect(422, a.do("GET", base(rep)+"?limit=0", rep.key, nil)).code(t))
	assert.Equal(t, "not_found", a.expect(404, a.do("GET", base(rep), other.key, nil)).code(t))

	// Operators see the queue and resolve.
	open := decode[xpromo.ComplaintPage](t, a.expect(200, a.do("GET", "/v1/admin/complaints?status=open", adminToken, nil)))
	assert.Len(t, open.Complaints, 4)
	assert.Equal(t, "invalid_resolution", a.expect(422, a.do("GET", "/v1/admin/complaints?status=closed", adminToken, nil)).code(t))
	a.expect(401, a.do("GET", "/v1/admin/complaints", rep.key, nil))
	resolve := "/v1/admin/complaints/" + c.ComplaintID + "/resolve"
	assert.Equal(t, "invalid_resolution", a.expect(422, a.do("POST", resolve, adminToken, map[string]any{"resolution": "maybe"})).code(t))
	assert.Equal(t, "not_found", a.expect(404, a.do("POST", "/v1/admin/complaints/cmpl_nope/resolve", adminToken, map[string]any{"resolution": "upheld"})).code(t))
	done := decode[xpromo.Complaint](t, a.expect(200, a.do("POST", resolve, adminToken, map[string]any{"resolution": "upheld", "note": "the store page confirms it"})))
	assert.Equal(t, xpromo.ComplaintUpheld, done.Status)
	require.NotNil(t, done.ResolvedAt)
	require.NotNil(t, done.ResolutionNote)
	assert.Equal(t, "the store page confirms it", *done.ResolutionNote)
	assert.Equal(t, "complaint_resolved", a.expect(409, a.do("POST", resolve, adminToken, map[string]any{"resolution": "dismissed"})).code(t))
	retaliation := decode[xpromo.ComplaintPage](t, a.expect(200, a.do("GET", base(bad), bad.key, nil))).Complaints[0]
	a.expect(200, a.do("POST", "/v1/admin/complaints/"+retaliation.ComplaintID+"/resolve", adminToken, map[string]any{"resolution": "dismissed"}))

	// The reporter sees the resolution; once resolved, it may complain again.
	mine = decode[xpromo.ComplaintPage](t, a.expect(200, a.do("GET", base(rep), rep.key, nil)))
	assert.Equal(t, done, mine.Complaints[0])
	a.expect(201, file(rep, map[string]any{"app_id": bad.id, "reason": "fraud"}))
	upheld := decode[xpromo.ComplaintPage](t, a.expect(200, a.do("GET", "/v1/admin/complaints?status=upheld&limit=5", adminToken, nil)))
	require.Len(t, upheld.Complaints, 1)
	assert.Equal(t, done, upheld.Complaints[0])

	// The resolution is audited.
	audit := decode[xpromo.AuditPage](t, a.expect(200, a.do("GET", "/v1/admin/audit?limit=2", adminToken, nil)))
	require.Len(t, audit.Entries, 2)
	e := audit.Entries[1] // newest first: the dismissal, then this one
	assert.Equal(t, "complaint.resolve", e.Action)
	assert.Equal(t, c.ComplaintID, e.Subject)
	var detail map[string]string
	require.NoError(t, json.Unmarshal(e.Detail, &detail))
	assert.Equal(t, map[string]string{"resolution": "upheld", "app_id": bad.id, "reporter_app_id": rep.id, "reason": "misleading_ad", "note": "the store page confirms it"}, detail)

	// Upheld complaints are counted per app (the behaviour score's signal).
	svc := &complaints.Service{Update: storage.Updater[complaints.Tx](a.store), View: storage.Viewer[complaints.Tx](a.store), Now: a.clock.Now}
	for app, want := range map[string]int{bad.id: 1, rep.id: 0, other.id: 0} {
		n, err := svc.Upheld(context.Background(), app)
		require.NoError(t, err)
		assert.Equal(t, want, n, app)
	}
}
