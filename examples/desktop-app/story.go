package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/slots"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The story's figures.
const (
	topUpCents       = 20_000 // EUR 200
	dailyBudgetCents = 5_000  // EUR 50
	// installDelay is the time from the click to Snip's first launch: the
	// download and the install. The server refuses installs under 10
	// seconds after the click (fraud_ctit_too_short).
	installDelay = time.Minute
	// activationDelay is the time from the install to the heartbeat that
	// activates it: one received 48 to 72 hours after the install.
	activationDelay = 48 * time.Hour
	// clearTimeout bounds the wait for the clearing.
	clearTimeout = 30 * time.Second
)

// app is one of the two apps, as its team sees it.
type app struct {
	Name, Role string
	ID         string
	// client carries the app's API key.
	client *xpromo.Client
	// Key is the app's SDK key pair; Registered its public half as the
	// server holds it.
	Key        attribution.KeyPair
	Registered xpromo.SDKKey
	// EarnMode is how the app takes its earnings: cash or credits.
	EarnMode string
	// Ledger and Stats are read at the end.
	Ledger []xpromo.LedgerLine
	Stats  *xpromo.Stats
}

// outcome is what the story produced, for the report and the checks.
type outcome struct {
	Publisher, Advertiser *app
	Category              string
	TopUpCents            int64
	Campaign              *xpromo.Campaign
	// OfferPriceCents is the price the fill locked into the offer.
	OfferPriceCents int64
	// Chain is the install's event chain, as the publisher reads it.
	Chain xpromo.Chain
	// Webhooks are the events the receiver printed (nil without
	// --webhook-url).
	Webhooks []received
}

// narrator tells the story on w: who does what.
type narrator struct{ w io.Writer }

func (n narrator) section(title string) { fmt.Fprintf(n.w, "\n== %s\n", title) }

func (n narrator) say(who, format string, args ...any) {
	fmt.Fprintf(n.w, "%-11s %s\n", who+":", fmt.Sprintf(format, args...))
}

