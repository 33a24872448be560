package conformance

import (
	"encoding/json"
	"net/http"
	"regexp"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Apps and score: registration, the key it issues, the scoring job, the
// Score resource and the operator's approval (seed-api "POST /apps",
// "Score"; decisions §4, §6).
func appChecks() []Check {
	return []Check{
		{"registration answers 201 pending with a key and a scoring job", checkRegistration},
		{"the scoring job resolves", checkScoringJob},
		{"a new app's score has every documented field", checkNewScore},
		{"operators approve and reject through the admin surface", checkApproval},
	}
}

// apiKeyPattern: xp_live_ or xp_test_ and 32 base62 characters.
var apiKeyPattern = regexp.MustCompile(`^xp_(live|test)_[0-9A-Za-z]{32}$`)

func checkRegistration(c *C) {
	for _, platform := range []xpromo.Platform{xpromo.PlatformMac, xpromo.PlatformWin} {
		resp, err := c.Public().RegisterApp(c.Ctx(), Registration(platform))
		c.NoError(err, "registration of a "+string(platform)+" app")
		ex := c.Last()
		if ex.Status != http.StatusCreated {
			c.Errorf("registration: status %d, want 201", ex.Status)
		}
		requireKeys(c, "RegisterAppResponse", ex.JSON(c), "app_id", "api_key", "status", "scoring_job_id")
		if resp.Status != xpromo.AppStatusPending {
			c.Errorf("registration: status %q, want pending", resp.Status)
		}
		if !apiKeyPattern.MatchString(resp.APIKey) {
			c.Errorf("registration: api_key %q is not xp_live_/xp_test_ and 32 base62 characters", resp.APIKey)
		}
		if resp.AppID == "" || resp.ScoringJobID == "" {
			c.Errorf("registration: app_id %q, scoring_job_id %q; want both", resp.AppID, resp.ScoringJobID)
		}
		// The key works at once.
		_, err = c.AsApp(resp.APIKey).GetScore(c.Ctx(), resp.AppID)
		c.NoError(err, "the issued key reading the score")
	}
	// Two registrations are two apps with two keys.
	a, b := c.NewApp(), c.NewApp()
	if a.ID == b.ID || a.Key == b.Key {
		c.Errorf("two registrations answered the same app or key: %s/%s", a.ID, b.ID)
	}
}

func checkScoringJob(c *C) {
	a := c.NewApp()
	job, err := a.Client.GetJob(c.Ctx(), a.ID, a.ScoringJobID)
	c.NoError(err, "GET /apps/{app_id}/jobs/{scoring_job_id}")
	if job.JobID != a.ScoringJobID {
		c.Errorf("job_id %q, want %q", job.JobID, a.ScoringJobID)
	}
	if job.Kind != xpromo.JobScoring {
		c.Errorf("kind %q, want scoring", job.Kind)
	}
	switch job.Status {
	case xpromo.JobQueued, xpromo.JobRunning, xpromo.JobSucceeded, xpromo.JobFailed:
	default:
		c.Errorf("status %q is not a job status", job.Status)
	}
}

func checkNewScore(c *C) {
	a := c.NewApp()
	s, err := a.Client.GetScore(c.Ctx(), a.ID)
	c.NoError(err, "score")
	body := c.Last().JSON(c)
	requireKeys(c, "Score", body, "status", "gate", "reputation", "behavior", "reasons", "next_review_at")
	if gate, ok := body["gate"].(map[string]any); ok {
		for _, k := range []string{"signed", "malware_clean", "domain_age_ok", "contact_verified", "bundle_match"} {
			if _, ok := gate[k].(bool); !ok {
				c.Errorf("Score.gate.%s is %v, want a boolean", k, gate[k])
			}
		}
	} else {
		c.Errorf("Score.gate is not an object")
	}
	if rep, ok := body["reputation"].(map[string]any); ok {
		for _, k := range []string{"total", "ai_visibility", "cadence", "reviews", "coherence"} {
			n, ok := rep[k].(float64)
			if !ok || n != float64(int(n)) || n < 0 || n > 100 {
				c.Errorf("Score.reputation.%s is %v, want an integer from 0 to 100", k, rep[k])
			}
		}
	} else {
		c.Errorf("Score.reputation is not an object")
	}
	if _, ok := body["reasons"].([]any); !ok {
		c.Errorf("Score.reasons is %v, want an array", body["reasons"])
	}
	if s.Status != xpromo.AppStatusPending {
		c.Errorf("a new app's status is %q, want pending", s.Status)
	}
	// behavior replaces reputation only after 500 installs traded.
	if s.Behavior != nil {
		c.Errorf("a new app's behavior is %+v, want null", *s.Behavior)
	}
	if s.NextReviewAt.IsZero() {
		c.Errorf("next_review_at is missing")
	}
}

func checkApproval(c *C) {
	admin := c.Admin()
	ctx := c.Ctx()
	a := c.NewApp()
	_, err := admin.AdminApproveApp(ctx, a.ID, "conformance")
	c.NoError(err, "approving")
	s, err := a.Client.GetScore(ctx, a.ID)
	c.NoError(err, "score")
	if s.Status != xpromo.AppStatusApproved {
		c.Errorf("after approval the status is %q, want approved", s.Status)
	}
	_, err = admin.AdminApproveApp(ctx, a.ID, "again")
	c.ExpectError(err, http.StatusConflict, "invalid_transition", "approving an approved app")

	r := c.NewApp()
	_, err = admin.AdminRejectApp(ctx, r.ID, "gate_unsigned_binary")
	c.NoError(err, "rejecting")
	s, err = r.Client.GetScore(ctx, r.ID)
	c.NoError(err, "a rejected app still reads its score")
	if s.Status != xpromo.AppStatusRejected {
		c.Errorf("after rejection the status is %q, want rejected", s.Status)
	}
	if len(s.Reasons) == 0 {
		c.Errorf("a rejected app's score gives no reasons")
	}
	_, err = admin.AdminGetApp(ctx, missingLike(r.ID))
	c.ExpectError(err, http.StatusNotFound, "not_found", "the admin view of a missing app")
}

// requireKeys checks the JSON object has every key (null values count).
func requireKeys(c *C, what string, obj map[string]any, keys ...string) {
	c.Helper()
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			raw, _ := json.Marshal(obj)
			c.Errorf("%s has no %q: %s", what, k, clip(raw))
		}
	}
}
