package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// formKeyFor is the idempotency key of the form posting to action.
func (p page) formKeyFor(t *testing.T, action string) string {
	t.Helper()
	re := regexp.MustCompile(`(?s)<form method="post" action="` + regexp.QuoteMeta(action) + `"[^>]*>\s*<input type="hidden" name="idempotency_key" value="([^"]+)"`)
	m := re.FindStringSubmatch(p.Body)
	require.NotNil(t, m, "no form to %s", action)
	return m[1]
}

// An operator approves the oldest app of the review queue, rejects another
// with a reason, and resolves a complaint, all in the browser.
func TestOperatorReviewQueueAndComplaints(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, store storage.Store) {
		s := newStack(t, store)
		first, _ := s.pendingApp("First")
		s.clock.Add(time.Minute)
		second, _ := s.pendingApp("Second")
		reporter, reporterKey := s.app("Reporter")

		op := s.browser()
		op.signIn(adminToken)
		queue := op.get("/dashboard/operator/review")
		require.Equal(t, http.StatusOK, queue.StatusCode)
		assert.Less(t, strings.Index(queue.Body, first), strings.Index(queue.Body, second), "oldest first")
		assert.NotContains(t, queue.Body, reporter, "approved apps are not in the queue")

		detail := op.get("/dashboard/operator/apps/" + first)
		require.Equal(t, http.StatusOK, detail.StatusCode)
		action := "/dashboard/operator/apps/" + first + "/actions"
		form := url.Values{"idempotency_key": {detail.formKeyFor(t, action)}, "action": {"approve"}, "reason": {"looks fine"}}
		p := op.post(action, form)
		require.Equal(t, http.StatusSeeOther, p.StatusCode, p.Body)
		// A double click is one decision.
		require.Equal(t, "true", op.post(action, form).Header.Get("Idempotent-Replayed"))
		detail = op.get(p.Header.Get("Location"))
		assert.Contains(t, detail.Body, "Approved.")
		assert.Contains(t, detail.Body, "<td>approved</td><td>admin</td><td>looks fine</td>")

		// A rejection needs its reason.
		detail = op.get("/dashboard/operator/apps/" + second)
		rejectKey := regexp.MustCompile(`name="idempotency_key" value="([^"]+)">\s*<input type="hidden" name="action" value="reject">`).FindStringSubmatch(detail.Body)
		require.NotNil(t, rejectKey)
		p = op.post("/dashboard/operator/apps/"+second+"/actions", url.Values{"idempotency_key": {rejectKey[1]}, "action": {"reject"}})
		assert.Equal(t, http.StatusUnprocessableEntity, p.StatusCode)
		queue = op.get("/dashboard/operator/review")
		assert.NotContains(t, queue.Body, first)
		assert.Contains(t, queue.Body, second)

		// The API agrees.
		var got struct {
			Status string `json:"status"`
		}
		require.Equal(t, 200, s.api("GET", "/v1/admin/apps/"+first, adminToken, nil, &got))
		assert.Equal(t, "approved", got.Status)

		// A complaint, resolved from the complaints screen.
		var complaint struct {
			ID string `json:"complaint_id"`
		}
		require.Equal(t, 201, s.api("POST", "/v1/apps/"+reporter+"/complaints", reporterKey,
			map[string]string{"app_id": first, "reason": "misleading_ad", "detail": "says free, is not"}, &complaint))
		require.NotEmpty(t, complaint.ID)
		list := op.get("/dashboard/operator/complaints")
		assert.Contains(t, list.Body, "says free, is not")
		resolve := "/dashboard/operator/complaints/" + complaint.ID + "/resolve"
		p = op.post(resolve, url.Values{"idempotency_key": {list.formKeyFor(t, resolve)}, "resolution": {"upheld"}, "note": {"checked"}})
		require.Equal(t, http.StatusSeeOther, p.StatusCode, p.Body)
		assert.NotContains(t, op.get("/dashboard/operator/complaints").Body, "says free, is not", "no longer open")
		assert.Contains(t, op.get("/dashboard/operator/complaints?status=upheld").Body, "upheld: checked")

		// Both decisions are in the audit log.
		audit := op.get("/dashboard/operator/audit")
		assert.Contains(t, audit.Body, first)
		assert.Contains(t, audit.Body, complaint.ID)

		// An app's session cannot reach the operator's pages.
		app := s.browser()
		app.signIn(reporterKey)
		assert.Equal(t, "/dashboard/sign-in", app.get("/dashboard/operator/review").Header.Get("Location"))
		p = app.post(action, url.Values{"idempotency_key": {"x"}, "action": {"suspend"}, "reason": {"x"}})
		assert.Equal(t, http.StatusForbidden, p.StatusCode)
	})
}

func TestOperatorTestClockAndSweep(t *testing.T) {
	s := newStack(t, storagetest.SQLite(t))
	op := s.browser()
	op.signIn(adminToken)
	page := op.get("/dashboard/operator/network")
	require.Equal(t, http.StatusOK, page.StatusCode)
	assert.Contains(t, page.Body, "Rate card and floors")
	before := s.srv.Clock.Now()
	p := op.post("/dashboard/operator/clock/advance", url.Values{"idempotency_key": {page.formKeyFor(t, "/dashboard/operator/clock/advance")}, "hours": {"48"}})
	require.Equal(t, http.StatusSeeOther, p.StatusCode, p.Body)
	assert.Equal(t, 48*time.Hour, s.srv.Clock.Now().Sub(before))
	p = op.post("/dashboard/operator/sweep", url.Values{"idempotency_key": {page.formKeyFor(t, "/dashboard/operator/sweep")}})
	require.Equal(t, http.StatusSeeOther, p.StatusCode, p.Body)
	assert.Contains(t, op.get(p.Header.Get("Location")).Body, "Sweep done: 0 cleared, 0 refunded, 0 failed.")
}
