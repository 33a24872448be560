package conformance

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Auth and scope: the bearer key (seed-api "Authentication"; decisions §4).
func authChecks() []Check {
	return []Check{
		{"protected operations answer 401 with WWW-Authenticate without a valid key", checkUnauthorized},
		{"public operations need no key", checkPublicOperations},
		{"another app's resources answer 404 exactly like missing ones", checkCrossAppNotFound},
		{"another app's campaigns answer 404 exactly like missing ones", checkCrossAppCampaigns},
		{"another app's SDK keys and event chains answer 404 exactly like missing ones", checkCrossAppAttribution},
		{"the admin surface refuses app keys and wrong tokens", checkAdminRefusesAppKeys},
		{"a rotated key keeps the old key working", checkKeyRotation},
	}
}

// protectedCalls are the protected operations of the API, each called for
// the given app id (and a campaign id of that app).
func protectedCalls(c *C, cl *xpromo.Client, appID, campaignID string) map[string]func() error {
	ctx := c.Ctx()
	return map[string]func() error{
		"GET /apps/{app_id}/score": func() error { _, err := cl.GetScore(ctx, appID); return err },
		"POST /apps/{app_id}/top-up": func() error {
			_, err := cl.TopUp(ctx, appID, &xpromo.TopUpParams{AmountCents: 5000})
			return err
		},
		"POST /campaigns": func() error {
			_, err := cl.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{AppID: appID, Categories: []string{"x"}, DailyBudgetCents: 1000})
			return err
		},
		"POST /campaigns/{campaign_id}/pause":  func() error { _, err := cl.PauseCampaign(ctx, campaignID); return err },
		"POST /campaigns/{campaign_id}/resume": func() error { _, err := cl.ResumeCampaign(ctx, campaignID); return err },
		"GET /apps/{app_id}/ledger":            func() error { _, err := cl.GetLedger(ctx, appID, nil); return err },
		"GET /apps/{app_id}/stats":             func() error { _, err := cl.GetStats(ctx, appID, nil); return err },
		"POST /apps/{app_id}/payout":           func() error { _, err := cl.RequestPayout(ctx, appID); return err },
	}
}

func checkUnauthorized(c *C) {
	a := c.NewApp()
	camp := createCampaign(c, a, nil)
	credentials := map[string]*xpromo.Client{
		"no Authorization header": c.Public(),
		"an unknown key":          c.AsApp("xp_test_" + strings.Repeat("0", 32)),
		"a malformed key":         c.AsApp("not a key"),
	}
	for what, cl := range credentials {
		for op, call := range protectedCalls(c, cl, a.ID, camp.CampaignID) {
			e := c.ExpectError(call(), http.StatusUnauthorized, "unauthorized", op+" with "+what)
			_ = e
			if h := c.Last().Header.Get("WWW-Authenticate"); !strings.HasPrefix(strings.ToLower(h), "bearer") {
				c.Errorf("%s with %s: WWW-Authenticate is %q, want a Bearer challenge", op, what, h)
			}
		}
	}
	// A header without the Bearer scheme is no credential either.
	ex := c.Raw("GET", "/v1/apps/"+a.ID+"/score", nil, "Authorization", "Basic "+a.Key)
	if ex.Status != http.StatusUnauthorized {
		c.Errorf("Basic credentials: %s, want 401", ex)
	}
}

func checkPublicOperations(c *C) {
	cl := c.Public()
	_, err := cl.GetRateCard(c.Ctx())
	c.NoError(err, "GET /rate-card without a key")
	_, err = cl.GetNetworkStats(c.Ctx())
	c.NoError(err, "GET /network-stats without a key")
	guide, err := cl.GetIntegrationGuide(c.Ctx())
	c.NoError(err, "GET /integration-guide without a key")
	if ct := c.Last().Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/markdown") {
		c.Errorf("GET /integration-guide: Content-Type %q, want text/markdown", ct)
	}
	if strings.TrimSpace(guide) == "" {
		c.Errorf("GET /integration-guide: empty body")
	}
	// POST /apps needs no key: it issues one (NewApp would fail otherwise).
	c.NewApp()
}

