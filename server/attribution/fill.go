package attribution

import (
	"context"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/txunit"
)

// Creative is what the publisher's SDK renders (IAB Native assets: title,
// description, CTA, the sponsored label) and where a click leads.
type Creative = xpromo.Creative

// Fill is a creative and the sealed offer behind it.
type Fill struct {
	Offer    token.Offer
	Creative Creative
	// Award is the auction's outcome (price, floor, reserved), for logs.
	Award Award
}

// FillParams is a publisher SDK's fill request.
type FillParams struct {
	PublisherAppID string
	Slot           xpromo.Slot
	// Platform is the device's platform: the auction stream is the
	// publisher's category on it.
	Platform xpromo.Platform
}

// fillableStatuses are the publisher statuses that may show creatives: an
// app that passed the gate and is not suspended.
var fillableStatuses = []xpromo.AppStatus{xpromo.AppStatusApproved, xpromo.AppStatusThrottled, xpromo.AppStatusLive}

// Fill runs the auction for a slot of the publisher and seals the winner's
// offer. It writes nothing to the database: the offer is bound to the
// server by its MAC, and fills are counted in memory (FlushFills stores the
// counts). Nothing to show is not an error: reason says why
// (publisher_not_eligible: the publisher is pending, rejected, suspended or
// has no category; no_eligible_campaign: the auction found none). A
// publisher app that does not exist is not_found.
func (s *Service) Fill(ctx context.Context, p FillParams) (f Fill, reason xpromo.NoFillReason, err error) {
	if !p.Slot.Valid() {
		e := apperr.New(apperr.InvalidSlot, "slot must be one of onboarding_complete, update_installed, about_window, settings_idle, before_quit, not %q", p.Slot)
		e.Field = "slot"
		return Fill{}, "", e
	}
	if !p.Platform.Valid() {
		e := apperr.New(apperr.InvalidPlatform, "platform must be mac or win, not %q", p.Platform)
		e.Field = "platform"
		return Fill{}, "", e
	}
	pub, found, err := s.app(ctx, p.PublisherAppID)
	if err != nil {
		return Fill{}, "", err
	}
	if !found {
		return Fill{}, "", apperr.New(apperr.NotFound, "app not found")
	}
	if pub.Category == "" || !slices.Contains(fillableStatuses, pub.Status) {
		return Fill{}, xpromo.NoFillPublisherNotEligible, nil
	}
	award, ok, err := s.Auction.Fill(ctx, pub.ID, pub.Category, p.Platform)
	if err != nil {
		return Fill{}, "", err
	}
	if !ok {
		return Fill{}, xpromo.NoFillNoCampaign, nil
	}
	adv, found, err := s.app(ctx, award.AdvertiserAppID)
	if err != nil {
		return Fill{}, "", err
	}
	if !found || adv.ID == pub.ID {
		return Fill{}, xpromo.NoFillNoCampaign, nil // the auction never awards these
	}
	nonce, err := token.NewNonce(nil)
	if err != nil {
		return Fill{}, "", err
	}
	now := s.Now().UTC()
	offer, err := token.SealOffer(s.MACKey, token.Offer{
		Nonce: nonce, Publisher: pub.ID, Advertiser: adv.ID, CampaignID: award.CampaignID,
		Category: award.Category, Platform: string(award.Platform), PriceCents: award.PriceCents,
		OfferedAt: now.Unix(),
	})
	if err != nil {
		return Fill{}, "", err
	}
	// Counted once the fill is answered for good: with the request's unit
	// of work, if it runs in one (its stored answer commits; txunit).
	fc := FillCount{Day: day(now), CampaignID: award.CampaignID, AdvertiserAppID: adv.ID, PublisherAppID: pub.ID, Count: 1}
	txunit.AfterCommit(ctx, func() { s.fills.add(fc) })
	return Fill{
		Offer: offer,
		Creative: Creative{
			Title:           truncate(adv.Name, xpromo.MaxCreativeTitle),
			Description:     truncate(adv.Name+" for "+platformName(adv.Platform), xpromo.MaxCreativeDescription),
			CTA:             "Download",
			SponsoredLabel:  xpromo.SponsoredLabel,
			DownloadURL:     adv.DownloadURL,
			AdvertiserAppID: adv.ID,
		},
		Award: award,
	}, "", nil
}

// truncate cuts s to at most n characters (runes).
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

func platformName(p xpromo.Platform) string {
	if p == xpromo.PlatformWin {
		return "Windows"
	}
	return "macOS"
}

// day is the UTC midnight starting t's day.
func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// fillCounter counts fills in memory until FlushFills stores them: the fill
// path stays free of writes, and many fills cost one upsert per (day,
// campaign, publisher) per flush.
type fillCounter struct {
	mu     sync.Mutex
	counts map[fillKey]int64
}

type fillKey struct {
	day                             time.Time
	campaign, advertiser, publisher string
}

func (c *fillCounter) add(f FillCount) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = map[fillKey]int64{}
	}
	c.counts[fillKey{f.Day, f.CampaignID, f.AdvertiserAppID, f.PublisherAppID}] += f.Count
	c.mu.Unlock()
}

// take empties the counter and returns what it held.
func (c *fillCounter) take() []FillCount {
	c.mu.Lock()
	counts := c.counts
	c.counts = nil
	c.mu.Unlock()
	out := make([]FillCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, FillCount{Day: k.day, CampaignID: k.campaign, AdvertiserAppID: k.advertiser, PublisherAppID: k.publisher, Count: n})
	}
	return out
}

// FlushFills stores the fills counted since the last flush (Stats'
// impressions read them). When storing fails the counts are kept for the
// next flush. The server flushes every few seconds and at shutdown.
func (s *Service) FlushFills(ctx context.Context) error {
	counts := s.fills.take()
	if len(counts) == 0 {
		return nil
	}
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error { return tx.AddFillCounts(ctx, counts) })
	if err != nil {
		for _, c := range counts {
			s.fills.add(c)
		}
	}
	return err
}
