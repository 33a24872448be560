package slots

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Lifecycle slots (xpromo.Slot): the moments a desktop app shows one
// promoted app.
const (
	SlotOnboardingComplete = xpromo.SlotOnboardingComplete // first-run onboarding finished
	SlotUpdateInstalled    = xpromo.SlotUpdateInstalled    // first launch after an update
	SlotAboutWindow        = xpromo.SlotAboutWindow        // the About window is open
	SlotSettingsIdle       = xpromo.SlotSettingsIdle       // the settings window sat idle
	SlotBeforeQuit         = xpromo.SlotBeforeQuit         // the user quits: never block quitting
)

// ErrNoFill is matched (errors.Is) by the *NoFillError Fill returns when
// the server has nothing for the slot. It is an ordinary outcome: show
// nothing.
var ErrNoFill = errors.New("slots: no fill")

// NoFillError is a fill that got nothing, with the server's reason
// (xpromo.NoFillNoCampaign, xpromo.NoFillPublisherNotEligible, or one this
// version does not know), or the SDK's own (NoFillOfferLapsed,
// NoFillOfferMismatch).
type NoFillError struct{ Reason xpromo.NoFillReason }

// NoFillOfferLapsed is the reason of a fill whose offer had already lapsed
// when it arrived (by this device's clock): there is nothing to show, and
// showing it would only earn a click the server refuses. The server plants
// such offers as canaries (docs/apps.md "Canary check"): an SDK that shows
// or clicks them is taken for a click spammer.
const NoFillOfferLapsed xpromo.NoFillReason = "offer_lapsed"

// NoFillOfferMismatch is the reason of a fill whose offer advertises
// another app than its creative: clicking it would attribute an install of
// an app the user never saw. The server plants such offers as canaries
// too: show nothing.
const NoFillOfferMismatch xpromo.NoFillReason = "offer_mismatch"

func (e *NoFillError) Error() string        { return "slots: no fill: " + string(e.Reason) }
func (e *NoFillError) Is(target error) bool { return target == ErrNoFill }

// ErrOfferExpired is returned by Placement.Click after the offer lapsed
// (15 minutes after the fill): fill the slot again.
var ErrOfferExpired = errors.New("slots: the offer has expired")

// Ad is what a Renderer shows: a templated native unit (IAB Native
// assets) promoting one app.
type Ad struct {
	Slot xpromo.Slot
	// Title (≤ 90 characters), IconURL (square, ≥ 128 px), Description
	// (≤ 140), CTA (≤ 15, e.g. "Download") and SponsoredLabel (always
	// "Sponsored", which must be visible).
	Title, IconURL, Description, CTA, SponsoredLabel string
	// AdvertiserAppID is the promoted app.
	AdvertiserAppID string
	// ExpiresAt is when the offer lapses; stop showing the ad then (the
	// context Render gets ends then too).
	ExpiresAt time.Time
}

// Outcome is what became of a rendered ad.
type Outcome int

// Outcomes.
const (
	// NotShown: the app did not show the ad (wrong moment, window closed).
	NotShown Outcome = iota
	// Dismissed: the ad was shown and closed without a click.
	Dismissed
	// Clicked: the user clicked the ad's call to action.
	Clicked
)

