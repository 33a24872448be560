package attribution

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"time"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/groupcommit"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/txunit"
)

// fraudError is the error a refused message answers: its fraud code and a
// message naming the check and, when one was recorded, the rejected chain.
func fraudError(code, msg, chainID string) *apperr.Error {
	if chainID != "" {
		msg += " (recorded as rejected chain " + chainID + ")"
	}
	return apperr.New(code, "%s", msg)
}

// tokenErrorMessage is a verification failure's message without the
// package prefix, with the reason: "offer MAC does not verify (bad_mac)".
func tokenErrorMessage(err error) string {
	var e *token.Error
	if errors.As(err, &e) {
		if e.Msg == "" {
			return string(e.Reason)
		}
		return e.Msg + " (" + string(e.Reason) + ")"
	}
	return err.Error()
}

// IPKey is the form a client address is stored and counted in: an IPv4
// address as is, an IPv6 address as its /64 (one subscriber's network).
func IPKey(ip netip.Addr) string {
	if !ip.IsValid() {
		return ""
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}

// chainFromClick is a new clicked chain for a verified click token.
func chainFromClick(c *token.Click, now time.Time) Chain {
	o := c.Claims.Offer
	return Chain{
		ID: ids.New("ch"), Nonce: o.Nonce, State: StateClicked,
		CampaignID: o.CampaignID, PublisherAppID: o.Publisher, AdvertiserAppID: o.Advertiser,
		Category: o.Category, Platform: xpromo.Platform(o.Platform), PriceCents: o.PriceCents,
		OfferedAt: unixTime(o.OfferedAt), ClickedAt: c.Claims.IssuedTime(), ExpiresAt: c.Claims.ExpiresTime(),
		ClickToken: c.Raw, TokenHash: c.Hash(), PublisherKID: c.Header.Kid,
		CreatedAt: now, UpdatedAt: now,
	}
}

// refusal is a message refused before it was authenticated: it is recorded
// as a rejected chain of its own and leaves the chain it names untouched.
type refusal struct {
	code  string
	msg   string
	click *token.Click // set when the click token parsed
	// offerOK: the offer's MAC verified, so its apps and campaign are the
	// server's own words and the record may name them.
	offerOK          bool
	countersignature string
	deviceID         string
	ip               string
	// canaryVia is set (CanaryViaClick, CanaryViaInstall) when the click
	// token is a canary's and the publisher's signature verified: the
	// refusal also records the canary click (canary.go).
	canaryVia string
}

// record is the rejected chain recording r.
func (r refusal) record(now time.Time) Chain {
	c := Chain{ID: ids.New("ch"), State: StateRejected, Reason: r.code, Countersignature: r.countersignature,
		DeviceID: r.deviceID, InstallIP: r.ip, ResolvedAt: now, CreatedAt: now, UpdatedAt: now}
	if r.click != nil {
		c.ClaimedNonce, c.ClickToken, c.TokenHash, c.PublisherKID = r.click.Claims.Nonce, r.click.Raw, r.click.Hash(), r.click.Header.Kid
		c.ClickedAt, c.ExpiresAt = r.click.Claims.IssuedTime(), r.click.Claims.ExpiresTime()
		if r.offerOK {
			o := r.click.Claims.Offer
			c.CampaignID, c.PublisherAppID, c.AdvertiserAppID = o.CampaignID, o.Publisher, o.Advertiser
			c.Category, c.Platform, c.PriceCents = o.Category, xpromo.Platform(o.Platform), o.PriceCents
			c.OfferedAt = unixTime(o.OfferedAt)
		}
	}
	return c
}

func unixTime(s int64) time.Time { return time.Unix(s, 0).UTC() }

// refuse records r in a transaction of its own and returns its error.
//
// What unauthenticated garbage can write is bounded: a message whose offer
// MAC does not verify names nothing the server issued, so it is answered
// and logged but not stored (anyone can send such messages at any rate);
// a message about a real offer is recorded once per offer and reason, and
// its repetitions answer that first record.
func (s *Service) refuse(ctx context.Context, r refusal) error {
	now := s.now()
	var canary func(ctx context.Context, tx Tx) error
	if r.canaryVia != "" {
		c := CanaryClick{Nonce: r.click.Claims.Nonce, AppID: r.click.Claims.Publisher, Via: r.canaryVia, At: now}
		canary = func(ctx context.Context, tx Tx) error {
			return recordCanaryClick(ctx, tx, c, func(c CanaryClick) {
				s.log().Warn("canary clicked", "app_id", c.AppID, "via", c.Via, "jti", c.Nonce)
			})
		}
	}
	if !r.offerOK {
		if canary != nil {
			if err := s.Update(ctx, canary); err != nil {
				return err
			}
		}
		s.log().Info("attribution message refused (not recorded: it names no offer of this server)", "code", r.code, "detail", r.msg)
		return fraudError(r.code, r.msg, "")
	}
	rec := r.record(now)
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		if canary != nil {
			if err := canary(ctx, tx); err != nil {
				return err
			}
		}
		rec = r.record(now)
		first, found, err := tx.RefusalRecord(ctx, rec.ClaimedNonce, rec.Reason)
		if err != nil || found {
			rec = first
			return err
		}
		if _, err := tx.InsertChain(ctx, rec); err != nil {
			return err
		}
		return tx.InsertOutbox(ctx, rejectionEvents(rec, "", now))
	})
	if err != nil {
		return err
	}
	s.log().Info("attribution message refused", "code", r.code, "chain_id", rec.ID, "detail", r.msg)
	return fraudError(r.code, r.msg, rec.ID)
}

