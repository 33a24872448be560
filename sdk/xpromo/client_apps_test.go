package xpromo_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

const appJSON = `{"app_id":"app_1","name":"Clipper","platform":"win","bundle_id":"com.example.clipper","domain":"example.com",
"download_url":"https://example.com/Clipper.exe","contact_email":"dev@example.com","category":null,"appcast_url":%s,
"status":"suspended","earn_mode":"cash","created_at":"2026-11-21T09:00:00Z","updated_at":"2026-11-21T10:00:00Z"%s}`

// TestAppCalls: GetApp reads the app; UpdateApp sends appcast_url as a
// string, null to remove it, and {} for nil params (which the server
// refuses), never null by accident.
func TestAppCalls(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.Method + " " + r.URL.Path {
		case "GET /v1/apps/app_1":
			writeJSON(w, 200, fmt.Sprintf(appJSON, `"https://example.com/appcast.xml"`, ""))
		case "PATCH /v1/apps/app_1":
			writeJSON(w, 200, fmt.Sprintf(appJSON, `null`, `,"scoring_job_id":"job_1"`))
		default:
			writeJSON(w, 404, `{"error":{"code":"not_found","message":"app not found","retry_after":null}}`)
		}
	})
	c := f.client()
	ctx := context.Background()

	app, err := c.GetApp(ctx, "app_1")
	if err != nil || app.AppcastURL == nil || *app.AppcastURL != "https://example.com/appcast.xml" || app.Category != nil ||
		app.Status != xpromo.AppStatusSuspended || app.UpdatedAt.Hour() != 10 {
		t.Fatalf("GetApp = %+v, %v", app, err)
	}
	upd, err := c.UpdateApp(ctx, "app_1", &xpromo.UpdateAppRequest{AppcastURL: xpromo.String("https://example.com/new.xml")})
	if err != nil || upd.ScoringJobID == nil || *upd.ScoringJobID != "job_1" || upd.AppID != "app_1" || upd.AppcastURL != nil {
		t.Fatalf("UpdateApp = %+v, %v", upd, err)
	}
	if _, err := c.UpdateApp(ctx, "app_1", &xpromo.UpdateAppRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateApp(ctx, "app_1", nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetApp(ctx, "app_2")
	var e *xpromo.Error
	if !errors.As(err, &e) || e.Code != "not_found" {
		t.Errorf("another app: %v", err)
	}

	reqs := f.requests()
	want := []struct{ method, path, body string }{
		{"GET", "/v1/apps/app_1", ""},
		{"PATCH", "/v1/apps/app_1", `{"appcast_url":"https://example.com/new.xml"}`},
		{"PATCH", "/v1/apps/app_1", `{"appcast_url":null}`},
		{"PATCH", "/v1/apps/app_1", `{}`},
		{"GET", "/v1/apps/app_2", ""},
	}
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d", len(reqs), len(want))
	}
	for i, w := range want {
		if r := reqs[i]; r.Method != w.method || r.Path != w.path || r.Body != w.body {
			t.Errorf("request %d = %s %s %s, want %s %s %s", i, r.Method, r.Path, r.Body, w.method, w.path, w.body)
		}
	}
	if reqs[1].Header.Get("Idempotency-Key") != "" {
		t.Error("PATCH sends no Idempotency-Key: a repeat changes nothing")
	}
}