func (o Outcome) String() string {
	switch o {
	case NotShown:
		return "not_shown"
	case Dismissed:
		return "dismissed"
	case Clicked:
		return "clicked"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Renderer is the render hook the app implements: show ad in the app's
// own native template (title, icon, description, call to action and the
// "Sponsored" label), wait for the user, and say what happened. Render
// must return when ctx ends (the offer lapsed, or the app is closing the
// slot). For a slot shown before quitting, Render must never hold up the
// quit: return NotShown or Dismissed at once when the user insists.
type Renderer interface {
	Render(ctx context.Context, ad Ad) (Outcome, error)
}

// RenderFunc adapts a function to Renderer.
type RenderFunc func(ctx context.Context, ad Ad) (Outcome, error)

// Render calls f.
func (f RenderFunc) Render(ctx context.Context, ad Ad) (Outcome, error) { return f(ctx, ad) }

// Placement is one filled slot: the ad to render and the offer the SDK
// signs if the user clicks before it lapses. Click it at most once (a
// second Click returns the first's URL).
type Placement struct {
	Ad    Ad
	offer attribution.Offer
	dlURL string
	agent *Agent

	mu    sync.Mutex
	token string // the signed click token, once clicked
	url   string
}

// Offer returns the server's offer for the placement (its Nonce
// identifies the fill).
func (p *Placement) Offer() attribution.Offer { return p.offer }

// Fill asks the server for an ad for slot, with a request signed by the
// app's SDK key (so that nobody else can ask for this app's fills). Ask
// only when the slot is about to be shown: the server counts every fill as
// an impression. No fill is an error matching ErrNoFill.
func (a *Agent) Fill(ctx context.Context, slot xpromo.Slot) (*Placement, error) {
	if !slot.Valid() {
		return nil, fmt.Errorf("slots: unknown slot %q", slot)
	}
	req := &xpromo.FillRequest{AppID: a.cfg.AppID, Slot: slot, Platform: a.cfg.Platform, DeviceID: a.deviceID, Locale: a.cfg.Locale}
	if err := req.Sign(a.cfg.Key, a.now()); err != nil {
		return nil, fmt.Errorf("slots: signing the fill request: %w", err)
	}
	resp, err := a.client.SDKFill(ctx, req)
	if err != nil {
		return nil, err
	}
	if !resp.Filled {
		reason := xpromo.NoFillReason("")
		if resp.NoFillReason != nil {
			reason = *resp.NoFillReason
		}
		return nil, &NoFillError{Reason: reason}
	}
	return a.placement(slot, *resp)
}

// placement checks a filled answer before anything is shown: an offer for
// another app or platform is refused, and an offer for another advertiser
// than the creative's (NoFillOfferMismatch) or already lapsed
// (NoFillOfferLapsed) is no fill. The server plants such offers as
// canaries (docs/protocol.md): never show one.
func (a *Agent) placement(slot xpromo.Slot, resp xpromo.FillResponse) (*Placement, error) {
	c, o := resp.Creative, resp.Offer
	if c == nil || o == nil {
		return nil, errors.New("slots: fill answer without creative or offer")
	}
	switch {
	case o.Publisher != a.cfg.AppID:
		return nil, fmt.Errorf("slots: fill offer is for app %q, not %q", o.Publisher, a.cfg.AppID)
	case o.Advertiser != c.AdvertiserAppID:
		return nil, &NoFillError{Reason: NoFillOfferMismatch}
	case o.Platform != string(a.cfg.Platform):
		return nil, fmt.Errorf("slots: fill offer is for platform %q, not %q", o.Platform, a.cfg.Platform)
	}
	if u, err := url.Parse(c.DownloadURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("slots: creative download URL %q is not an absolute http(s) URL", c.DownloadURL)
	}
	expires := o.Expires()
	if resp.ExpiresAt != nil && resp.ExpiresAt.Before(expires) {
		expires = *resp.ExpiresAt
	}
	if !a.now().Before(expires) {
		return nil, &NoFillError{Reason: NoFillOfferLapsed}
	}
	return &Placement{
		Ad: Ad{
			Slot: slot, Title: c.Title, IconURL: c.IconURL, Description: c.Description, CTA: c.CTA,
			// The label is not the server's to change: it is always shown.
			SponsoredLabel:  xpromo.SponsoredLabel,
			AdvertiserAppID: c.AdvertiserAppID, ExpiresAt: expires,
		},
		offer: *o, dlURL: c.DownloadURL, agent: a,
	}, nil
}

// Click records the user's click: it signs the click token (the offer plus
// iat = now and exp = iat + 15 minutes, with the app's SDK key), queues
// the click report (POST /v1/sdk/click, attempted at once), writes the
// token to the local inbox for the advertised app, and returns the
// download URL, carrying the token, for the app to open in the browser.
// The click report is best effort: the install claim carries the token, so
// even a click whose report is lost is attributed.
func (p *Placement) Click(ctx context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.url != "" {
		return p.url, nil
	}
	a := p.agent
	now := a.now()
	if !now.Before(p.Ad.ExpiresAt) {
		return "", ErrOfferExpired
	}
	token, err := attribution.SignClick(a.cfg.Key.Private, a.cfg.Key.ID, attribution.NewClickClaims(p.offer, now))
	if err != nil {
		return "", err
	}
	u, err := attribution.HandoffURL(p.dlURL, token)
	if err != nil {
		return "", err
	}
	// The key names the token, so a report queued twice is one click.
	if _, err := a.queue.EnqueueWithKey(EventClick, pathClick, "click_"+attribution.TokenHashString(token), xpromo.ClickRequest{Token: token}); err != nil {
		a.log.Warn("xpromo: click report not queued", "error", err)
	}
	if a.handoff.Inbox.Dir != "" {
		if err := a.handoff.Inbox.Put(token); err != nil {
			a.log.Warn("xpromo: inbox handoff not written; the download URL still carries the token", "error", err)
		}
	}
	p.token, p.url = token, u
	a.flushSoon(ctx)
	return u, nil
}

// Token returns the signed click token after Click ("" before).
func (p *Placement) Token() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.token
}

// ShowResult is what Show did.
type ShowResult struct {
	// Placement is the filled slot (nil when there was no fill).
	Placement *Placement
	Outcome   Outcome
	// DownloadURL is set when the user clicked: open it in the browser.
	DownloadURL string
}

// Show fills slot, renders the ad through r, and on a click reports it
// and returns the download URL to open. No fill returns an error matching
// ErrNoFill; render nothing then.
func (a *Agent) Show(ctx context.Context, slot xpromo.Slot, r Renderer) (ShowResult, error) {
	p, err := a.Fill(ctx, slot)
	if err != nil {
		return ShowResult{}, err
	}
	res := ShowResult{Placement: p}
	// The render context ends when the offer lapses, by the SDK's clock.
	rctx, cancel := context.WithTimeout(ctx, p.Ad.ExpiresAt.Sub(a.now()))
	defer cancel()
	out, err := r.Render(rctx, p.Ad)
	if err != nil {
		return res, fmt.Errorf("slots: render: %w", err)
	}
	res.Outcome = out
	if out == Clicked {
		if res.DownloadURL, err = p.Click(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}