// verifyClick parses a click token and checks its offer's MAC, the
// publisher's key and its signature: everything but the times.
func (s *Service) verifyClick(ctx context.Context, raw string, now time.Time) (*token.Click, *refusal, error) {
	click, err := token.ParseClick(raw)
	if err != nil {
		return nil, &refusal{code: FraudBadSignature, msg: "click token: " + tokenErrorMessage(err)}, nil
	}
	if err := s.MACKeys.Verify(click.Claims.Offer); err != nil {
		return click, &refusal{code: FraudBadSignature, msg: "click token: " + tokenErrorMessage(err), click: click}, nil
	}
	key, found, err := s.sdkKey(ctx, click.Header.Kid)
	if err != nil {
		return nil, nil, err
	}
	if !found || key.AppID != click.Claims.Publisher || key.Revoked(now) {
		return click, &refusal{code: FraudBadSignature, offerOK: true, click: click,
			msg: fmt.Sprintf("click token: SDK key %s is not a registered, unrevoked key of the publisher app %s", click.Header.Kid, click.Claims.Publisher)}, nil
	}
	if err := click.Verify(key.PublicKey); err != nil {
		return click, &refusal{code: FraudBadSignature, offerOK: true, click: click, msg: "click token: " + tokenErrorMessage(err)}, nil
	}
	return click, nil, nil
}

