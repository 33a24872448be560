package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// App is one app the load generator registered, with its API key's client
// and its SDK key.
type App struct {
	ID     string
	Client *xpromo.Client
	Key    attribution.KeyPair
}

// Fixture is what Setup built on the server: publishers selling slots in
// Category, advertisers buying it with funded campaigns.
type Fixture struct {
	Category string
	// Publishers are every publisher app: SetupConfig.Publishers for each
	// scenario that fills (Fillers).
	Publishers []*App
	// Fillers are the publishers each scenario fills the slots of, by
	// scenario (fill, claim, mixed): the server allows each app 6,000 fills
	// a minute (httpapi.FillPolicy), so a scenario run right after another
	// must not find its publishers' budget spent by the one before.
	Fillers     map[string][]*App
	Advertisers map[string]*App // by app id: the fill's offer names its advertiser
	// Apps are all of them, for the ledger scenario.
	Apps []*App

	clock serverClock
	// devices numbers the simulated devices of every run on the fixture,
	// and so their addresses: each address stays under the server's
	// per-address install velocity limit.
	devices atomic.Uint64
}

// SetupConfig sizes the fixture.
type SetupConfig struct {
	// Publishers is how many publisher apps each scenario that fills gets
	// of its own; each takes 6,000 fills a minute at most.
	Publishers int
	// FillPublishers, when larger, is how many the fill scenario gets: it
	// alone runs near the server's limit, and at r fills/s for d seconds
	// it needs r·d/6,000 publishers (FillPublishersFor) not to be refused
	// for their budget before its end.
	FillPublishers int
	Advertisers    int
	// Category is the rate-card category everything trades in; "" takes
	// the rate card's first.
	Category string
	// TopUps is how many test top-ups each advertiser pays (at least 1):
	// the first funds its campaign, the others lengthen its ledger for the
	// ledger scenario.
	TopUps int
	// ForwardedFor: as RunConfig.ForwardedFor, for the warm-up installs.
	ForwardedFor bool
}

// The advertisers' money: one top-up of the most a checkout takes, and a
// campaign budget that never binds, so that claims fail only on purpose.
const (
	fundCents        = 10_000_000 // EUR 100,000
	extraTopUpCents  = xpromo.MinTopUpCents
	dailyBudgetCents = 10_000_000_000
)

