package xpromo_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

func TestChainsWalksPagesWithFilters(t *testing.T) {
	const pages = 2
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		page := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			page, _ = strconv.Atoi(strings.TrimPrefix(c, "c"))
		}
		next := ""
		if page+1 < pages {
			next = fmt.Sprintf(`,"next_cursor":"c%d"`, page+1)
		}
		writeJSON(w, 200, fmt.Sprintf(`{"chains":[{"chain_id":"ch_%d","state":"cleared","reason":null,"campaign_id":"cmp_1","publisher_app_id":"app_p",`+
			`"advertiser_app_id":"app_1","price_cents":400,"clicked_at":"2026-11-21T09:00:00Z","installed_at":null,"activated_at":null,"settled_at":null,`+
			`"click_token":"a.b.c","countersignature":"d.e.f"}]%s}`, page, next))
	})
	var ids []string
	for ch, err := range f.client().Chains(context.Background(), &xpromo.ChainListParams{State: xpromo.ChainCleared, Role: xpromo.RoleAdvertiser,
		CampaignID: "cmp_1", PageParams: xpromo.PageParams{Limit: 1}}) {
		if err != nil {
			t.Fatal(err)
		}
		if ch.PriceCents != 400 || ch.Countersignature == nil || *ch.Countersignature != "d.e.f" {
			t.Errorf("chain %+v", ch)
		}
		ids = append(ids, ch.ChainID)
	}
	if got := strings.Join(ids, ","); got != "ch_0,ch_1" {
		t.Errorf("chains %s", got)
	}
	want := []string{"campaign_id=cmp_1&limit=1&role=advertiser&state=cleared", "campaign_id=cmp_1&cursor=c1&limit=1&role=advertiser&state=cleared"}
	for i, r := range f.requests() {
		if r.Method != "GET" || r.Path != "/v1/chains" || r.RawQuery != want[i] {
			t.Errorf("request %d: %s %s?%s", i, r.Method, r.Path, r.RawQuery)
		}
	}
}

func TestBalanceAndKeys(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Path {
		case "/v1/apps/app_1/balance":
			writeJSON(w, 200, `{"app_id":"app_1","currency":"EUR","wallet_cents":9000,"escrow_held_cents":400,"withdrawable_cents":6000,`+
				`"credits_cents":3000,"min_payout_cents":5000,"payout_pending":false,"as_of":"2026-11-21T09:00:00Z"}`)
		case "/v1/apps/app_1/keys":
			writeJSON(w, 200, `{"keys":[{"prefix":"xp_test_abcd","created_at":"2026-11-21T09:00:00Z","expires_at":null,"active":true}]}`)
		default:
			writeJSON(w, 404, `{"error":{"code":"not_found","message":"no"}}`)
		}
	})
	b, err := f.client().GetBalance(context.Background(), "app_1")
	if err != nil || b.WithdrawableCents != 6000 || b.CreditsCents != 3000 || b.EscrowHeldCents != 400 {
		t.Fatalf("balance %+v, %v", b, err)
	}
	k, err := f.client().ListAPIKeys(context.Background(), "app_1")
	if err != nil || len(k.Keys) != 1 || k.Keys[0].Prefix != "xp_test_abcd" || k.Keys[0].ExpiresAt != nil {
		t.Fatalf("keys %+v, %v", k, err)
	}
}

func TestAdminAppsSendsTheAdminToken(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Header.Get("Authorization") != "Bearer admin-secret" {
			writeJSON(w, 401, `{"error":{"code":"unauthorized","message":"no"}}`)
			return
		}
		writeJSON(w, 200, `{"apps":[]}`)
	})
	c := f.client(xpromo.WithAdminToken("admin-secret"))
	for _, err := range c.AdminApps(context.Background(), &xpromo.AdminAppListParams{Status: xpromo.AppStatusPending}) {
		t.Fatalf("an empty queue yields nothing: %v", err)
	}
	if r := f.requests(); len(r) != 1 || r[0].RawQuery != "status=pending" || r[0].Path != "/v1/admin/apps" {
		t.Errorf("requests %+v", r)
	}
}
