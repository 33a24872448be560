package dashboard_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// The score screen shows the API's gate checks and reputation, and its
// recheck answers as the API's does.
func TestScoreScreen(t *testing.T) {
	s := newStack(t, storagetest.SQLite(t))
	id, key := s.app("Clip")
	b := s.browser()
	b.signIn(key)
	page := b.get("/dashboard/score")
	require.Equal(t, http.StatusOK, page.StatusCode, page.Body)
	var score struct {
		Status     string `json:"status"`
		Reputation struct {
			Total int `json:"total"`
		} `json:"reputation"`
	}
	require.Equal(t, 200, s.api("GET", "/v1/apps/"+id+"/score", key, nil, &score))
	assert.Contains(t, page.Body, "Status: <strong>"+score.Status+"</strong>")
	assert.Contains(t, page.Body, "Reputation: ")
	for _, check := range []string{"signed", "malware_clean", "domain_age_ok", "contact_verified", "bundle_match"} {
		assert.Contains(t, page.Body, "<code>"+check+"</code>")
	}
	// Each lifecycle threshold the API reports is a row with its state.
	var th struct {
		Thresholds []struct {
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"thresholds"`
	}
	require.Equal(t, 200, s.api("GET", "/v1/apps/"+id+"/thresholds", key, nil, &th))
	require.NotEmpty(t, th.Thresholds)
	for _, x := range th.Thresholds {
		assert.Regexp(t, `data-threshold="`+x.Name+`">.*?<strong>`+x.State+`</strong>`, page.Body)
	}
	p := b.post("/dashboard/score/recheck", url.Values{"idempotency_key": {page.formKeyFor(t, "/dashboard/score/recheck")}})
	var refusal struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	status := s.api("POST", "/v1/apps/"+id+"/gate/recheck", key, nil, &refusal)
	if status < 300 {
		assert.Equal(t, http.StatusSeeOther, p.StatusCode, p.Body)
	} else {
		assert.Equal(t, status, p.StatusCode, p.Body)
		assert.Contains(t, p.Body, refusal.Error.Code)
	}
}
