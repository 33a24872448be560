package attribution

import (
	"time"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// ReasonNotActivated is the reason of a refunded chain: no heartbeat came in
// its activation window.
const ReasonNotActivated = string(xpromo.NotActivated)

// ReasonPublisherSuspended is the reason of a chain the sweep refunded
// instead of clearing it: it activated, but its publisher is suspended for
// fraud (apps.SuspendedForFraud), so the advertiser gets its money back
// and the publisher is not paid.
const ReasonPublisherSuspended = string(xpromo.PublisherSuspended)

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Wire is the chain as the API shows it (GET /v1/chains/{chain_id}) and as
// chain events carry it.
func Wire(c Chain) xpromo.Chain {
	w := xpromo.Chain{
		ChainID: c.ID, State: xpromo.ChainState(c.State),
		CampaignID: c.CampaignID, PublisherAppID: c.PublisherAppID, AdvertiserAppID: c.AdvertiserAppID,
		PriceCents: c.PriceCents, ClickedAt: c.ClickedAt,
		InstalledAt: optTime(c.InstalledAt), ActivatedAt: optTime(c.ActivatedAt), SettledAt: optTime(c.ResolvedAt),
		ClickToken: c.ClickToken,
	}
	if c.Reason != "" {
		r := xpromo.ChainReason(c.Reason)
		w.Reason = &r
	}
	if c.Countersignature != "" {
		cs := c.Countersignature
		w.Countersignature = &cs
	}
	return w
}

// WireKey is an SDK key as the API shows it.
func WireKey(k SDKKey) xpromo.SDKKey {
	return xpromo.SDKKey{KeyID: k.ID, PublicKey: token.EncodePublicKey(k.PublicKey), CreatedAt: k.CreatedAt, RevokedAt: optTime(k.RevokedAt)}
}
