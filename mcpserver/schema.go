package mcpserver

import (
	"encoding/json"
	"math"
	"slices"
)

// The JSON Schemas of the tools. Each mirrors the REST operation of the
// same name in openapi.json, resolved (no $ref, so that every MCP client can
// read it): input schemas are the operation's path, query and header
// parameters plus its body fields; output schemas are its answer. A test of
// the reference server (server/assembly/mcp_test.go) compares them with the
// document, keyword by keyword, so they cannot drift. Descriptions are
// written for an agent and may differ.

// schema is one JSON Schema object.
type schema = map[string]any

// param is one argument of a tool: a path, query or header parameter or a
// body field of its REST call.
type param struct {
	name     string
	schema   schema
	required bool
	in       where
}

// where says which part of the REST request carries a param. Body fields
// go to the API as the agent wrote them, so the API judges every value of a
// body with its own messages; path, query and header values are text there,
// and the tool checks only what text cannot carry (see checkArguments).
type where int

const (
	inBody   where = iota // a field of the JSON body (the zero value)
	inPath                // a path segment: a string
	inQuery               // a query parameter: a string, number or boolean, as text
	inHeader              // a header: a string (prefer_x402: a boolean)
)

// inputSchema is the tool's input schema: an object of params, nothing else.
func inputSchema(params []param) json.RawMessage {
	props := schema{}
	required := []string{}
	for _, p := range params {
		props[p.name] = p.schema
		if p.required {
			required = append(required, p.name)
		}
	}
	return mustJSON(schema{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	})
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("mcpserver: schema: " + err.Error()) // the schemas are literals
	}
	return b
}

// Codes of the argument mistakes the tools refuse themselves (the API's,
// for the same mistake in a body: see checkArguments).
const (
	codeMissingField = "missing_field"
	codeUnknownField = "unknown_field"
)

// Bounds openapi.json declares (its input policy, docs/errors.md), repeated
// here: the wire test compares the schemas keyword by keyword.
const (
	maxIDLength       = 64
	maxDateTimeLength = 35
	maxURLLength      = 2048
	maxCents          = 10_000_000_000 // budgets, bids, prices
	maxFloorCents     = 1_000_000
	maxTopUpCents     = 10_000_000
	maxInt64          = math.MaxInt64
	minInt64          = -math.MaxInt64
)

// Building blocks.

func withDesc(s schema, desc string) schema {
	if desc != "" {
		s["description"] = desc
	}
	return s
}

func str(max int, desc string) schema {
	return withDesc(schema{"type": "string", "maxLength": max}, desc)
}
func nonEmpty(max int, desc string) schema {
	return withDesc(schema{"type": "string", "minLength": 1, "maxLength": max}, desc)
}
func strFormat(f string, max int, desc string) schema {
	return withDesc(schema{"type": "string", "format": f, "maxLength": max}, desc)
}
func dateTime(desc string) schema { return strFormat("date-time", maxDateTimeLength, desc) }
func number(desc string) schema   { return withDesc(schema{"type": "number"}, desc) }
func boolean(desc string) schema  { return withDesc(schema{"type": "boolean"}, desc) }
func cents(min, max int64, desc string) schema {
	return withDesc(schema{"type": "integer", "format": "int64", "minimum": min, "maximum": max}, desc)
}
func nullableString(max int, desc string) schema {
	return withDesc(schema{"type": []any{"string", "null"}, "maxLength": max}, desc)
}

func enum(desc string, values ...string) schema {
	vs := make([]any, len(values))
	for i, v := range values {
		vs[i] = v
	}
	return withDesc(schema{"type": "string", "enum": vs}, desc)
}

func constant(typ string, v any, desc string) schema {
	return withDesc(schema{"type": typ, "const": v}, desc)
}

func array(items schema, maxItems int, desc string) schema {
	return withDesc(schema{"type": "array", "items": items, "maxItems": maxItems}, desc)
}

// object is an output object: every property listed in required must be
// there; other properties are allowed (a newer server may add fields).
func object(desc string, required []string, props schema) schema {
	if required == nil {
		required = []string{}
	}
	return withDesc(schema{"type": "object", "required": required, "properties": props}, desc)
}