// Click records a click the publisher's SDK reports: it verifies the token
// (offer MAC, the publisher's registered SDK key, signature, times) and
// inserts the chain, clicked, under the offer's nonce. Reporting the same
// token again returns its chain (replayed true); another token with the
// same nonce is fraud_token_reused. ip is the client's address. A token on
// a canary, signed by a key of its publisher, is recorded as a canary
// click and refused as an ordinary token of its kind (canary.go).
func (s *Service) Click(ctx context.Context, raw string, ip netip.Addr) (ch Chain, replayed bool, err error) {
	now := s.now()
	rules := s.Rules.withDefaults()
	click, ref, err := s.verifyClick(ctx, raw, now)
	if err != nil {
		return Chain{}, false, err
	}
	canary := ref == nil && s.isCanary(click.Claims.Offer)
	if ref == nil {
		if terr := click.CheckTime(now, rules.ClockSkew); terr != nil {
			ref = &refusal{code: FraudTokenExpired, msg: "click token: " + tokenErrorMessage(terr), click: click, offerOK: true}
		}
	}
	if canary {
		// Answered as an ordinary refused token of its kind; one the
		// ordinary checks would accept as a forged offer.
		if ref == nil {
			ref = s.canaryAnswer(click, "click token")
		}
		ref.canaryVia = CanaryViaClick
	}
	if ref != nil {
		ref.ip = IPKey(ip)
		return Chain{}, false, s.refuse(ctx, *ref)
	}
	var refused *Chain
	err = s.Update(ctx, func(ctx context.Context, tx Tx) error {
		refused, replayed = nil, false
		ch = chainFromClick(click, now)
		ch.ClickIP = IPKey(ip)
		inserted, err := tx.InsertChain(ctx, ch)
		if err != nil || inserted {
			return err
		}
		existing, found, err := tx.ChainByNonce(ctx, ch.Nonce, false)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("attribution: chain of nonce %s neither inserted nor found", ch.Nonce)
		}
		if existing.TokenHash == ch.TokenHash {
			ch, replayed = existing, true
			return nil
		}
		rec := refusal{code: FraudTokenReused, click: click, offerOK: true, ip: IPKey(ip)}.record(now)
		refused = &rec
		if _, err := tx.InsertChain(ctx, rec); err != nil {
			return err
		}
		return tx.InsertOutbox(ctx, rejectionEvents(rec, "", now))
	})
	if err != nil {
		return Chain{}, false, err
	}
	if refused != nil {
		return Chain{}, false, fraudError(FraudTokenReused, "click token: offer "+click.Claims.Nonce+" was already clicked with another token", refused.ID)
	}
	s.clicks.put(ch.Nonce, ch.ID, now)
	return ch, replayed, nil
}

// Claim is an install claim: the click token, the advertiser SDK's
// countersignature over it, and the client's address.
type Claim struct {
	Token            string
	Countersignature string
	IP               netip.Addr
}