// missingLike returns an id of the same shape as id that names nothing: its
// last characters replaced by random ones. Ids are opaque; this only keeps a
// server that checks an id's shape from answering 400 instead of 404.
func missingLike(id string) string {
	tail := randomHex(6)
	if len(id) <= len(tail) {
		return id + tail
	}
	return id[:len(id)-len(tail)] + tail
}

// sameNotFound calls both and checks both answer 404 not_found with the
// same Error body. crossID and missingID are the ids each call asked for: a
// message may repeat the id it was asked about, which tells nothing, so
// each is replaced by a placeholder before the bodies are compared.
func sameNotFound(c *C, what string, crossID string, cross func() error, missingID string, missing func() error) {
	c.Helper()
	crossErr := cross()
	crossEx := c.Last()
	missingErr := missing()
	missingEx := c.Last()
	c.ExpectError(crossErr, http.StatusNotFound, "not_found", what+" (another app's)")
	c.ExpectError(missingErr, http.StatusNotFound, "not_found", what+" (missing)")
	var a, b any
	crossBody := strings.ReplaceAll(string(crossEx.Body), crossID, "{id}")
	missingBody := strings.ReplaceAll(string(missingEx.Body), missingID, "{id}")
	if json.Unmarshal([]byte(crossBody), &a) != nil || json.Unmarshal([]byte(missingBody), &b) != nil || !reflect.DeepEqual(a, b) {
		c.Errorf("%s: another app's resource is told apart from a missing one:\n  another app's: %s\n  missing:       %s", what, clip(crossEx.Body), clip(missingEx.Body))
	}
}

func checkCrossAppNotFound(c *C) {
	me, other := c.NewApp(), c.NewApp()
	ctx, cl := c.Ctx(), me.Client
	missing := missingLike(other.ID)
	for _, op := range []struct {
		name string
		call func(appID string) error
	}{
		{"GET /apps/{app_id}/score", func(id string) error { _, err := cl.GetScore(ctx, id); return err }},
		{"GET /apps/{app_id}/thresholds", func(id string) error { _, err := cl.GetThresholds(ctx, id); return err }},
		{"GET /apps/{app_id}/ledger", func(id string) error { _, err := cl.GetLedger(ctx, id, nil); return err }},
		{"GET /apps/{app_id}/stats", func(id string) error { _, err := cl.GetStats(ctx, id, nil); return err }},
		{"POST /apps/{app_id}/top-up", func(id string) error {
			_, err := cl.TopUp(ctx, id, &xpromo.TopUpParams{AmountCents: 5000})
			return err
		}},
		{"POST /apps/{app_id}/payout", func(id string) error { _, err := cl.RequestPayout(ctx, id); return err }},
		{"POST /campaigns with its app_id", func(id string) error {
			_, err := cl.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{AppID: id, Categories: []string{someCategory(c)}, DailyBudgetCents: 1000})
			return err
		}},
		{"GET /apps/{app_id}/jobs/{job_id}", func(id string) error {
			_, err := cl.GetJob(ctx, id, other.ScoringJobID)
			return err
		}},
	} {
		sameNotFound(c, op.name,
			other.ID, func() error { return op.call(other.ID) },
			missing, func() error { return op.call(missing) })
	}
	// Another app's job under one's own app id is missing too.
	if other.ScoringJobID != "" {
		missingJob := missingLike(other.ScoringJobID)
		sameNotFound(c, "GET /apps/{own app_id}/jobs/{another app's job_id}",
			other.ScoringJobID, func() error { _, err := cl.GetJob(ctx, me.ID, other.ScoringJobID); return err },
			missingJob, func() error { _, err := cl.GetJob(ctx, me.ID, missingJob); return err })
	}
	// The owner still reads its own resources.
	_, err := other.Client.GetScore(ctx, other.ID)
	c.NoError(err, "the owner reading its score")
}