// playStory plays the whole story against cfg.BaseURL and returns what it
// produced; an error says which step went wrong.
func playStory(ctx context.Context, cfg config) (*outcome, error) {
	n := narrator{cfg.Out}
	base := xpromo.NewClient(cfg.BaseURL, xpromo.WithUserAgent("xpromo-desktop-app"))
	op := base.With(xpromo.WithAdminToken(cfg.AdminToken)) // the operator: the test clock, the sweep
	clock := &deviceClock{}
	sdkLog := slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))

	state, err := op.AdminGetClock(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the server's test clock (GET /v1/admin/clock) with the admin token: %w", err)
	}
	if !state.TestMode {
		return nil, errors.New("the server is not in test mode: the demo moves its clock forward 48 hours, which only a test-mode server allows (make demo starts one)")
	}
	clock.follow(state.Now)
	fmt.Fprintf(n.w, "xpromo desktop-app: one paid install, end to end, against %s\n", cfg.BaseURL)
	fmt.Fprintf(n.w, "(test mode: simulated payments; the server's clock reads %s)\n", state.Now.UTC().Format(time.RFC3339))

	// 1. Two apps join the network.
	n.section("1. Two desktop apps join the network")
	pub := &app{Name: "Clipboard Pro", Role: "publisher"}
	adv := &app{Name: "Snip", Role: "advertiser"}
	for _, a := range []struct {
		app *app
		req xpromo.RegisterAppRequest
	}{
		{pub, xpromo.RegisterAppRequest{
			Name: pub.Name, Platform: xpromo.PlatformMac, BundleID: "com.example.clipboardpro",
			Domain: "example.com", DownloadURL: "https://example.com/downloads/ClipboardPro.zip",
			ContactEmail: "team@example.com",
			// The category the publisher's own slots sell: it gets fills
			// from campaigns buying it.
			Category: cfg.Category,
		}},
		{adv, xpromo.RegisterAppRequest{
			Name: adv.Name, Platform: xpromo.PlatformMac, BundleID: "org.example.snip",
			Domain: "example.org", DownloadURL: "https://example.org/snip/Snip.zip",
			ContactEmail: "hello@example.org",
		}},
	} {
		r, err := base.RegisterApp(ctx, &a.req)
		if err != nil {
			return nil, fmt.Errorf("registering %s: %w", a.app.Name, err)
		}
		a.app.ID = r.AppID
		a.app.client = base.With(xpromo.WithAPIKey(r.APIKey))
		detail := ""
		if a.req.Category != "" {
			detail = " selling slots in category " + a.req.Category
		}
		n.say(a.app.Role, "registered %q as %s%s (status %s; API key %s…)", a.app.Name, r.AppID, detail, r.Status, prefix(r.APIKey, 12))
	}
	// The vetting gate decides, not an operator: in test mode the reserved
	// names these apps use (example.com, example.org) are answered by the
	// gate's sandbox — a signed, notarised download built for the bundle id,
	// an RDAP answer, an inbox that follows the challenge link — so both
	// are approved within seconds (docs/gate.md, "Test mode").
	for _, a := range []*app{pub, adv} {
		sc, err := waitForGate(ctx, a.client, a.ID)
		if err != nil {
			return nil, fmt.Errorf("vetting gate for %s: %w", a.Name, err)
		}
		if sc.Status != xpromo.AppStatusApproved {
			return nil, fmt.Errorf("the vetting gate %s %s (reasons %v), want approved", sc.Status, a.Name, sc.Reasons)
		}
		em, err := a.client.EarnMode(ctx, a.ID)
		if err != nil {
			return nil, fmt.Errorf("earn mode of %s: %w", a.Name, err)
		}
		a.EarnMode = string(em.EarnMode)
		n.say("gate", "approved %s: signed %v, malware_clean %v, domain_age_ok %v, bundle_match %v, contact_verified %v",
			a.Name, sc.Gate.Signed, sc.Gate.MalwareClean, sc.Gate.DomainAgeOK, sc.Gate.BundleMatch, sc.Gate.ContactVerified)
	}

	var wh *hooks
	if cfg.WebhookURL != "" {
		wh = &hooks{url: cfg.WebhookURL, secretsFile: cfg.WebhookSecrets, log: cfg.WebhookLog, n: n}
		if err := wh.register(ctx, pub, adv); err != nil {
			return nil, err
		}
	}
	// awaitWebhooks waits for the webhooks of the chain's step, when the
	// story has a receiver.
	awaitWebhooks := func(chainID string, state xpromo.ChainState) error {
		if wh == nil {
			return nil
		}
		return wh.await(ctx, chainID, state)
	}

	// 2. The advertiser buys installs.
	n.section("2. Snip buys installs")
	top, err := adv.client.TopUp(ctx, adv.ID, &xpromo.TopUpParams{AmountCents: topUpCents})
	if err != nil {
		return nil, fmt.Errorf("topping up: %w", err)
	}
	if top.CheckoutURL == "" {
		return nil, errors.New("the top-up answered no checkout URL")
	}
	n.say("advertiser", "top-up of %s → checkout %s", euros(topUpCents), top.CheckoutURL)
	session, err := base.CompleteTestCheckout(ctx, top.CheckoutURL)
	if err != nil {
		return nil, fmt.Errorf("paying the test checkout: %w", err)
	}
	n.say("advertiser", "paid the test checkout (%s): the wallet is credited", session.Status)
	campaign, err := adv.client.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{
		AppID: adv.ID, Categories: []string{cfg.Category}, DailyBudgetCents: dailyBudgetCents,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the campaign: %w", err)
	}
	n.say("advertiser", "campaign %s buys installs in %s at the floor, %s (daily budget %s; %s)",
		campaign.CampaignID, cfg.Category, euros(campaign.FloorCents), euros(campaign.DailyBudgetCents), campaign.Status)
	// The campaign stops with the story, even a failed one, so that it
	// does not fill the slots of a later run against the same server.
	paused := false
	pause := func(ctx context.Context) error {
		if paused {
			return nil
		}
		_, err := adv.client.PauseCampaign(ctx, campaign.CampaignID)
		paused = err == nil
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := pause(ctx); err != nil {
			fmt.Fprintf(cfg.Log, "desktop-app: pausing campaign %s: %v\n", campaign.CampaignID, err)
		}
	}()

	// 3. SDK keys.
	n.section("3. Each app makes its SDK key and registers the public half")
	for _, a := range []*app{pub, adv} {
		if a.Key, err = attribution.GenerateKey(nil); err != nil {
			return nil, err
		}
		key, err := a.client.RegisterSDKKey(ctx, a.ID, &xpromo.RegisterSDKKeyRequest{PublicKey: attribution.EncodePublicKey(a.Key.Public)})
		if err != nil {
			return nil, fmt.Errorf("registering %s's SDK key: %w", a.Name, err)
		}
		a.Registered = *key
		n.say(a.Role, "Ed25519 SDK key %s registered for %s (the private half ships in the app)", a.Registered.KeyID, a.Name)
	}

	// The two apps run on one computer: each has its own SDK data
	// directory; the handoff inbox is the user's, shared.
	inbox := filepath.Join(cfg.Dir, "inbox")
	agent := func(a *app) (*slots.Agent, error) {
		installed := filepath.Join(cfg.Dir, "Applications", a.Name+".app")
		if err := os.MkdirAll(installed, 0o755); err != nil {
			return nil, err
		}
		return slots.New(slots.Config{
			BaseURL:  cfg.BaseURL,
			AppID:    a.ID,
			Key:      a.Key,
			DataDir:  filepath.Join(cfg.Dir, a.Name, "xpromo"),
			Platform: xpromo.PlatformMac,
			InboxDir: inbox,
			// The inbox is the channel shown here; the demo does not look
			// through the real Downloads folder of the machine it runs on.
			DownloadDirs:  []string{},
			InstalledPath: installed,
			Now:           clock.Now,
			Client:        xpromo.NewClient(cfg.BaseURL, xpromo.WithUserAgent("xpromo-slots/"+a.Name)),
			Logger:        sdkLog.With("app", a.Name),
		})
	}

	// 4. The publisher app shows a slot; the user clicks.
	n.section("4. In Clipboard Pro: the onboarding_complete slot")
	pubSDK, err := agent(pub)
	if err != nil {
		return nil, fmt.Errorf("starting Clipboard Pro's SDK: %w", err)
	}
	defer pubSDK.Close()
	n.say("publisher", "the user finished onboarding; showing slot %s… (the fill request signed with key %s)", xpromo.SlotOnboardingComplete, pub.Key.ID)
	shown, err := pubSDK.Show(ctx, xpromo.SlotOnboardingComplete, consoleRenderer{w: n.w, indent: "            "})
	var noFill *slots.NoFillError
	switch {
	case errors.As(err, &noFill):
		return nil, fmt.Errorf("the slot got no fill (%s): the campaign must buy the publisher's category", noFill.Reason)
	case err != nil:
		return nil, fmt.Errorf("showing the slot: %w", err)
	case shown.Outcome != slots.Clicked:
		return nil, fmt.Errorf("the ad was %s, not clicked", shown.Outcome)
	case shown.Placement.Ad.AdvertiserAppID != adv.ID:
		// The auction is the server's: on a server where other campaigns
		// buy the category, one of them may win the slot.
		return nil, fmt.Errorf("the slot was filled by another advertiser's campaign (app %s): run the demo against a fresh server (make demo)", shown.Placement.Ad.AdvertiserAppID)
	}
	offer := shown.Placement.Offer()
	n.say("publisher", "filled by campaign %s at %s, locked in the offer (it lapses in %s)", offer.CampaignID, euros(offer.PriceCents), shown.Placement.Ad.ExpiresAt.Sub(clock.Now()).Round(time.Minute))
	n.say("publisher", "the user clicked %q: click token signed with key %s and reported", shown.Placement.Ad.CTA, pub.Key.ID)
	n.say("publisher", "the browser opens %s", shortURL(shown.DownloadURL))
	if err := pubSDK.Flush(ctx); err != nil {
		return nil, fmt.Errorf("reporting the click: %w", err)
	}
	if tok, ok, err := (slots.Inbox{Dir: inbox}).Get(adv.ID); err != nil || !ok || tok != shown.Placement.Token() {
		return nil, fmt.Errorf("the click token is not in the local inbox for %s (%v)", adv.ID, err)
	}
	n.say("publisher", "handoff: the token waits for %s in the local inbox %s", adv.ID, inbox)

	// 5. The user installs Snip; its first launch claims the install.
	n.section("5. The user installs Snip and launches it")
	if err := advance(ctx, n, op, clock, installDelay, "the download and the install (installs under 10 s after the click are refused)"); err != nil {
		return nil, err
	}
	advSDK, err := agent(adv)
	if err != nil {
		return nil, fmt.Errorf("starting Snip's SDK: %w", err)
	}
	defer advSDK.Close()
	if _, err := advSDK.ClaimInstall(ctx); err != nil {
		return nil, fmt.Errorf("claiming the install: %w", err)
	}
	if err := advSDK.Flush(ctx); err != nil {
		return nil, fmt.Errorf("sending the install claim: %w", err)
	}
	inst := advSDK.Install()
	switch {
	case !inst.Claimed:
		return nil, errors.New("Snip's first launch found no click token: the install is organic")
	case inst.Refusal != "":
		return nil, fmt.Errorf("the server refused the install claim: %s", inst.Refusal)
	case inst.State != xpromo.ChainInstalled:
		return nil, fmt.Errorf("the install claim left chain %s %s, not installed", inst.ChainID, inst.State)
	}
	n.say("advertiser", "first launch: found the click token through the %s channel, countersigned it with key %s (device %s)", inst.Channel, adv.Key.ID, advSDK.DeviceID())
	n.say("advertiser", "install claimed: chain %s is %s; the price is held in escrow", inst.ChainID, inst.State)
	if err := awaitWebhooks(inst.ChainID, xpromo.ChainInstalled); err != nil {
		return nil, err
	}
	if err := heartbeat(ctx, advSDK, xpromo.ChainInstalled); err != nil {
		return nil, err
	}
	n.say("advertiser", "heartbeat at launch (seq %d): chain %s", advSDK.Install().HeartbeatSeq, advSDK.Install().State)

	// 6. Two days later, Snip is still in use.
	n.section("6. Two days later Snip is still in use")
	if err := advance(ctx, n, op, clock, activationDelay, "the user keeps Snip"); err != nil {
		return nil, err
	}
	if err := heartbeat(ctx, advSDK, xpromo.ChainActivated48h); err != nil {
		return nil, err
	}
	n.say("advertiser", "heartbeat (seq %d), %s after the install: chain %s", advSDK.Install().HeartbeatSeq, activationDelay, advSDK.Install().State)
	if err := awaitWebhooks(inst.ChainID, xpromo.ChainActivated48h); err != nil {
		return nil, err
	}

	// 7. The clearing.
	n.section("7. The clearing")
	chain, err := waitCleared(ctx, n, op, pub, inst.ChainID)
	if err != nil {
		return nil, err
	}
	if err := awaitWebhooks(inst.ChainID, xpromo.ChainCleared); err != nil {
		return nil, err
	}

	if err := pause(ctx); err != nil {
		return nil, fmt.Errorf("pausing the campaign: %w", err)
	}
	n.say("advertiser", "the demo is over: campaign %s paused", campaign.CampaignID)

	res := &outcome{
		Publisher: pub, Advertiser: adv, Category: cfg.Category, TopUpCents: topUpCents,
		Campaign: campaign, OfferPriceCents: offer.PriceCents, Chain: chain,
	}
	if wh != nil {
		if res.Webhooks, err = wh.read(); err != nil {
			return nil, fmt.Errorf("reading the receiver's output: %w", err)
		}
	}
	for _, a := range []*app{pub, adv} {
		for l, err := range a.client.LedgerLines(ctx, a.ID, nil) {
			if err != nil {
				return nil, fmt.Errorf("reading %s's ledger: %w", a.Name, err)
			}
			a.Ledger = append(a.Ledger, l)
		}
		if a.Stats, err = a.client.GetStats(ctx, a.ID, nil); err != nil {
			return nil, fmt.Errorf("reading %s's stats: %w", a.Name, err)
		}
	}
	return res, nil
}

