package conformance

import (
	"bytes"
	"net/http"
	"strings"
	"sync"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Idempotency: every POST accepts Idempotency-Key (decisions §10).
func idempotencyChecks() []Check {
	return []Check{
		{"the same key and body replay the stored answer", checkIdempotentReplay},
		{"the same key with another body answers 422 idempotency_key_reused", checkIdempotencyKeyReused},
		{"concurrent requests with one key run once", checkIdempotencyConcurrent},
		{"keys are scoped to the caller", checkIdempotencyScope},
		{"a malformed key answers 400 invalid_idempotency_key", checkIdempotencyKeyMalformed},
	}
}

func checkIdempotentReplay(c *C) {
	ctx := c.Ctx()
	key := xpromo.NewIdempotencyKey()
	reg := Registration(xpromo.PlatformMac)
	var r1, r2 xpromo.Response
	first, err := c.Public().RegisterApp(ctx, reg, xpromo.WithIdempotencyKey(key), xpromo.WithResponse(&r1))
	c.NoError(err, "registration")
	ex1 := c.Last()
	again, err := c.Public().RegisterApp(ctx, reg, xpromo.WithIdempotencyKey(key), xpromo.WithResponse(&r2))
	c.NoError(err, "registration replayed")
	ex2 := c.Last()
	if again.AppID != first.AppID || again.APIKey != first.APIKey {
		c.Errorf("a replayed registration registered again: app %s then %s", first.AppID, again.AppID)
	}
	if ex2.Status != ex1.Status || !bytes.Equal(ex2.Body, ex1.Body) {
		c.Errorf("the replay differs from the first answer:\n  first:  %d %s\n  replay: %d %s", ex1.Status, clip(ex1.Body), ex2.Status, clip(ex2.Body))
	}
	if r1.Replayed || !r2.Replayed {
		c.Errorf("Idempotent-Replayed: first %q, replay %q; want absent, then true", ex1.Header.Get("Idempotent-Replayed"), ex2.Header.Get("Idempotent-Replayed"))
	}

	// A campaign created twice with one key is one campaign.
	a := &App{ID: first.AppID, Key: first.APIKey, Client: c.AsApp(first.APIKey)}
	params := &xpromo.CreateCampaignRequest{AppID: a.ID, Categories: []string{someCategory(c)}, DailyBudgetCents: 2500}
	ckey := xpromo.NewIdempotencyKey()
	c1, err := a.Client.CreateCampaign(ctx, params, xpromo.WithIdempotencyKey(ckey))
	c.NoError(err, "campaign")
	c2, err := a.Client.CreateCampaign(ctx, params, xpromo.WithIdempotencyKey(ckey))
	c.NoError(err, "campaign replayed")
	if c1.CampaignID != c2.CampaignID {
		c.Errorf("a replayed campaign creation created a second campaign: %s then %s", c1.CampaignID, c2.CampaignID)
	}

	// Error answers are replayed too: a top-up under the minimum, twice.
	tkey := xpromo.NewIdempotencyKey()
	_, err = a.Client.TopUp(ctx, a.ID, &xpromo.TopUpParams{AmountCents: 100}, xpromo.WithIdempotencyKey(tkey))
	c.ExpectError(err, 422, "below_minimum", "top-up of 100")
	_, err = a.Client.TopUp(ctx, a.ID, &xpromo.TopUpParams{AmountCents: 100}, xpromo.WithIdempotencyKey(tkey))
	c.ExpectError(err, 422, "below_minimum", "top-up of 100 replayed")
}

func checkIdempotencyKeyReused(c *C) {
	a := c.NewApp()
	ctx := c.Ctx()
	key := xpromo.NewIdempotencyKey()
	first, err := a.Client.TopUp(ctx, a.ID, &xpromo.TopUpParams{AmountCents: 6000}, xpromo.WithIdempotencyKey(key))
	c.NoError(err, "top-up")
	_, err = a.Client.TopUp(ctx, a.ID, &xpromo.TopUpParams{AmountCents: 7000}, xpromo.WithIdempotencyKey(key))
	c.ExpectError(err, 422, "idempotency_key_reused", "the same key with another amount")
	checkErrorBody(c, c.Last())
	// The key still replays its own request.
	again, err := a.Client.TopUp(ctx, a.ID, &xpromo.TopUpParams{AmountCents: 6000}, xpromo.WithIdempotencyKey(key))
	c.NoError(err, "the first request again")
	if again.CheckoutURL != first.CheckoutURL {
		c.Errorf("the first request replayed opened another checkout: %s then %s", first.CheckoutURL, again.CheckoutURL)
	}
	// On another path, the same key is also another request.
	_, err = a.Client.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{AppID: a.ID, Categories: []string{someCategory(c)}, DailyBudgetCents: 1000}, xpromo.WithIdempotencyKey(key))
	c.ExpectError(err, 422, "idempotency_key_reused", "the same key on another operation")
}

