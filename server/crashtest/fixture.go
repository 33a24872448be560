package crashtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/slots"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// app is one app the run registered.
type app struct {
	ID     string
	apiKey string
	client *xpromo.Client // its API key, without retries (the harness retries)
	setup  *xpromo.Client // its API key, with the SDK's retries (fixtures and reads)
	key    attribution.KeyPair
	// agent is a publisher's in-app SDK (sdk/slots): it fills the app's
	// slots and signs the clicks, as an app would.
	agent *slots.Agent
}

// deviceClock is the clock of the simulated devices: the run moves the
// server's test clock forward (48 hours at a time) and the SDKs sign with
// the device's time, which the server checks against its own, so this
// clock follows the server's: the local clock plus the server's lead,
// taken again after each move.
type deviceClock struct {
	lead atomic.Int64 // nanoseconds the server's clock is ahead of time.Now
}

func (c *deviceClock) Now() time.Time { return time.Now().Add(time.Duration(c.lead.Load())) }

func (c *deviceClock) follow(serverNow time.Time) {
	c.lead.Store(int64(time.Until(serverNow)))
}

// click is a click made between kills, waiting for its install claim.
type click struct {
	token    string
	pub, adv *app
}

// The fixture's money and attribution figures.
const (
	// fundCents is each advertiser's first top-up (the most a checkout
	// takes): campaigns never run dry, so claims are refused only for a
	// reason worth reporting.
	fundCents        = 10_000_000
	dailyBudgetCents = 10_000_000_000
	// bidCents is what the advertisers bid once live: a cleared install
	// earns its publisher EUR 35, so payouts (EUR 50 at least) happen
	// every cycle or two.
	bidCents = 5_000
	// warmUpInstalls per advertiser take it live: 10 must clear with a 48-hour
	// retention of at least 0.4 (docs/marketplace.md), and 12 at the floor
	// fit under the EUR 50 a day an approved advertiser may buy.
	warmUpInstalls = 12
	// installDelay moves the clock between the clicks and their claims:
	// the server refuses an install claimed under 10 s after its click.
	installDelay = 15 * time.Second
	// activationDelay moves the clock from the installs to their
	// heartbeats: activation needs one 48 to 72 hours after the install.
	activationDelay = 49 * time.Hour
	// settleDelay moves the clock at the end past every chain's 72-hour
	// window, so that the last sweep settles every chain.
	settleDelay = 24 * time.Hour
)

