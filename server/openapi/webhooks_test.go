package openapi

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The webhooks section documents one request per event type; its body
// schema accepts the event the server sends (the SDK's Event with the
// type's data) and refuses an event whose data is another type's.
func TestWebhooksSection(t *testing.T) {
	doc := load(t)
	var names []string
	for name := range doc.Webhooks {
		names = append(names, name)
	}
	var want []string
	for _, typ := range xpromo.EventTypes {
		want = append(want, string(typ))
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("webhooks = %v, want one per event type %v", names, want)
	}

	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	installed := xpromo.ChainInstalled
	reason := xpromo.ChainReason("fraud_ctit_too_short")
	chain := xpromo.Chain{ChainID: "ch_1", State: xpromo.ChainRejected, Reason: &reason, CampaignID: "cmp_1",
		PublisherAppID: "app_p", AdvertiserAppID: "app_a", PriceCents: 400, ClickedAt: now, SettledAt: &now, ClickToken: "h.p.s"}
	data := map[xpromo.EventType]any{
		xpromo.EventChainStateChanged: xpromo.ChainEventData{Chain: chain, PreviousState: &installed},
		xpromo.EventChainCleared:      xpromo.ChainEventData{Chain: chain, PreviousState: &installed},
		xpromo.EventChainRejected:     xpromo.ChainEventData{Chain: chain},
		xpromo.EventFraudFlagged:      xpromo.FraudEventData{Reason: reason, Chain: chain, PreviousState: &installed},
		xpromo.EventPayoutSent:        xpromo.PayoutEventData{Payout: xpromo.PayoutResponse{TransferID: "tr_1", AmountCents: 5000, PayoutID: "po_1"}},
		xpromo.EventScoreUpdated:      xpromo.ScoreEventData{Score: xpromo.Score{Status: xpromo.AppStatusThrottled, Reasons: []string{}, NextReviewAt: now}},
	}
	body := func(typ xpromo.EventType, d any) any {
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(xpromo.Event{ID: "evt_1", Type: typ, AppID: "app_a", CreatedAt: now, Data: raw})
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, typ := range xpromo.EventTypes {
		op := doc.Webhooks[string(typ)].Post
		if op == nil {
			t.Errorf("%s: no POST", typ)
			continue
		}
		var headers []string
		for _, p := range op.Parameters {
			if p.Value.In == "header" && p.Value.Required {
				headers = append(headers, p.Value.Name)
			}
		}
		for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
			if !slices.Contains(headers, h) {
				t.Errorf("%s: header %s not documented as required", typ, h)
			}
		}
		schema := op.RequestBody.Value.Content.Get("application/json").Schema.Value
		if err := schema.VisitJSON(body(typ, data[typ]), openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s: the body refuses the event the server sends: %v", typ, err)
		}
		other := xpromo.EventPayoutSent
		if typ == other {
			other = xpromo.EventScoreUpdated
		}
		if err := schema.VisitJSON(body(typ, data[other]), openapi3.EnableJSONSchema2020()); err == nil {
			t.Errorf("%s: the body accepts %s's data", typ, other)
		}
		if err := schema.VisitJSON(body(other, data[typ]), openapi3.EnableJSONSchema2020()); err == nil {
			t.Errorf("%s: the body accepts the type %s", typ, other)
		}
	}
}
