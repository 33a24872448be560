package mcpserver

import (
	"context"
	_ "embed"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The dashboard's reads (docs/dashboard.md "API"): the app's balance, its
// payouts, its API keys and its chains. Same rules as tools.go: each
// mirrors its REST operation.

// listToolNames are these tools' names (in ToolNames).
var listToolNames = []string{"get_balance", "list_payouts", "list_api_keys", "list_chains", "get_thresholds"}

// listSchemas are the answers' schemas, openapi.json's with every $ref
// resolved (TestMCPToolsMatchOpenAPI in server/assembly compares them keyword
// for keyword).
//
//go:embed lists_schemas.json
var listSchemasJSON []byte

func listSchema(name string) schema {
	var all map[string]schema
	if err := json.Unmarshal(listSchemasJSON, &all); err != nil {
		panic(err)
	}
	return all[name]
}

func pageParams(def, max int, what string) []param {
	return []param{
		{name: "limit", in: inQuery, schema: withDesc(schema{"type": "integer", "minimum": 1, "maximum": max, "default": def},
			"Optional: "+what+" per page.")},
		{name: "cursor", in: inQuery, schema: nonEmpty(256, "Optional: next_cursor of the previous page (with the same filters).")},
	}
}

func listTools() []*tool {
	return []*tool{
		{
			name:  "get_thresholds",
			title: "Read how close the app is to each lifecycle threshold",
			description: "Read the app's distance to each published lifecycle threshold now (GET /v1/apps/{app_id}/thresholds): the go-live bar (live_cleared: charged installs bought in the last 30 days; live_retention: their 48-hour retention; " +
				"a throttled app goes live when both are met) and the suspension bars the lifecycle review judges (fraud_rate, churn_retention, canary_clicks, upheld_complaints). " +
				"Each entry has the bar, the app's value, the sample a ratio is computed on and the smallest sample judged, the window and where counting starts, and a state: met or not_met (live bars), " +
				"within or breached (suspension bars: the next review suspends an approved, throttled or live app that breaches one), too_few (not judged yet). Use it to warn before a bar bites." + keyNote,
			params: []param{appIDParam()},
			output: listSchema("thresholdsSchema"),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.GetThresholds(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "get_balance",
			title: "Read the app's balance",
			description: "Read the app's money at one instant (GET /v1/apps/{app_id}/balance): wallet_cents (what campaigns spend from), escrow_held_cents (what its installs hold until they clear or are refunded), " +
				"withdrawable_cents (what request_payout would transfer now: cash earnings less payouts and cash clawbacks, capped by the wallet), credits_cents (spendable on campaigns only: top-ups, credits-mode earnings), " +
				"min_payout_cents and payout_pending. Every figure is a sum of get_ledger lines." + keyNote,
			params: []param{appIDParam()},
			output: listSchema("balanceSchema"),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.GetBalance(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "list_payouts",
			title: "List the app's payouts",
			description: "Read one page of the app's payouts, newest first (GET /v1/apps/{app_id}/payouts): amount, status (pending while the transfer is in flight, sent, failed with the processor's reason), destination and transfer_id. " +
				"When older payouts exist the page has next_cursor: call again with cursor set to it." + keyNote,
			params: append([]param{appIDParam()}, pageParams(100, 1000, "payouts")...),
			output: listSchema("payoutPageSchema"),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.PayoutPage)
				err := c.Do(ctx, http.MethodGet, "/v1/apps/"+url.PathEscape(a.str("app_id"))+"/payouts?"+a.query().Encode(), nil, out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:        "list_api_keys",
			title:       "List the app's API keys",
			description: "Read the app's newest 20 API keys (GET /v1/apps/{app_id}/keys): each key's 12-character prefix, when it was issued, when it expires (null for the current key; rotate_api_key gives the older ones 24 hours) and whether it works now. Never a key." + keyNote,
			params:      []param{appIDParam()},
			output:      listSchema("apiKeyListSchema"),
			hints:       read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.ListAPIKeys(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "list_chains",
			title: "List the app's event chains",
			description: "Read one page of the caller's app's event chains, newest first (GET /v1/chains): on either side, or where it is the publisher (it showed the ad and earns) or the advertiser (it was installed and pays), " +
				"optionally in one state (clicked, installed, activated_48h, cleared, refunded, rejected) or of one campaign. Each chain carries its price, its times, its reason when rejected or refunded, " +
				"and both Ed25519 signatures (the publisher SDK's click token, the advertiser SDK's countersignature). When older chains exist the page has next_cursor." + keyNote,
			params: append([]param{
				{name: "state", in: inQuery, schema: func() schema {
					s := enum("Optional: only the chains in this state.", "clicked", "installed", "activated_48h", "cleared", "refunded", "rejected")
					s["maxLength"] = 16
					return s
				}()},
				{name: "role", in: inQuery, schema: func() schema {
					s := enum("Optional: only the chains where the app is the publisher or the advertiser.", "publisher", "advertiser")
					s["maxLength"] = 16
					return s
				}()},
				{name: "campaign_id", in: inQuery, schema: nonEmpty(maxIDLength, "Optional: only the chains of this campaign of the app.")},
			}, pageParams(50, 100, "chains")...),
			output: listSchema("chainPageSchema"),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.ChainPage)
				err := c.Do(ctx, http.MethodGet, "/v1/chains?"+a.query().Encode(), nil, out, opts...)
				return answer{value: out}, err
			},
		},
	}
}