// Install handles an install claim of the advertiser's SDK. Before touching
// any chain it verifies the click token (offer MAC, the publisher's key and
// signature), the countersignature (the advertiser's registered key, its
// signature, its binding to the token, the claiming app) and the times; a
// failure there is recorded as a refused claim and leaves the chain alone.
// Then, in one transaction, it takes the chain by nonce (inserting it when
// the click was never reported) and:
//
//   - a chain already claimed is fraud_token_reused (the same
//     countersignature again returns the chain, replayed);
//   - the fraud rules (self promotion, datacenter ASN, CTIT, device reused,
//     install velocity), the campaign's daily budget and the advertiser's
//     wallet are checked; a failure rejects the chain with its code;
//   - otherwise the chain becomes installed, escrow is held (ledger
//     escrow_hold, keyed by the chain) and the outbox gets its events.
func (s *Service) Install(ctx context.Context, c Claim) (ch Chain, replayed bool, err error) {
	now := s.now()
	rules := s.Rules.withDefaults()
	ipKey := IPKey(c.IP)
	click, ref, err := s.verifyClick(ctx, c.Token, now)
	if err != nil {
		return Chain{}, false, err
	}
	canary := ref == nil && s.isCanary(click.Claims.Offer)
	var in *token.Install
	if ref == nil {
		in, ref, err = s.verifyCountersignature(ctx, c.Countersignature, click, now)
		if err != nil {
			return Chain{}, false, err
		}
	}
	if ref == nil {
		if terr := in.CheckTime(click, now, rules.ClockSkew); terr != nil {
			ref = &refusal{code: FraudTokenExpired, msg: "install claim: " + tokenErrorMessage(terr), click: click, offerOK: true}
		}
	}
	if canary {
		if ref == nil {
			ref = s.canaryAnswer(click, "click token")
		}
		ref.canaryVia = CanaryViaInstall
	}
	if ref != nil {
		ref.countersignature, ref.ip = c.Countersignature, ipKey
		if in != nil {
			ref.deviceID = in.Claims.DeviceID
		}
		return Chain{}, false, s.refuse(ctx, *ref)
	}

	// The claim is authentic. The two apps, from the cache (read before the
	// transaction: it must not wait for a second connection while holding
	// locks): the self-promotion rule compares their bundle ids, and the
	// first-trade rule only concerns apps still approved.
	pub, _, err := s.app(ctx, click.Claims.Publisher)
	if err != nil {
		return Chain{}, false, err
	}
	adv, _, err := s.app(ctx, click.Claims.Advertiser)
	if err != nil {
		return Chain{}, false, err
	}
	firstTrade := pub.Status == xpromo.AppStatusApproved || adv.Status == xpromo.AppStatusApproved

	// Everything below happens in one transaction, which concurrent claims
	// may share (group commit: one COMMIT for many claims, each in its own
	// savepoint, each answered after that COMMIT). The function uses only
	// its tx, as groupcommit.Allow requires.
	// claimChain writes the claim onto its chain.
	var installASN int64
	if c.IP.IsValid() && s.IPs != nil {
		asn, _ := s.IPs.Classify(c.IP)
		installASN = int64(asn)
	}
	claimChain := func(ch *Chain) {
		ch.Countersignature, ch.AdvertiserKID, ch.DeviceID = c.Countersignature, in.Header.Kid, in.Claims.DeviceID
		ch.ClaimedAt, ch.InstallIP, ch.InstallASN, ch.UpdatedAt = in.Claims.ClaimedTime(), ipKey, installASN, now
	}
	var outcome *apperr.Error
	var refusedID string
	var traded bool
	err = s.Update(groupcommit.Allow(ctx), func(ctx context.Context, tx Tx) error {
		outcome, refusedID, replayed, traded = nil, "", false, false
		var reads claimReads
		var fresh bool
		var err error
		ch, fresh, err = s.takeChain(ctx, tx, click, claimChain, now, rules, &reads)
		if err != nil {
			return err
		}
		if ch.TokenHash != click.Hash() || ch.State != StateClicked {
			if ch.TokenHash == click.Hash() && ch.Countersignature == c.Countersignature {
				// The same claim again (a retry): its outcome, unchanged.
				replayed = true
				if ch.State == StateRejected {
					outcome = fraudError(ch.Reason, "install claim: this claim was already refused", ch.ID)
				}
				return nil
			}
			rec := refusal{code: FraudTokenReused, click: click, offerOK: true, countersignature: c.Countersignature,
				deviceID: in.Claims.DeviceID, ip: ipKey}.record(now)
			refusedID = rec.ID
			outcome = fraudError(FraudTokenReused, "install claim: the click token was already used", rec.ID)
			if _, err := tx.InsertChain(ctx, rec); err != nil {
				return err
			}
			return tx.InsertOutbox(ctx, rejectionEvents(rec, "", now))
		}
		prev := ch.State
		claimChain(&ch)
		code, msg, err := s.fraudCheck(ctx, tx, &ch, click, in, c.IP, pub, adv, now, rules, &reads)
		if err != nil {
			return err
		}
		if code == "" {
			code, msg, err = s.hold(ctx, tx, &ch, now, &reads)
			if err != nil {
				return err
			}
		}
		if code != "" {
			ch.State, ch.Reason, ch.ResolvedAt = StateRejected, code, now
			outcome = fraudError(code, "install claim: "+msg, ch.ID)
			if err := writeChain(ctx, tx, ch, fresh); err != nil {
				return err
			}
			return tx.InsertOutbox(ctx, rejectionEvents(ch, prev, now))
		}
		ch.State, ch.InstalledAt = StateInstalled, now
		if err := writeChain(ctx, tx, ch, fresh); err != nil {
			return err
		}
		if err := tx.InsertOutbox(ctx, stateEvents(ch, prev, now)); err != nil {
			return err
		}
		// The first trade moves approved apps to throttled. The app rows are
		// locked after the accounts (as the sweep does) and in id order, so
		// claims and sweeps cannot deadlock on them.
		if !firstTrade {
			return nil
		}
		a, b := ch.AdvertiserAppID, ch.PublisherAppID
		if b < a {
			a, b = b, a
		}
		traded, err = s.Auction.RecordTrade(ctx, tx, a, b)
		return err
	})
	if err != nil {
		return Chain{}, false, err
	}
	if outcome != nil {
		s.log().Info("install claim refused", "code", outcome.Code, "chain_id", ch.ID, "refused_claim", refusedID, "detail", outcome.Message)
		return Chain{}, false, outcome
	}
	// Delivery's counters follow committed money only: with the request's
	// unit of work, if it runs in one (txunit).
	held, spent := ch, !replayed
	txunit.AfterCommit(ctx, func() {
		if spent {
			s.Auction.Spent(held.CampaignID, held.AdvertiserAppID, held.PriceCents, held.InstalledAt)
		}
		if traded {
			s.Auction.Invalidate()
		}
	})
	return ch, replayed, nil
}