// Setup registers and approves the apps through op (a client holding the
// admin token of a test-mode server), funds the advertisers with test
// top-ups, creates their campaigns, registers every app's SDK key and
// takes the advertisers live (goLive).
func Setup(ctx context.Context, op *xpromo.Client, cfg SetupConfig) (*Fixture, error) {
	if cfg.Publishers < 1 || cfg.Advertisers < 1 {
		return nil, errors.New("loadgen: setup needs at least one publisher and one advertiser")
	}
	cfg.TopUps = max(cfg.TopUps, 1)
	state, err := op.AdminGetClock(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the test clock with the admin token: %w", err)
	}
	if !state.TestMode {
		return nil, errors.New("the server is not in test mode: the claim scenario advances its clock and the setup pays test checkouts")
	}
	f := &Fixture{Category: cfg.Category, Fillers: map[string][]*App{}, Advertisers: map[string]*App{}}
	f.clock.follow(state.Now)
	if f.Category == "" {
		card, err := op.GetRateCard(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the rate card: %w", err)
		}
		if len(card.Categories) == 0 {
			return nil, errors.New("the rate card lists no category")
		}
		f.Category = card.Categories[0].Key
	}
	run := randomHex(4) // bundle ids unique per run: a server may be reused
	register := func(role string, i int, category string) (*App, error) {
		name := fmt.Sprintf("loadgen-%s-%s-%d", run, role, i)
		reg, err := op.RegisterApp(ctx, &xpromo.RegisterAppRequest{
			Name: name, Platform: xpromo.PlatformMac, BundleID: "com.example." + fmt.Sprintf("lg%s%s%d", run, role, i),
			Domain: "example.com", DownloadURL: "https://example.com/" + name + ".dmg",
			// unverified@: a magic value of the gate's test-mode sandbox
			// (docs/gate.md): the challenge is never answered, so the app
			// waits for the operator's approval instead of racing the gate.
			ContactEmail: "unverified@example.com", Category: category,
		})
		if err != nil {
			return nil, fmt.Errorf("registering %s: %w", name, err)
		}
		a := &App{ID: reg.AppID, Client: op.With(xpromo.WithAPIKey(reg.APIKey))}
		if _, err := op.AdminApproveApp(ctx, a.ID, "loadgen"); err != nil {
			return nil, fmt.Errorf("approving %s: %w", name, err)
		}
		if a.Key, err = attribution.GenerateKey(nil); err != nil {
			return nil, err
		}
		if _, err := a.Client.RegisterSDKKey(ctx, a.ID, &xpromo.RegisterSDKKeyRequest{PublicKey: attribution.EncodePublicKey(a.Key.Public)}); err != nil {
			return nil, fmt.Errorf("registering %s's SDK key: %w", name, err)
		}
		return a, nil
	}
	for _, sc := range fillingScenarios {
		n := cfg.Publishers
		if sc == ScenarioFill {
			n = max(n, cfg.FillPublishers)
		}
		for i := range n {
			a, err := register("pub"+sc, i, f.Category)
			if err != nil {
				return nil, err
			}
			f.Fillers[sc] = append(f.Fillers[sc], a)
			f.Publishers = append(f.Publishers, a)
			f.Apps = append(f.Apps, a)
		}
	}
	for i := range cfg.Advertisers {
		a, err := register("adv", i, "")
		if err != nil {
			return nil, err
		}
		for n := range cfg.TopUps {
			amount := int64(extraTopUpCents)
			if n == 0 {
				amount = fundCents
			}
			top, err := a.Client.TopUp(ctx, a.ID, &xpromo.TopUpParams{AmountCents: amount})
			if err != nil {
				return nil, fmt.Errorf("topping up %s: %w", a.ID, err)
			}
			if _, err := op.CompleteTestCheckout(ctx, top.CheckoutURL); err != nil {
				return nil, fmt.Errorf("paying %s's test checkout: %w", a.ID, err)
			}
		}
		if _, err := a.Client.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{
			AppID: a.ID, Categories: []string{f.Category}, DailyBudgetCents: dailyBudgetCents,
		}); err != nil {
			return nil, fmt.Errorf("creating %s's campaign: %w", a.ID, err)
		}
		f.Advertisers[a.ID] = a
		f.Apps = append(f.Apps, a)
	}
	if err := goLive(ctx, op, f, cfg.ForwardedFor); err != nil {
		return nil, fmt.Errorf("taking the advertisers live: %w", err)
	}
	// One fill alone rebuilds the server's delivery index, which still
	// caps the advertisers: concurrent fills during that rebuild would use
	// the capped index and find no eligible campaign.
	pub := f.Fillers[ScenarioClaim][0]
	prime := &xpromo.FillRequest{AppID: pub.ID, Slot: xpromo.SlotOnboardingComplete, Platform: xpromo.PlatformMac}
	if err := prime.Sign(pub.Key, f.clock.Now()); err != nil {
		return nil, err
	}
	if _, err := op.SDKFill(ctx, prime); err != nil {
		return nil, fmt.Errorf("priming fill: %w", err)
	}
	return f, nil
}

// fillBudget is the server's per-app fill budget a minute
// (httpapi.FillPolicy); MaxFillRate is the most fills a second the fill
// scenario is sized for: some three times what a quiet 2-core machine
// answers with the lean generator.
const (
	fillBudget  = 6000
	MaxFillRate = 20_000
)

// FillPublishersFor is how many publishers a fill run of d needs so that
// none spends its minute's budget at MaxFillRate fills a second.
func FillPublishersFor(d time.Duration) int {
	return int(math.Ceil(d.Seconds()*MaxFillRate/fillBudget)) + 1
}

// serverClock estimates the server's clock, which the test clock moves
// away from this machine's: the SDK signs with the device's clock, and the
// server checks those times against its own.
type serverClock struct {
	mu     sync.Mutex
	offset time.Duration
}

// follow sets the estimate from a reading of the server's clock.
func (c *serverClock) follow(server time.Time) {
	c.mu.Lock()
	c.offset = time.Until(server)
	c.mu.Unlock()
}

func (c *serverClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
