package attribution

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ids"
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

// FillParams is a publisher SDK's fill request, as posted: the fields and
// the signature over them.
type FillParams struct {
	PublisherAppID string
	Slot           xpromo.Slot
	// Platform is the device's platform: the auction stream is the
	// publisher's category on it.
	Platform xpromo.Platform
	// DeviceID and Locale are optional ("").
	DeviceID, Locale string
	// Signature is the request signed with the publisher's SDK key
	// (sdk/attribution.SignFill).
	Signature string
}

// claims are the fields as the signature must cover them.
func (p FillParams) claims() token.FillClaims {
	return token.FillClaims{AppID: p.PublisherAppID, Slot: string(p.Slot), Platform: string(p.Platform),
		DeviceID: p.DeviceID, Locale: p.Locale}
}

// shown quotes a refused value for an error message, cut to a length a
// message can carry (a refused field may be a megabyte).
func shown(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

// validate checks the shape of each field (no state): the field-specific
// bounds of the fill endpoint.
func (p FillParams) validate() error {
	invalid := func(code, field, format string, args ...any) error {
		e := apperr.New(code, format, args...)
		e.Field = field
		return e
	}
	switch {
	case !token.ValidIdentifier(p.PublisherAppID):
		return invalid(apperr.InvalidAppID, "app_id", "app_id must be an app id (1 to %d characters of A-Z a-z 0-9 - _ . : ~), not %s", token.MaxIDLen, shown(p.PublisherAppID))
	case !p.Slot.Valid():
		return invalid(apperr.InvalidSlot, "slot", "slot must be one of onboarding_complete, update_installed, about_window, settings_idle, before_quit, not %s", shown(string(p.Slot)))
	case !p.Platform.Valid():
		return invalid(apperr.InvalidPlatform, "platform", "platform must be mac or win, not %s", shown(string(p.Platform)))
	case p.DeviceID != "" && !token.ValidIdentifier(p.DeviceID):
		return invalid(apperr.InvalidDeviceID, "device_id", "device_id must be 1 to %d characters of A-Z a-z 0-9 - _ . : ~, not %s", token.MaxIDLen, shown(p.DeviceID))
	case p.Locale != "" && !token.ValidLocale(p.Locale):
		return invalid(apperr.InvalidLocale, "locale", "locale must be a BCP 47 language tag of at most %d characters (e.g. de-CH), not %s", token.MaxLocaleLen, shown(p.Locale))
	}
	return nil
}

// VerifiedFill is a fill request whose fields are valid and whose signature
// verified under a registered, unrevoked SDK key of its app: the only kind
// Fill serves. VerifyFill makes them.
type VerifiedFill struct{ p FillParams }

// AppID is the publisher app the verified request is for.
func (v VerifiedFill) AppID() string { return v.p.PublisherAppID }

// VerifyFill checks a fill request: the fields' shapes (invalid_app_id,
// invalid_slot, invalid_platform, invalid_device_id, invalid_locale), then
// its signature as heartbeats are checked: a well-formed token, signed by
// a registered, unrevoked SDK key of the app, over exactly these fields
// (fraud_bad_signature), within the clock skew of now
// (fraud_token_expired). It writes nothing: keys come from the cache, and
// a refusal records no chain. There is no replay cache: a signed request
// sent again within the skew counts again (docs/protocol.md says why).
func (s *Service) VerifyFill(ctx context.Context, p FillParams) (VerifiedFill, error) {
	if err := p.validate(); err != nil {
		return VerifiedFill{}, err
	}
	f, err := token.ParseFill(p.Signature)
	if err != nil {
		return VerifiedFill{}, fraudError(FraudBadSignature, "fill request: "+tokenErrorMessage(err), "")
	}
	now := s.now()
	key, found, err := s.sdkKey(ctx, f.Header.Kid)
	if err != nil {
		return VerifiedFill{}, err
	}
	if !found || key.AppID != p.PublisherAppID || key.Revoked(now) {
		return VerifiedFill{}, fraudError(FraudBadSignature, fmt.Sprintf("fill request: SDK key %s is not a registered, unrevoked key of app %s", f.Header.Kid, p.PublisherAppID), "")
	}
	if err := f.Verify(key.PublicKey); err != nil {
		return VerifiedFill{}, fraudError(FraudBadSignature, "fill request: "+tokenErrorMessage(err), "")
	}
	if err := f.Covers(p.claims()); err != nil {
		return VerifiedFill{}, fraudError(FraudBadSignature, "fill request: "+tokenErrorMessage(err), "")
	}
	if err := f.CheckTime(now, s.Rules.withDefaults().ClockSkew); err != nil {
		return VerifiedFill{}, fraudError(FraudTokenExpired, "fill request: "+tokenErrorMessage(err), "")
	}
	return VerifiedFill{p: p}, nil
}

// fillableStatuses are the publisher statuses that may show creatives: an
// app that passed the gate and is not suspended.
var fillableStatuses = []xpromo.AppStatus{xpromo.AppStatusApproved, xpromo.AppStatusThrottled, xpromo.AppStatusLive}

// Fill runs the auction for a slot of the publisher and seals the winner's
// offer, for a request VerifyFill accepted. It writes nothing to the
// database: the offer is bound to the server by its MAC, and fills are
// counted in memory (FlushFills stores the counts). Nothing to show is not
// an error: reason says why (publisher_not_eligible: the publisher is
// pending, rejected, suspended or has no category; no_eligible_campaign:
// the auction found none). One fill in CanaryRate answers a canary instead
// of the live offer (canary.go).
func (s *Service) Fill(ctx context.Context, v VerifiedFill) (f Fill, reason xpromo.NoFillReason, err error) {
	p := v.p
	if p.PublisherAppID == "" {
		return Fill{}, "", errors.New("attribution: Fill of a request VerifyFill did not accept")
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
	f = Fill{
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
	}
	if s.canaryDue() {
		// A canary instead of the live offer (canary.go): counted as a
		// canary served, not as an impression of the campaign.
		f, err = s.canaryFill(ctx, f, randomVariant(), now)
		return f, "", err
	}
	// Counted once the fill is answered for good: with the request's unit
	// of work, if it runs in one (its stored answer commits; txunit).
	k := fillKey{day(now), award.CampaignID, adv.ID, pub.ID}
	txunit.AfterCommit(ctx, func() { s.fills.add(k, 1) })
	return f, "", nil
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

// counter counts in memory, by key, until FlushFills stores the counts:
// the fill path stays free of writes, and many fills cost one upsert per
// key per flush. It counts fills by (day, campaign, publisher) and
// canaries served by (day, publisher).
type counter[K comparable] struct {
	mu     sync.Mutex
	counts map[K]int64
}

func (c *counter[K]) add(k K, n int64) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = map[K]int64{}
	}
	c.counts[k] += n
	c.mu.Unlock()
}

// take empties the counter and returns what it held.
func (c *counter[K]) take() map[K]int64 {
	c.mu.Lock()
	counts := c.counts
	c.counts = nil
	c.mu.Unlock()
	return counts
}

// sum is the count of the keys match accepts, not taken yet.
func (c *counter[K]) sum(match func(K) bool) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for k, v := range c.counts {
		if match(k) {
			n += v
		}
	}
	return n
}