// verifyCountersignature parses the countersignature and checks it against
// the claiming app's registered key and the click token.
func (s *Service) verifyCountersignature(ctx context.Context, raw string, click *token.Click, now time.Time) (*token.Install, *refusal, error) {
	in, err := token.ParseInstall(raw)
	if err != nil {
		return nil, &refusal{code: FraudBadCountersignature, msg: "countersignature: " + tokenErrorMessage(err), click: click, offerOK: true}, nil
	}
	key, found, err := s.sdkKey(ctx, in.Header.Kid)
	if err != nil {
		return nil, nil, err
	}
	if !found || key.AppID != in.Claims.AppID || key.Revoked(now) {
		return in, &refusal{code: FraudBadCountersignature, click: click, offerOK: true,
			msg: fmt.Sprintf("countersignature: SDK key %s is not a registered, unrevoked key of app %s", in.Header.Kid, in.Claims.AppID)}, nil
	}
	if err := in.Verify(key.PublicKey, click); err != nil {
		return in, &refusal{code: token.Code(err), click: click, offerOK: true, msg: "countersignature: " + tokenErrorMessage(err)}, nil
	}
	return in, nil, nil
}

// takeChain returns the chain of the click's nonce, locked, or, when the
// click was never reported (fresh), a new clicked chain that is not stored
// yet: the claim writes it once, in its final state (writeChain), instead
// of inserting it clicked and updating it, which on PostgreSQL wrote every
// index of chains twice. Single use still rests on the unique nonce: a
// chain of the nonce that a concurrent click or claim inserts meanwhile
// makes writeChain's insert fail as a conflict, and the store runs the
// claim again, which then finds that chain.
//
// On a ClaimPipeliner the chain's locking read goes in one round trip with
// everything the claim reads next (ClaimReads), prepared for the fresh
// chain: a claim whose click was never reported reads all it needs in that
// one round trip. When the chain is found instead, the reads stand but for
// the hold's, which read's next call makes again for the chain's own id.
func (s *Service) takeChain(ctx context.Context, tx Tx, click *token.Click, claim func(*Chain), now time.Time, rules Rules, reads *claimReads) (ch Chain, fresh bool, err error) {
	p, ok := tx.(ClaimPipeliner)
	if !ok {
		ch, found, err := tx.ChainByNonce(ctx, click.Claims.Nonce, true)
		if err != nil || found {
			return ch, false, err
		}
		return chainFromClick(click, now), true, nil
	}
	f := chainFromClick(click, now)
	claim(&f)
	// The hold's reads are for the chain the click stored, if this
	// instance recorded it, else for f.
	probe := f
	if id, ok := s.clicks.get(click.Claims.Nonce); ok {
		probe.ID = id
	}
	reads.prepare(&probe, now, rules)
	q := reads.query
	q.Nonce = click.Claims.Nonce
	st, err := p.ClaimReads(ctx, q)
	if err != nil {
		return Chain{}, false, err
	}
	reads.ClaimState, reads.pipelined = st, true
	if st.ChainFound {
		return st.Chain, false, nil
	}
	return f, true, nil
}