func checkCrossAppCampaigns(c *C) {
	me, other := c.NewApp(), c.NewApp()
	theirs := createCampaign(c, other, nil)
	ctx := c.Ctx()
	missing := missingLike(theirs.CampaignID)
	sameNotFound(c, "POST /campaigns/{campaign_id}/pause",
		theirs.CampaignID, func() error { _, err := me.Client.PauseCampaign(ctx, theirs.CampaignID); return err },
		missing, func() error { _, err := me.Client.PauseCampaign(ctx, missing); return err })
	sameNotFound(c, "POST /campaigns/{campaign_id}/resume",
		theirs.CampaignID, func() error { _, err := me.Client.ResumeCampaign(ctx, theirs.CampaignID); return err },
		missing, func() error { _, err := me.Client.ResumeCampaign(ctx, missing); return err })
	// Nothing happened to it: its owner pauses it and it was not paused.
	got, err := other.Client.PauseCampaign(ctx, theirs.CampaignID)
	c.NoError(err, "the owner pausing its campaign")
	if got.Status != xpromo.CampaignStatusPaused {
		c.Errorf("owner's pause: status %q, want paused", got.Status)
	}
}

func checkAdminRefusesAppKeys(c *C) {
	a := c.NewApp()
	for what, token := range map[string]string{"an app's API key": a.Key, "a wrong token": "wrong-" + randomHex(16)} {
		cl := c.Public(xpromo.WithAdminToken(token))
		_, err := cl.AdminGetApp(c.Ctx(), a.ID)
		c.ExpectError(err, http.StatusUnauthorized, "unauthorized", "GET /admin/apps/{app_id} with "+what)
		_, err = cl.AdminApproveApp(c.Ctx(), a.ID, "")
		c.ExpectError(err, http.StatusUnauthorized, "unauthorized", "POST /admin/apps/{app_id}/approve with "+what)
	}
	// The app was not approved by any of it.
	s, err := a.Client.GetScore(c.Ctx(), a.ID)
	c.NoError(err, "reading the score")
	if s.Status != xpromo.AppStatusPending {
		c.Errorf("after refused admin calls the app is %q, want pending", s.Status)
	}
}

func checkKeyRotation(c *C) {
	a := c.NewApp()
	rot, err := a.Client.RotateKey(c.Ctx(), a.ID)
	c.NoError(err, "POST /apps/{app_id}/keys/rotate")
	if rot.APIKey == "" || rot.APIKey == a.Key {
		c.Fatalf("rotation answered key %q, want a new key", rot.APIKey)
	}
	if rot.PreviousKeyExpiresAt.IsZero() {
		c.Errorf("rotation answered no previous_key_expires_at")
	}
	_, err = c.AsApp(rot.APIKey).GetScore(c.Ctx(), a.ID)
	c.NoError(err, "the new key reading the score")
	_, err = a.Client.GetScore(c.Ctx(), a.ID)
	c.NoError(err, "the old key, within its 24 hours, reading the score")
}

func checkCrossAppAttribution(c *C) {
	ctx := c.Ctx()
	a := c.WithSDKKey(c.NewApp())
	other := c.NewApp()
	missing := missingLike(a.ID)
	sameNotFound(c, "GET /apps/{app_id}/sdk-keys",
		a.ID, func() error { _, err := other.Client.ListSDKKeys(ctx, a.ID); return err },
		missing, func() error { _, err := other.Client.ListSDKKeys(ctx, missing); return err })
	sameNotFound(c, "POST /apps/{app_id}/sdk-keys/{key_id}/revoke",
		a.ID, func() error { _, err := other.Client.RevokeSDKKey(ctx, a.ID, a.Key.ID); return err },
		missing, func() error { _, err := other.Client.RevokeSDKKey(ctx, missing, a.Key.ID); return err })
	// A chain is its publisher's and its advertiser's only.
	m := c.NewMarket("", 20000)
	in := c.Installed(m.Pub, m.Adv)
	missingChain := missingLike(in.ChainID)
	sameNotFound(c, "GET /chains/{chain_id}",
		in.ChainID, func() error { _, err := other.Client.GetChain(ctx, in.ChainID); return err },
		missingChain, func() error { _, err := other.Client.GetChain(ctx, missingChain); return err })
	// The key was not revoked by the attempt.
	list, err := a.Client.ListSDKKeys(ctx, a.ID)
	c.NoError(err, "listing the keys")
	if len(list.Keys) != 1 || list.Keys[0].RevokedAt != nil {
		c.Errorf("after another app's attempt the keys are %+v, want one, not revoked", list.Keys)
	}
}