type fillKey struct {
	day                             time.Time
	campaign, advertiser, publisher string
}

type canaryDay struct {
	day time.Time
	app string
}

// fillFlush is one flush of the counters: its counts and its id.
type fillFlush struct {
	id       string
	fills    map[fillKey]int64
	canaries map[canaryDay]int64
}

// FlushFills stores, in one transaction, the fills counted since the last
// flush (Stats' impressions read them) and the canaries served (canary.go).
// The server flushes every few seconds and at shutdown.
//
// A flush is idempotent: its transaction records its id (RecordFillFlush),
// and a flush that failed is run again, as it was, before the counts taken
// since, so that one whose COMMIT went unanswered (a failover: it may have
// committed) adds nothing the second time. Rows are written in key order,
// so that instances flushing at once lock them in one order and never
// deadlock.
func (s *Service) FlushFills(ctx context.Context) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if f := s.unsure; f != nil {
		if err := s.flush(ctx, f); err != nil {
			return err
		}
		s.unsure = nil
	}
	f := &fillFlush{id: ids.New("flush"), fills: s.fills.take(), canaries: s.canaries.take()}
	if len(f.fills) == 0 && len(f.canaries) == 0 {
		return nil
	}
	if err := s.flush(ctx, f); err != nil {
		s.unsure = f
		return err
	}
	return nil
}

// unflushed is the count of the fills match accepts in a flush not known
// to be stored (counted as not stored yet).
func (s *Service) unflushed(match func(fillKey) bool) int64 {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	var n int64
	if f := s.unsure; f != nil {
		for k, v := range f.fills {
			if match(k) {
				n += v
			}
		}
	}
	return n
}

func (s *Service) flush(ctx context.Context, f *fillFlush) error {
	return s.Update(ctx, func(ctx context.Context, tx Tx) error {
		fresh, err := tx.RecordFillFlush(ctx, f.id, s.now())
		if err != nil || !fresh {
			return err // !fresh: stored by an earlier run whose answer was lost
		}
		if len(f.fills) > 0 {
			counts := make([]FillCount, 0, len(f.fills))
			for k, n := range f.fills {
				counts = append(counts, FillCount{Day: k.day, CampaignID: k.campaign, AdvertiserAppID: k.advertiser, PublisherAppID: k.publisher, Count: n})
			}
			slices.SortFunc(counts, func(a, b FillCount) int {
				return cmp.Or(a.Day.Compare(b.Day), cmp.Compare(a.CampaignID, b.CampaignID), cmp.Compare(a.PublisherAppID, b.PublisherAppID))
			})
			if err := tx.AddFillCounts(ctx, counts); err != nil {
				return err
			}
		}
		if len(f.canaries) > 0 {
			counts := make([]CanaryCount, 0, len(f.canaries))
			for k, n := range f.canaries {
				counts = append(counts, CanaryCount{Day: k.day, AppID: k.app, Count: n})
			}
			slices.SortFunc(counts, func(a, b CanaryCount) int {
				return cmp.Or(a.Day.Compare(b.Day), cmp.Compare(a.AppID, b.AppID))
			})
			return tx.AddCanaryCounts(ctx, counts)
		}
		return nil
	})
}