// writeChain stores a claim's chain in its final state: inserted when
// takeChain found none, else updated.
func writeChain(ctx context.Context, tx Tx, ch Chain, fresh bool) error {
	if fresh {
		return tx.InsertClaimedChain(ctx, ch)
	}
	return tx.UpdateChains(ctx, []Chain{ch})
}

// fraudCheck runs the fraud rules that need the server's state, in order,
// and returns the first that fails (code "" when none does).
func (s *Service) fraudCheck(ctx context.Context, tx Tx, ch *Chain, click *token.Click, in *token.Install, ip netip.Addr, pub, adv apps.App, now time.Time, rules Rules, reads *claimReads) (code, msg string, err error) {
	// Self promotion: the offer's two apps are one (the auction never pairs
	// them, so only a forged or stale offer can), or share a bundle id.
	if ch.PublisherAppID == ch.AdvertiserAppID {
		return FraudSelfPromotion, "the publisher and the advertiser are the same app", nil
	}
	if pub.ID != "" && adv.ID != "" && strings.EqualFold(pub.BundleID, adv.BundleID) {
		return FraudSelfPromotion, "the publisher and the advertiser share the bundle id " + adv.BundleID, nil
	}
	// Datacenter: the claim's address, or the click's when it was reported.
	if s.IPs != nil {
		addrs := []netip.Addr{ip}
		if a, err := netip.ParseAddr(ch.ClickIP); err == nil {
			addrs = append(addrs, a)
		} else if p, err := netip.ParsePrefix(ch.ClickIP); err == nil {
			addrs = append(addrs, p.Addr())
		}
		for _, a := range addrs {
			if !a.IsValid() {
				continue
			}
			if asn, dc := s.IPs.Classify(a); dc {
				return FraudDatacenterASN, fmt.Sprintf("address %s belongs to a datacenter network (AS%d)", IPKey(a), asn), nil
			}
		}
	}
	// Click to install, on the device's clock.
	if ctit := in.CTIT(click); ctit < rules.MinCTIT {
		return FraudCTITTooShort, fmt.Sprintf("the install was claimed %s after the click; at least %s is expected", ctit, rules.MinCTIT), nil
	}
	if err := reads.read(ctx, tx, ch, now, rules); err != nil {
		return "", "", err
	}
	h := reads.History
	if h.DeviceHasApp {
		return FraudDeviceReused, "this device already claimed an install of app " + ch.AdvertiserAppID, nil
	}
	if h.ByDevice >= int64(rules.DeviceInstalls) {
		return FraudInstallVelocity, fmt.Sprintf("this device had %d installs accepted in the last %s (limit %d)", h.ByDevice, rules.DeviceWindow, rules.DeviceInstalls), nil
	}
	if ch.InstallIP != "" && h.ByIP >= int64(rules.IPInstalls) {
		return FraudInstallVelocity, fmt.Sprintf("address %s had %d installs accepted in the last %s (limit %d)", ch.InstallIP, h.ByIP, rules.IPWindow, rules.IPInstalls), nil
	}
	return "", "", nil
}

// hold checks the campaign's daily budget and holds the price in escrow,
// in tx. It returns a rejection code (budget_exhausted, insufficient_funds)
// when the install cannot be bought.
func (s *Service) hold(ctx context.Context, tx Tx, ch *Chain, now time.Time, reads *claimReads) (code, msg string, err error) {
	if !reads.pipelined {
		// Read after the lock: under READ COMMITTED this statement sees
		// every claim of the campaign committed before it.
		q := reads.query
		reads.Campaign, reads.CampaignFound, err = tx.CampaignForUpdate(ctx, q.CampaignID)
		if err != nil {
			return "", "", err
		}
		if reads.CampaignFound {
			if reads.Spent, err = tx.CampaignSpend(ctx, q.CampaignID, q.SpendDay); err != nil {
				return "", "", err
			}
		}
	}
	cmp := reads.Campaign
	if !reads.CampaignFound || cmp.AppID != ch.AdvertiserAppID {
		return "", "", fmt.Errorf("attribution: campaign %s of a MAC-verified offer is not the advertiser's", ch.CampaignID)
	}
	if err := s.Auction.CheckBudget(cmp.DailyBudgetCents, reads.Spent, ch.PriceCents); err != nil {
		return apperr.Code(err), messageOf(err), nil
	}
	if reads.opErr != nil {
		return "", "", reads.opErr
	}
	_, errs, err := ledger.Apply(ctx, tx, now, reads.query.Ledger)
	if err != nil {
		return "", "", err
	}
	if errs[0] != nil {
		if apperr.Is(errs[0], apperr.InsufficientFunds) {
			return apperr.InsufficientFunds, messageOf(errs[0]), nil
		}
		return "", "", errs[0]
	}
	return "", "", nil
}