// advance moves the server's test clock by d and the device's with it.
func advance(ctx context.Context, n narrator, op *xpromo.Client, clock *deviceClock, d time.Duration, why string) error {
	state, err := op.AdminAdvanceClock(ctx, d)
	if err != nil {
		return fmt.Errorf("advancing the test clock by %s (POST /v1/admin/clock/advance): %w", d, err)
	}
	clock.follow(state.Now)
	n.say("clock", "+%s: %s (server clock %s)", d, why, state.Now.UTC().Format(time.RFC3339))
	return nil
}

// heartbeat sends one heartbeat now and wants the chain in state want.
func heartbeat(ctx context.Context, sdk *slots.Agent, want xpromo.ChainState) error {
	if err := sdk.Heartbeat(ctx); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	if err := sdk.Flush(ctx); err != nil {
		return fmt.Errorf("sending the heartbeat: %w", err)
	}
	s := sdk.Install()
	if s.Refusal != "" {
		return fmt.Errorf("the server refused the heartbeat: %s", s.Refusal)
	}
	if s.State != want {
		return fmt.Errorf("after the heartbeat chain %s is %s, not %s", s.ChainID, s.State, want)
	}
	return nil
}

// waitCleared runs the clearing sweep and waits until the chain is
// cleared. The server sweeps in the background too; a server without the
// admin trigger is waited for.
func waitCleared(ctx context.Context, n narrator, op *xpromo.Client, reader *app, chainID string) (xpromo.Chain, error) {
	ctx, cancel := context.WithTimeout(ctx, clearTimeout)
	defer cancel()
	trigger := true
	for {
		if trigger {
			r, err := op.AdminSweep(ctx)
			switch {
			case xpromo.IsCode(err, xpromo.CodeNotFound):
				trigger = false
				n.say("operator", "no sweep trigger on this server: waiting for its background sweep")
			case err != nil:
				return xpromo.Chain{}, fmt.Errorf("running the clearing sweep: %w", err)
			case r.Cleared+r.Refunded+r.Failed > 0:
				n.say("operator", "clearing sweep: %d cleared, %d refunded, %d failed", r.Cleared, r.Refunded, r.Failed)
			}
		}
		c, err := reader.client.GetChain(ctx, chainID)
		if err != nil {
			return xpromo.Chain{}, fmt.Errorf("reading chain %s: %w", chainID, err)
		}
		switch c.State {
		case xpromo.ChainCleared:
			n.say("server", "chain %s is cleared: the advertiser is charged, the publisher paid", chainID)
			return *c, nil
		case xpromo.ChainRefunded, xpromo.ChainRejected:
			reason := ""
			if c.Reason != nil {
				reason = " (" + string(*c.Reason) + ")"
			}
			return *c, fmt.Errorf("chain %s ended %s%s, not cleared", chainID, c.State, reason)
		}
		select {
		case <-ctx.Done():
			return *c, fmt.Errorf("chain %s is still %s after %s", chainID, c.State, clearTimeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// euros formats cents as "EUR 12.34".
func euros(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("EUR %s%d.%02d", sign, cents/100, cents%100)
}

// prefix returns s's first n bytes.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// shortURL shortens the token a URL carries, for reading.
func shortURL(u string) string {
	const keep = 110
	if len(u) <= keep {
		return u
	}
	return fmt.Sprintf("%s… (%d characters: xpromo_click carries the signed token)", u[:keep], len(u))
}

// waitForGate polls the app's score until the vetting gate has decided
// (the app left pending), for at most a minute.
func waitForGate(ctx context.Context, c *xpromo.Client, appID string) (*xpromo.Score, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		sc, err := c.GetScore(ctx, appID)
		if err != nil {
			return nil, err
		}
		if sc.Status != xpromo.AppStatusPending {
			return sc, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("still pending after a minute (reasons %v)", sc.Reasons)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