// register registers an app, has the operator approve it and registers
// its SDK key. A publisher (category != "") gets its in-app SDK.
func (h *harness) register(ctx context.Context, role string, i int, category string) (*app, error) {
	name := fmt.Sprintf("crashtest-%s-%s-%d", h.run, role, i)
	reg, err := h.setup.RegisterApp(ctx, &xpromo.RegisterAppRequest{
		Name: name, Platform: xpromo.PlatformMac, BundleID: fmt.Sprintf("com.example.ct%s%s%d", h.run, role, i),
		Domain: "example.com", DownloadURL: "https://example.com/" + name + ".dmg",
		// unverified@: a magic value of the gate's test-mode sandbox (docs/gate.md):
		// the challenge is never answered, so the app stays pending for the
		// operator's approval below instead of racing the gate to it.
		ContactEmail: "unverified@example.com", Category: category,
	})
	if err != nil {
		return nil, fmt.Errorf("registering %s: %w", name, err)
	}
	a := &app{
		ID:     reg.AppID,
		apiKey: reg.APIKey,
		client: h.admin.With(xpromo.WithAPIKey(reg.APIKey)),
		setup:  h.setup.With(xpromo.WithAPIKey(reg.APIKey)),
	}
	// The endpoint first: every event from here on must reach it.
	if err := h.registerEndpoint(ctx, a); err != nil {
		return nil, err
	}
	if _, err := h.setup.AdminApproveApp(ctx, a.ID, "crashtest"); err != nil {
		return nil, fmt.Errorf("approving %s: %w", name, err)
	}
	if a.key, err = attribution.GenerateKey(nil); err != nil {
		return nil, err
	}
	if _, err := a.setup.RegisterSDKKey(ctx, a.ID, &xpromo.RegisterSDKKeyRequest{PublicKey: attribution.EncodePublicKey(a.key.Public)}); err != nil {
		return nil, fmt.Errorf("registering %s's SDK key: %w", name, err)
	}
	if category != "" {
		dir := filepath.Join(h.work, "sdk", a.ID)
		a.agent, err = slots.New(slots.Config{
			BaseURL: h.srv.baseURL(), AppID: a.ID, Key: a.key, DataDir: dir,
			Platform: xpromo.PlatformMac, InboxDir: "-", DownloadDirs: []string{}, InstalledPath: dir,
			Now:    h.clock.Now,
			Client: xpromo.NewClient(h.srv.baseURL(), xpromo.WithUserAgent("xpromo-crashtest")),
			Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			return nil, fmt.Errorf("starting %s's SDK: %w", name, err)
		}
	}
	return a, nil
}

// prepareClicks has the publishers' SDKs fill slots and the users click,
// until there are n clicks and each advertiser of need has its count. It
// runs between kills: fills and clicks move no money.
func (h *harness) prepareClicks(ctx context.Context, n int, need map[string]int) ([]click, error) {
	var clicks []click
	got := map[string]int{}
	done := func() bool {
		for id, k := range need {
			if got[id] < k {
				return false
			}
		}
		return len(clicks) >= n
	}
	wanted := n
	for _, k := range need {
		wanted += k
	}
	noFill := 0
	for tries := 0; !done(); tries++ {
		if tries > 20*wanted {
			return nil, fmt.Errorf("only %d of %d clicks after %d fills (%d without a fill)", len(clicks), wanted, tries, noFill)
		}
		pub := h.publishers[rand.IntN(len(h.publishers))]
		p, err := pub.agent.Fill(ctx, xpromo.SlotOnboardingComplete)
		if errors.Is(err, slots.ErrNoFill) {
			noFill++
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("filling a slot of %s: %w", pub.ID, err)
		}
		adv := h.advertisers[p.Ad.AdvertiserAppID]
		if adv == nil {
			return nil, fmt.Errorf("a slot of %s was filled by app %s, not one of the run's advertisers", pub.ID, p.Ad.AdvertiserAppID)
		}
		if need != nil && got[adv.ID] >= need[adv.ID] {
			continue
		}
		if _, err := p.Click(ctx); err != nil {
			return nil, fmt.Errorf("clicking an ad in %s: %w", pub.ID, err)
		}
		got[adv.ID]++
		clicks = append(clicks, click{token: p.Token(), pub: pub, adv: adv})
	}
	// The click reports are queued by the SDK; deliver them now, while no
	// kill can come.
	for _, pub := range h.publishers {
		if err := pub.agent.Flush(ctx); err != nil {
			return nil, fmt.Errorf("reporting %s's clicks: %w", pub.ID, err)
		}
	}
	return clicks, nil
}

// advance moves the server's test clock forward by d, between kills.
func (h *harness) advance(ctx context.Context, d time.Duration) error {
	if err := h.moveClock(ctx, d); err != nil {
		return err
	}
	h.offset += d
	return nil
}

// moveClock advances the server's clock by d, in steps the server accepts
// (at most 365 days each), and has the devices follow.
func (h *harness) moveClock(ctx context.Context, d time.Duration) error {
	const step = 300 * 24 * time.Hour
	for d >= time.Second {
		s := min(d, step)
		state, err := h.setup.AdminAdvanceClock(context.WithValue(ctx, pinKey{}, 0), s)
		if err != nil {
			return fmt.Errorf("advancing the test clock: %w", err)
		}
		h.clock.follow(state.Now)
		if err := h.syncClocks(ctx, 0); err != nil {
			return err
		}
		d -= s
	}
	return nil
}

// closeAgents closes the publishers' SDKs.
func (h *harness) closeAgents() {
	for _, a := range h.publishers {
		if a.agent != nil {
			_ = a.agent.Close()
		}
	}
}