func messageOf(err error) string {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// Heartbeat records a heartbeat of the advertiser's SDK: it verifies the
// signature (the app's registered key), the freshness of ts and that seq
// is above the chain's last one (else fraud_token_reused), then, for an
// installed chain whose install is 48 to 72 hours old, moves it to
// activated_48h. Heartbeats before 48 hours are recorded and change
// nothing; after 72 hours the chain is refunded by the sweep. The chain is
// the one whose click token hash is th, installed by app on dev (else
// not_found).
func (s *Service) Heartbeat(ctx context.Context, raw string) (Chain, error) {
	now := s.now()
	rules := s.Rules.withDefaults()
	hb, err := token.ParseHeartbeat(raw)
	if err != nil {
		return Chain{}, fraudError(FraudBadSignature, "heartbeat: "+tokenErrorMessage(err), "")
	}
	key, found, err := s.sdkKey(ctx, hb.Header.Kid)
	if err != nil {
		return Chain{}, err
	}
	if !found || key.AppID != hb.Claims.AppID || key.Revoked(now) {
		return Chain{}, fraudError(FraudBadSignature, fmt.Sprintf("heartbeat: SDK key %s is not a registered, unrevoked key of app %s", hb.Header.Kid, hb.Claims.AppID), "")
	}
	if err := hb.Verify(key.PublicKey); err != nil {
		return Chain{}, fraudError(FraudBadSignature, "heartbeat: "+tokenErrorMessage(err), "")
	}
	if err := hb.CheckTime(now, rules.ClockSkew); err != nil {
		return Chain{}, fraudError(FraudTokenExpired, "heartbeat: "+tokenErrorMessage(err), "")
	}
	var ch Chain
	var outcome *apperr.Error
	err = s.Update(ctx, func(ctx context.Context, tx Tx) error {
		outcome = nil
		var found bool
		var err error
		ch, found, err = tx.ChainByTokenHash(ctx, hb.Claims.TokenHash, true)
		if err != nil {
			return err
		}
		if !found || ch.InstalledAt.IsZero() || ch.AdvertiserAppID != hb.Claims.AppID || ch.DeviceID != hb.Claims.DeviceID {
			outcome = apperr.New(apperr.NotFound, "no install of app %s on this device for this click token", hb.Claims.AppID)
			return nil
		}
		if hb.Claims.Seq <= ch.HeartbeatSeq {
			outcome = fraudError(FraudTokenReused, fmt.Sprintf("heartbeat: seq %d is not above the last accepted, %d", hb.Claims.Seq, ch.HeartbeatSeq), "")
			return nil
		}
		prev := ch.State
		ch.HeartbeatSeq, ch.LastHeartbeatAt, ch.UpdatedAt = hb.Claims.Seq, now, now
		age := now.Sub(ch.InstalledAt)
		activated := ch.State == StateInstalled && age >= ActivationAfter && age < ActivationWindowEnd
		if activated {
			ch.State, ch.ActivatedAt = StateActivated, now
		}
		if err := tx.UpdateChains(ctx, []Chain{ch}); err != nil {
			return err
		}
		if activated {
			return tx.InsertOutbox(ctx, stateEvents(ch, prev, now))
		}
		return nil
	})
	if err != nil {
		return Chain{}, err
	}
	if outcome != nil {
		return Chain{}, outcome
	}
	return ch, nil
}

// ClaimPipeliner is implemented by stores where each statement costs a round
// trip (PostgreSQL). An install claim then reads what it needs in one round
// trip (two when its click was reported), the same statements in the same
// order as through Tx.
type ClaimPipeliner interface {
	// ClaimReads runs, in this order, ChainByNonce(q.Nonce, lock),
	// InstallHistory, CampaignForUpdate and, after the campaign's lock is
	// granted, CampaignSpend; then it sends ledger.Apply's reads for
	// q.Ledger (operation keys, holds, account locks: the locks after the
	// campaign's, as without pipelining), whose results the store hands to
	// Apply's calls with the same arguments.
	ClaimReads(ctx context.Context, q ClaimQuery) (ClaimState, error)
	// LedgerReads sends ledger.Apply's reads for ops alone, as ClaimReads
	// does, in one round trip.
	LedgerReads(ctx context.Context, ops []ledger.Operation) error
}

// ClaimQuery is what an accepted claim reads: its chain (locked), the
// device's and address's installs for the fraud rules, the campaign
// (locked) and its day's spend for the budget, and the escrow hold to apply.
type ClaimQuery struct {
	Nonce                         string
	AdvertiserAppID, DeviceID, IP string
	DeviceSince, IPSince          time.Time
	CampaignID                    string
	SpendDay                      time.Time // the UTC day whose spend the budget caps
	Ledger                        []ledger.Operation
}

// ClaimState is what ClaimReads read.
type ClaimState struct {
	Chain         Chain
	ChainFound    bool
	History       InstallHistory
	Campaign      CampaignBudget
	CampaignFound bool
	Spent         int64 // the campaign's spend of SpendDay
}

// claimReads carries a claim's reads from the fraud rules to the hold.
type claimReads struct {
	ClaimState
	query     ClaimQuery
	pipelined bool  // ClaimState is complete (ClaimPipeliner); else only History
	opErr     error // ledger.EscrowHold's refusal of the hold
}

// prepare sets the query of ch's claim: its rules' reads, its campaign, the
// escrow hold of its chain id.
func (r *claimReads) prepare(ch *Chain, now time.Time, rules Rules) {
	r.query = ClaimQuery{AdvertiserAppID: ch.AdvertiserAppID, DeviceID: ch.DeviceID, IP: ch.InstallIP,
		DeviceSince: now.Add(-rules.DeviceWindow), IPSince: now.Add(-rules.IPWindow),
		CampaignID: ch.CampaignID, SpendDay: day(now)}
	// An invalid hold is the hold's error, after the rules and the budget.
	op, opErr := ledger.EscrowHold(holdKey(ch.ID), ch.hold())
	r.opErr = opErr
	if opErr == nil {
		r.query.Ledger = []ledger.Operation{op}
	}
}

// read reads the install history and, on a ClaimPipeliner, everything the
// hold needs. takeChain has read it all already, for the chain its hold's
// reads were prepared for; the rest is the same for any chain it returns
// (it has this claim's token, hence its offer, and ch has this claim's
// device and address). When ch is another chain (a click this instance did
// not record), only the hold's reads are made again, for ch.
func (r *claimReads) read(ctx context.Context, tx Tx, ch *Chain, now time.Time, rules Rules) error {
	if r.pipelined {
		prepared := r.query.Ledger
		r.prepare(ch, now, rules)
		if r.opErr != nil || reflect.DeepEqual(prepared, r.query.Ledger) {
			return nil
		}
		return tx.(ClaimPipeliner).LedgerReads(ctx, r.query.Ledger)
	}
	r.prepare(ch, now, rules)
	q := r.query
	var err error
	r.History, err = tx.InstallHistory(ctx, q.AdvertiserAppID, q.DeviceID, q.DeviceSince, q.IP, q.IPSince)
	return err
}