// keys returns the property names of props, sorted: for objects whose every
// property is required.
func keys(props schema) []string {
	out := make([]string, 0, len(props))
	for k := range props {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// allRequired is an object whose every property is required.
func allRequired(desc string, props schema) schema { return object(desc, keys(props), props) }

// Parameters shared by several tools.

func appIDParam() param {
	return param{name: "app_id", required: true, in: inPath,
		schema: nonEmpty(maxIDLength, "The app's id (app_id of register_app). The API key acts on its own app only: another app's id answers not_found, like a missing one.")}
}

func campaignIDParam() param {
	return param{name: "campaign_id", required: true, in: inPath,
		schema: nonEmpty(maxIDLength, "The campaign's id (campaign_id of create_campaign). Another app's campaign answers not_found.")}
}

// idempotencyKeyParam is the Idempotency-Key header of every POST.
func idempotencyKeyParam() param {
	return param{name: "idempotency_key", in: inHeader,
		schema: withDesc(schema{"type": "string", "minLength": 1, "maxLength": 255},
			"Optional. Makes the call safe to repeat: the same key with the same arguments replays the first answer instead of acting again (kept 24 hours); with other arguments it answers idempotency_key_reused. Without it each call acts anew.")}
}

// Enumerations of the API.

func appStatusSchema() schema {
	return enum("Status of the app: pending until the vetting gate ran, then approved or rejected; throttled on its first trade, live once it has cleared installs with good retention; suspended after fraud, churn (installs it sent that were not kept) or upheld complaints.",
		"pending", "approved", "throttled", "live", "suspended", "rejected")
}

func campaignStatusSchema() schema {
	return enum("Status of the campaign: throttled when new, active once its app is live and funded, paused by pause_campaign.",
		"throttled", "active", "paused")
}

func lineTypeSchema() schema {
	return enum("Kind of the ledger line.",
		"topup", "earn", "charge", "escrow_hold", "escrow_release", "clawback", "payout", "adjustment")
}

// Answers of the API (components/schemas of openapi.json).

func registerAppResponseSchema() schema {
	return allRequired("The registered app: its id and its API key.", schema{
		"app_id":         str(maxIDLength, "Opaque identifier; do not parse."),
		"api_key":        str(64, "The bearer credential of this app, shown only once: store it (e.g. as XPROMO_API_KEY of the MCP server)."),
		"status":         constant("string", "pending", "Always pending: the vetting gate and a scoring job are queued."),
		"scoring_job_id": str(maxIDLength, ""),
	})
}

func scoreSchema() schema {
	score100 := func(desc string) schema {
		return withDesc(schema{"type": "integer", "minimum": 0, "maximum": 100}, desc)
	}
	share := func(desc string) schema {
		return withDesc(schema{"type": "number", "minimum": 0, "maximum": 1}, desc)
	}
	behavior := allRequired("Trading score; replaces reputation after 500 installs traded (as publisher or advertiser), from the latest scoring job.", schema{
		"retention_48h":  share("Of the installs whose 48-72 h activation window closed, the share that sent a heartbeat in it."),
		"uninstall_rate": share("Of those installs, the share that sent a heartbeat and then went silent before the window."),
		"canary":         boolean("The canary check (docs/apps.md, Canary check): true when at least the minimum of canaries (planted offers an honest SDK never shows: lapsed, or for another advertiser than the creative) were served to the app since its last reinstatement and it clicked none; false with canary_failed in reasons when it clicked any; false with canary_not_measured while fewer were served."),
		"complaints":     withDesc(schema{"type": "number", "minimum": 0}, "Upheld complaints about the app."),
	})
	return allRequired("The app's status, vetting gate outcomes and score.", schema{
		"status": appStatusSchema(),
		"gate": allRequired("Outcomes of the vetting gate.", schema{
			"signed":           boolean("macOS notarisation ticket or Windows Authenticode chain."),
			"malware_clean":    boolean(""),
			"domain_age_ok":    boolean(""),
			"contact_verified": boolean(""),
			"bundle_match":     boolean(""),
		}),
		"reputation": allRequired("Pre-trading score, each value on a 0-100 scale.", schema{
			"total":         score100("Weighted total: AI visibility and sentiment 50%, release cadence 20%, reviews 20%, coherence 10%."),
			"ai_visibility": score100("AI visibility and sentiment."),
			"cadence":       score100("Release cadence."),
			"reviews":       score100(""),
			"coherence":     score100(""),
		}),
		"behavior": schema{
			"description": "Replaces reputation after 500 installs traded; null before.",
			"oneOf":       []any{behavior, schema{"type": "null"}},
		},
		"reasons":        array(str(200, ""), 100, "Reason codes."),
		"next_review_at": dateTime(""),
		"retry_after": withDesc(schema{"type": []any{"string", "null"}, "format": "date-time", "maxLength": maxDateTimeLength},
			"With gate_domain_too_young in reasons: the date the domain becomes eligible (the gate re-checks then by itself). Null otherwise."),
	})
}

func rateCardSchema() schema {
	return allRequired("The rate card. Amounts are euro cents.", schema{
		"currency":     constant("string", "EUR", ""),
		"take_rate":    constant("number", 0.3, "Share kept by the service of each cleared install."),
		"credit_bonus": constant("number", 1.2, "Multiplier when earnings are taken as credits."),
		"categories": array(allRequired("", schema{
			"key":             str(64, "Category key, as used in create_campaign's categories."),
			"label":           str(200, ""),
			"floor_cents_min": cents(1, maxFloorCents, "Lowest floor of the category across platforms."),
			"floor_cents_max": cents(1, maxFloorCents, "Highest floor of the category across platforms."),
		}), 200, ""),
		"reserved_floor_share": constant("number", 0.3, "Share of each category's inventory sold only at floor, never auctioned."),
		"pricing_model":        constant("string", "floor_plus_second_price", ""),
	})
}

func networkStatsSchema() schema {
	return allRequired("Network-wide figures.", schema{
		"period":        str(32, "The window the figures cover."),
		"clearing_rate": number("Share of install claims that survive to activated_48h."),
		"fraud_pct":     number("Share of chains rejected by a fraud rule."),
		"avg_cpi_by_category": withDesc(schema{"type": "object", "additionalProperties": cents(0, maxCents, "")},
			"Map from category key to average cost per cleared install in cents."),
	})
}

func integrationGuideSchema() schema {
	return allRequired("The SDK quickstart.", schema{
		"markdown": str(1<<20, "The integration guide, as markdown (the text/markdown body of GET /v1/integration-guide)."),
	})
}

func ledgerLineSchema() schema {
	return allRequired("One line of the app's append-only ledger.", schema{
		"id":                  str(maxIDLength, ""),
		"ts":                  dateTime(""),
		"type":                lineTypeSchema(),
		"amount_cents":        cents(minInt64, maxInt64, "Signed: positive credits the app's wallet."),
		"counterparty_app_id": nullableString(maxIDLength, ""),
		"event_chain_id":      nullableString(maxIDLength, "The event chain (two ed25519 signatures) behind the line, if any."),
		"balance_after":       cents(minInt64, maxInt64, "Wallet balance after this line."),
		"note":                nullableString(500, ""),
	})
}

func topUpResultSchema() schema {
	checkout := allRequired("For a person: payment is completed at checkout_url; the wallet is credited (a topup ledger line) once it is paid.", schema{
		"checkout_url": strFormat("uri", maxURLLength, "Open it to pay with the payment processor."),
	})
	accept := allRequired("x402 version 1 payment requirements.", schema{
		"scheme":            enum("", "exact"),
		"network":           enum("base, or base-sepolia in test mode.", "base", "base-sepolia"),
		"maxAmountRequired": withDesc(schema{"type": "string", "pattern": "^[0-9]+$", "maxLength": 32}, "Exact amount in atomic units of the asset (USDC: 6 decimals)."),
		"resource":          strFormat("uri", maxURLLength, ""),
		"description":       str(500, ""),
		"mimeType":          str(100, ""),
		"payTo":             withDesc(schema{"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$", "maxLength": 42}, "Recipient address."),
		"maxTimeoutSeconds": schema{"type": "integer", "minimum": 1, "maximum": 300},
		"asset":             withDesc(schema{"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$", "maxLength": 42}, "Token contract address (USDC)."),
		"extra": allRequired("EIP-712 domain of the asset.", schema{
			"name":    str(64, ""),
			"version": str(16, ""),
		}),
	})
	challenge := allRequired("For a machine payer (prefer_x402): the x402 challenge (HTTP 402). Pay it and call top_up again with payment set.", schema{
		"x402Version": constant("integer", 1, ""),
		"accepts":     withDesc(schema{"type": "array", "minItems": 1, "maxItems": 10, "items": accept}, ""),
		"resource":    strFormat("uri", maxURLLength, ""),
		"error":       str(500, "Why payment is required, or why the offered payment failed."),
	})
	line := ledgerLineSchema()
	line["description"] = "After a settled x402 payment: the topup ledger line that credited the wallet."
	return schema{
		"type":        "object",
		"description": "Exactly one of: the checkout (checkout_url), the x402 challenge (x402Version, accepts…) or the topup ledger line (id, type…).",
		"oneOf":       []any{checkout, challenge, line},
	}
}

func campaignSchema() schema {
	return allRequired("The campaign.", schema{
		"campaign_id":        str(maxIDLength, "Opaque identifier; do not parse."),
		"daily_budget_cents": cents(1000, maxCents, ""),
		"status":             campaignStatusSchema(),
		"status_reason": withDesc(schema{"type": []any{"string", "null"}, "maxLength": 32, "enum": []any{"app_pending", "app_rejected", "app_suspended", "app_not_live", "wallet_below_floor", "activating", nil}},
			"Why a campaign that is not paused is not active: app_pending (nothing is delivered until the app is approved), app_rejected and app_suspended (nothing is delivered), app_not_live (delivery within the app's daily cap), wallet_below_floor (nothing until a top-up covers the floor), activating (active within seconds). Null when active or paused."),
		"floor_cents":   cents(1, maxFloorCents, "Published floor of the campaign (the highest floor among its categories for its app's platform); never rises."),
		"max_bid_cents": withDesc(schema{"type": []any{"integer", "null"}, "format": "int64", "minimum": 1, "maximum": maxCents}, "Null for a floor-price campaign."),
		"app_id":        str(maxIDLength, "The advertiser app whose installs it buys."),
		"categories": withDesc(schema{"type": "array", "minItems": 1, "maxItems": 200, "items": schema{"type": "string", "minLength": 1, "maxLength": 64}},
			"The rate-card category keys it buys."),
		"spent_today_cents": cents(0, maxCents, "What it committed in the current UTC day (installs claimed today and not refunded), against daily_budget_cents."),
		"created_at":        dateTime(""),
		"updated_at":        dateTime("The last change of its settings or status."),
	})
}

func campaignPageSchema() schema {
	s := object("One page of the app's campaigns, newest first.", []string{"campaigns"}, schema{
		"campaigns":   array(campaignSchema(), 1000, "Newest first."),
		"next_cursor": str(256, "Present when older campaigns exist: call list_campaigns again with cursor set to it. Absent on the last page."),
	})
	s["additionalProperties"] = false
	return s
}

// campaignAnswerSchema is a Campaign whose status is narrowed by status
// (the answer of create, pause or resume).
func campaignAnswerSchema(status schema) schema {
	return schema{
		"type":  "object",
		"allOf": []any{campaignSchema(), schema{"properties": schema{"status": status}}},
	}
}

func ledgerPageSchema() schema {
	return object("One page of the ledger.", []string{"lines"}, schema{
		"lines":       array(ledgerLineSchema(), 1000, "Ordered by sequence, oldest first."),
		"next_cursor": str(256, "Present when more lines exist: call get_ledger again with cursor set to it (and the same from and to). Absent on the last page."),
	})
}

func statsSchema() schema {
	count := func() schema { return schema{"type": "integer", "format": "int64", "minimum": 0, "maximum": maxInt64} }
	return allRequired("The app's delivery and fraud figures over the period.", schema{
		"impressions":   count(),
		"clicks":        count(),
		"installs":      count(),
		"cleared":       count(),
		"retention_48h": number(""),
		"fraud_rejected": withDesc(schema{"type": "object", "additionalProperties": count()},
			"Map from stable fraud reason code to count."),
		"floor_cents":              cents(0, maxFloorCents, ""),
		"avg_clearing_price_cents": cents(0, maxCents, "What contention cost; equals floor_cents when nothing was contested."),
	})
}

func acctSchema() schema {
	return withDesc(schema{"type": "string", "pattern": "^acct_[A-Za-z0-9_]{1,250}$", "maxLength": 255},
		"The connected account (Stripe: acct_…; test mode: acct_test_<app_id>).")
}

func payoutOnboardingSchema() schema {
	return allRequired("The app's connected payout account and the link where its owner completes it.", schema{
		"account_id":     acctSchema(),
		"onboarding_url": strFormat("uri", 2048, "Where the app's owner completes the account (Stripe: an Account Link, valid for minutes)."),
	})
}

func payoutAccountSchema() schema {
	return allRequired("The app's connected payout account as the payment processor reports it.", schema{
		"account_id":        acctSchema(),
		"charges_enabled":   boolean(""),
		"payouts_enabled":   boolean("Whether transfers to it can be paid out to its bank; payouts need it."),
		"details_submitted": boolean(""),
		"requirements_due":  array(str(255, ""), 500, "What the holder must still provide."),
		"disabled_reason":   nullableString(255, "Why the account cannot receive payouts yet."),
	})
}

func payoutSchema() schema {
	return allRequired("The transfer to the app's connected account.", schema{
		"transfer_id":  str(255, ""),
		"amount_cents": withDesc(schema{"type": "integer", "format": "int64", "minimum": 5000, "maximum": maxInt64}, ""),
		"payout_id":    str(maxIDLength, "The payout's id; the wallet's payout line says \"payout <payout_id>\"."),
	})
}