func checkIdempotencyConcurrent(c *C) {
	a := c.NewApp()
	ctx := c.Ctx()
	key := xpromo.NewIdempotencyKey()
	const n = 12
	type answer struct {
		url string
		err error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			res, err := a.Client.TopUp(ctx, a.ID, &xpromo.TopUpParams{AmountCents: 8000}, xpromo.WithIdempotencyKey(key))
			if err == nil {
				answers[i].url = res.CheckoutURL
			}
			answers[i].err = err
		})
	}
	close(start)
	wg.Wait()
	urls := map[string]bool{}
	inUse := 0
	for _, ans := range answers {
		switch {
		case ans.err == nil:
			urls[ans.url] = true
		case xpromo.IsCode(ans.err, "idempotency_key_in_use"):
			inUse++
			if e := c.APIError(ans.err, "concurrent top-up"); e.Status != http.StatusConflict {
				c.Errorf("idempotency_key_in_use answered %d, want 409", e.Status)
			}
		default:
			c.Errorf("concurrent top-up with one key: %v, want its answer or 409 idempotency_key_in_use", ans.err)
		}
	}
	if len(urls) != 1 {
		c.Fatalf("%d concurrent top-ups with one key answered %d different checkouts (%d in use), want exactly 1", n, len(urls), inUse)
	}
	c.Logf("%d concurrent requests: %d answered, %d were told the key is in use", n, n-inUse, inUse)
	// Paying it credits once.
	for u := range urls {
		if _, err := c.Public().CompleteTestCheckout(ctx, u); err != nil {
			c.Fatalf("completing %s: %v", u, err)
		}
	}
	if lines := c.Lines(a, nil); len(lines) != 1 || lines[0].AmountCents != 8000 {
		c.Errorf("after %d concurrent top-ups with one key and one payment the ledger has %d lines, want one of 8000: %+v", n, len(lines), lines)
	}
}

func checkIdempotencyScope(c *C) {
	owner, other := c.NewApp(), c.NewApp()
	ctx := c.Ctx()
	camp := createCampaign(c, owner, nil)
	key := xpromo.NewIdempotencyKey()
	got, err := owner.Client.PauseCampaign(ctx, camp.CampaignID, xpromo.WithIdempotencyKey(key))
	c.NoError(err, "the owner pausing its campaign")
	if got.Status != xpromo.CampaignStatusPaused {
		c.Errorf("pause: status %q", got.Status)
	}
	// The same key, method, path and (empty) body from another app: its own
	// request, not the owner's stored answer.
	_, err = other.Client.PauseCampaign(ctx, camp.CampaignID, xpromo.WithIdempotencyKey(key))
	c.ExpectError(err, http.StatusNotFound, "not_found", "another app sending the owner's key for the same request")
	if c.Last().Header.Get("Idempotent-Replayed") == "true" {
		c.Errorf("another app got the owner's stored answer replayed")
	}
}

func checkIdempotencyKeyMalformed(c *C) {
	a := c.NewApp()
	for what, key := range map[string]string{
		"256 characters":      strings.Repeat("k", 256),
		"a non-ASCII byte":    "clé",
		"an empty key (\"\")": `""`,
	} {
		ex := c.Raw("POST", "/v1/apps/"+a.ID+"/top-up", []byte(`{"amount_cents": 5000}`),
			"Content-Type", "application/json", "Authorization", "Bearer "+a.Key, "Idempotency-Key", key)
		if ex.Status != http.StatusBadRequest {
			c.Errorf("Idempotency-Key of %s: %s, want 400 invalid_idempotency_key", what, ex)
			continue
		}
		checkErrorBody(c, ex)
		if code := errorCode(ex); code != "invalid_idempotency_key" {
			c.Errorf("Idempotency-Key of %s: code %q, want invalid_idempotency_key", what, code)
		}
	}
	if lines := c.Lines(a, nil); len(lines) != 0 {
		c.Errorf("refused requests changed the ledger: %+v", lines)
	}
}
