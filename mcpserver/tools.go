package mcpserver

import (
	"context"
	"net/http"
	"net/url"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

const codeInvalidType = "invalid_type"

// hints are the four MCP tool annotations, always all set: mcp-go would
// otherwise announce the protocol's defaults (not read-only, destructive,
// not idempotent, open world), which are wrong for most of these tools.
//
//   - readOnly: the tool changes nothing.
//   - destructive: it may change or remove something irreversibly. Only
//     request_payout is: it sends money out of the wallet. Pausing a
//     campaign is not: resume_campaign restores it and nothing is lost.
//   - idempotent: calling it again with the same arguments has no further
//     effect. The reads are; so are pause, resume and update_campaign
//     (pausing a paused campaign changes nothing; an update sets values). register_app, top_up, create_campaign and
//     request_payout act anew on each call (each of them takes an
//     idempotency_key argument for safe retries).
//   - openWorld: it reaches beyond the xpromo service. top_up (a payment
//     processor's checkout, or an x402 payment settled on chain),
//     request_payout (a transfer to the app's connected account at the
//     payment processor) and register_app (it queues the vetting gate, whose
//     checks look the domain up over RDAP, fetch the download URL and email
//     the contact), recheck_gate and resend_contact_challenge (the same
//     checks, the same email) do; the rest read or change only xpromo's own
//     records.
type hints struct {
	readOnly, destructive, idempotent, openWorld bool
}

var (
	read       = hints{readOnly: true, destructive: false, idempotent: true, openWorld: false}
	reversible = hints{readOnly: false, destructive: false, idempotent: true, openWorld: false}
)

// tool is one MCP tool: its REST operation's name, schemas and call.
type tool struct {
	name        string
	title       string
	description string
	params      []param
	output      schema
	hints       hints
	call        func(ctx context.Context, c *xpromo.Client, args arguments, opts []xpromo.CallOption) (answer, error)
}

// definition is the tool as tools/list shows it.
func (t *tool) definition() mcp.Tool {
	def := mcp.NewTool(t.name,
		mcp.WithToolTitle(t.title),
		mcp.WithDescription(t.description),
		mcp.WithRawInputSchema(inputSchema(t.params)),
		mcp.WithRawOutputSchema(mustJSON(t.output)),
		mcp.WithTitleAnnotation(t.title),
		mcp.WithReadOnlyHintAnnotation(t.hints.readOnly),
		mcp.WithDestructiveHintAnnotation(t.hints.destructive),
		mcp.WithIdempotentHintAnnotation(t.hints.idempotent),
		mcp.WithOpenWorldHintAnnotation(t.hints.openWorld),
	)
	// NewTool starts from an empty object schema; the raw one replaces it.
	def.InputSchema = mcp.ToolInputSchema{}
	return def
}

// ToolNames are the tools' names, one per operation of the API document
// an app's key calls (the webhook tools are in tools_webhooks.go).
var ToolNames = append([]string{
	"register_app", "get_score", "get_rate_card", "get_network_stats",
	"get_integration_guide", "top_up", "create_campaign", "pause_campaign",
	"resume_campaign", "list_campaigns", "get_campaign", "update_campaign",
	"get_ledger", "get_stats", "request_payout",
	"start_payout_onboarding", "get_payout_account",
}, append(append(append(append(append(append(webhookToolNames, complaintToolNames...), gateToolNames...), appToolNames...), statsToolNames...), listToolNames...), dashboardToolNames...)...)

// keyNote ends the description of every tool that needs the API key.
const keyNote = " Needs the app's API key (issued by register_app)."

func allTools() []*tool {
	return append([]*tool{
		{
			name:  "register_app",
			title: "Register an app",
			description: "Register a macOS or Windows app with the network (POST /v1/apps). Returns its app_id and its API key, " +
				"shown only once: keep it. The app starts pending and its vetting gate job is queued (domain at least six months old, download serving bundle_id, signed, " +
				"contact email answering a challenge, malware-free); the server runs the checks within seconds and the app becomes approved or rejected, with reason codes (get_score). " +
				"On a test-mode server, reserved names (example.com, *.example, *.test) are answered by built-in sandbox counterparts, so such an app is approved by itself. Needs no key.",
			params: []param{
				{name: "name", required: true, schema: nonEmpty(200, "Display name of the app.")},
				{name: "platform", required: true, schema: enum("mac (macOS) or win (Windows).", "mac", "win")},
				{name: "bundle_id", required: true, schema: nonEmpty(255, "Bundle identifier (macOS CFBundleIdentifier, Windows package identity), e.g. com.example.app.")},
				{name: "domain", required: true, schema: nonEmpty(253, "The app's web domain, e.g. example.com; the vetting gate requires it to be at least six months old.")},
				{name: "download_url", required: true, schema: strFormat("uri", maxURLLength, "Absolute https URL that serves the app's download, a zipped .app (macOS) or a signed .exe (Windows); the package must declare bundle_id.")},
				{name: "contact_email", required: true, schema: strFormat("email", 254, "Contact address; the vetting gate requires it to answer a challenge message.")},
				{name: "category", schema: withDesc(schema{"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[a-z0-9-]{1,64}$"},
					"Optional: the rate-card category key the app's own slots sell inventory in.")},
				{name: "appcast_url", schema: withDesc(schema{"type": "string", "format": "uri", "minLength": 1, "maxLength": maxURLLength, "pattern": `\S`}, "Optional: absolute https URL of the app's Sparkle-format appcast (as Sparkle, WinSparkle and NetSparkle publish), "+
					"read for the release-cadence signal. A Windows app needs it to have a cadence at all; a Mac app only when its bundle declares no SUFeedURL. update_app changes it later.")},
				idempotencyKeyParam(),
			},
			output: registerAppResponseSchema(),
			hints:  hints{readOnly: false, destructive: false, idempotent: false, openWorld: true},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.RegisterAppResponse)
				err := c.Do(ctx, http.MethodPost, "/v1/apps", a.body(), out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:        "get_score",
			title:       "Read an app's score",
			description: "Read the app's status (pending, approved, throttled, live, suspended, rejected), its vetting gate outcomes, its reputation (0-100 from four signals: AI visibility, release cadence, store reviews, coherence; scored after the gate and weekly at next_review_at, a signal that could not be read being 0 with its reason code) or, after 500 installs traded, its behaviour (retention_48h, uninstall_rate, upheld complaints, and the canary check: whether its SDK left planted test offers alone), and reason codes (GET /v1/apps/{app_id}/score)." + keyNote,
			params:      []param{appIDParam()},
			output:      scoreSchema(),
			hints:       read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.GetScore(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:        "get_rate_card",
			title:       "Read the rate card",
			description: "Read the published prices (GET /v1/rate-card): the categories with their floor prices per cleared install (in cents; floors never rise), the take rate (0.3), the credit bonus (1.2) and the pricing model (floor plus second-price auction; 30% of inventory reserved at floor). Needs no key.",
			output:      rateCardSchema(),
			hints:       read,
			call: func(ctx context.Context, c *xpromo.Client, _ arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.GetRateCard(ctx, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:        "get_network_stats",
			title:       "Read the network's figures",
			description: "Read network-wide figures (GET /v1/network-stats): the share of installs that clear (still in use after 48 hours), the share rejected as fraud, and the average cost per install by category. Needs no key.",
			output:      networkStatsSchema(),
			hints:       read,
			call: func(ctx context.Context, c *xpromo.Client, _ arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.GetNetworkStats(ctx, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:        "get_integration_guide",
			title:       "Read the SDK integration guide",
			description: "Read the SDK quickstart (GET /v1/integration-guide): how to embed the xpromo SDK in a macOS or Windows app, as markdown. Needs no key.",
			output:      integrationGuideSchema(),
			hints:       read,
			call: func(ctx context.Context, c *xpromo.Client, _ arguments, opts []xpromo.CallOption) (answer, error) {
				md, err := c.GetIntegrationGuide(ctx, opts...)
				return answer{value: map[string]string{"markdown": md}, text: md}, err
			},
		},
		{
			name:  "top_up",
			title: "Top up the app's wallet",
			description: "Buy credits for the app's wallet (POST /v1/apps/{app_id}/top-up); one credit is one euro cent, at least 5000. " +
				"The answer is a checkout_url where a person pays with the payment processor (the wallet is credited, with a topup ledger line, once paid); " +
				"or, with prefer_x402, an x402 challenge (x402Version, accepts) that a machine payer settles in USDC and answers by calling top_up again with payment set " +
				"(and the same idempotency_key), which returns the topup ledger line once the payment is settled on chain (x402_* error codes when it is refused; x402_pending: its outcome is not known yet, do not pay again)." + keyNote,
			params: []param{
				appIDParam(),
				{name: "amount_cents", required: true, schema: withDesc(
					schema{"type": "integer", "format": "int64", "minimum": xpromo.MinTopUpCents, "maximum": maxTopUpCents},
					"Credits to buy, in euro cents; at least 5000 (EUR 50).")},
				{name: "prefer_x402", in: inHeader, schema: withDesc(schema{"type": "boolean", "default": false},
					"Pay machine-to-machine over x402 (sends Prefer: payment=x402): the answer is the x402 challenge instead of a checkout URL.")},
				{name: "payment", in: inHeader, schema: str(16384, "An x402 X-PAYMENT value (base64 of a signed PaymentPayload) answering an earlier challenge.")},
				idempotencyKeyParam(),
			},
			output: topUpResultSchema(),
			hints:  hints{readOnly: false, destructive: false, idempotent: false, openWorld: true},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				amount, ok := a.topUpAmount()
				if !ok {
					// Not a body TopUp can send (a string amount, an
					// unknown field, …): the API refuses it as it is.
					return answer{}, c.Do(ctx, http.MethodPost, "/v1/apps/"+url.PathEscape(a.str("app_id"))+"/top-up", a.body(), nil, opts...)
				}
				if !a.bool("prefer_x402") {
					c = c.With(xpromo.WithX402Wallet(nil)) // a wallet pays only when asked to pay over x402
				}
				out, err := c.TopUp(ctx, a.str("app_id"), &xpromo.TopUpParams{
					AmountCents: amount, PreferX402: a.bool("prefer_x402"), Payment: a.str("payment"),
				}, opts...)
				if err != nil {
					return answer{}, err
				}
				// The REST answer's body, whichever it was.
				switch {
				case out.Challenge != nil:
					return answer{value: out.Challenge}, nil
				case out.Line != nil:
					return answer{value: out.Line}, nil
				default:
					return answer{value: &xpromo.TopUpResponse{CheckoutURL: out.CheckoutURL}}, nil
				}
			},
		},
		{
			name:  "create_campaign",
			title: "Create a campaign",
			description: "Create a campaign that buys cleared installs of the caller's own app in rate-card categories (POST /v1/campaigns). " +
				"It starts throttled; its status_reason says what will happen (app_pending: nothing until the app is approved). Without max_bid_cents it buys at the category floor; with it, it may win contested inventory, paying one cent above the next-highest bid, never more than max_bid_cents." + keyNote,
			params: []param{
				{name: "app_id", required: true, schema: nonEmpty(maxIDLength, "The caller's own app; another app's id answers not_found.")},
				{name: "categories", required: true,
					schema: withDesc(schema{"type": "array", "minItems": 1, "maxItems": 200,
						"items": schema{"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[a-z0-9-]{1,64}$"}},
						"Category keys as published by get_rate_card, each once.")},
				{name: "daily_budget_cents", required: true, schema: withDesc(
					schema{"type": "integer", "format": "int64", "minimum": xpromo.MinDailyBudgetCents, "maximum": maxCents},
					"The most the campaign spends per UTC day, in euro cents; at least 1000.")},
				{name: "max_bid_cents", schema: cents(1, maxCents, "Optional: the most paid per cleared install, in cents; at or above the category floor (else bid_below_floor). Omit to buy at the floor.")},
				idempotencyKeyParam(),
			},
			output: campaignAnswerSchema(schema{"const": "throttled"}),
			hints:  hints{readOnly: false, destructive: false, idempotent: false, openWorld: false},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.Campaign)
				err := c.Do(ctx, http.MethodPost, "/v1/campaigns", a.body(), out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:        "pause_campaign",
			title:       "Pause a campaign",
			description: "Pause a campaign of the caller's app (POST /v1/campaigns/{campaign_id}/pause): it stops buying installs until resumed. Pausing a paused campaign changes nothing." + keyNote,
			params:      []param{campaignIDParam(), idempotencyKeyParam()},
			output:      campaignAnswerSchema(schema{"const": "paused"}),
			hints:       reversible,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.PauseCampaign(ctx, a.str("campaign_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:        "resume_campaign",
			title:       "Resume a campaign",
			description: "Resume a paused campaign of the caller's app (POST /v1/campaigns/{campaign_id}/resume); it returns to throttled or active, as its app's state allows." + keyNote,
			params:      []param{campaignIDParam(), idempotencyKeyParam()},
			output:      campaignAnswerSchema(schema{"enum": []any{"throttled", "active"}}),
			hints:       reversible,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.ResumeCampaign(ctx, a.str("campaign_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "list_campaigns",
			title: "List the app's campaigns",
			description: "Read one page of the caller's app's campaigns, newest first (GET /v1/campaigns): each with its categories, daily budget, floor, maximum bid (null: buys at the floor), status and status_reason, and spent_today_cents (what it committed in the current UTC day, against its daily budget). " +
				"When older campaigns exist the page has next_cursor: call again with cursor set to it (and the same status)." + keyNote,
			params: []param{
				{name: "status", in: inQuery, schema: func() schema {
					s := enum("Optional: only the campaigns in this status.", "throttled", "active", "paused")
					s["maxLength"] = 16
					return s
				}()},
				{name: "limit", in: inQuery, schema: withDesc(
					schema{"type": "integer", "minimum": 1, "maximum": xpromo.MaxCampaignLimit, "default": xpromo.DefaultCampaignLimit},
					"Optional: campaigns per page, 1 to 1000 (100 when omitted).")},
				{name: "cursor", in: inQuery, schema: nonEmpty(256, "Optional: next_cursor of the previous page.")},
			},
			output: campaignPageSchema(),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.CampaignPage)
				err := c.Do(ctx, http.MethodGet, "/v1/campaigns?"+a.query().Encode(), nil, out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:        "get_campaign",
			title:       "Read a campaign",
			description: "Read one campaign of the caller's app (GET /v1/campaigns/{campaign_id}): its settings, status and status_reason, and spent_today_cents against its daily budget." + keyNote,
			params:      []param{campaignIDParam()},
			output:      campaignSchema(),
			hints:       read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.GetCampaign(ctx, a.str("campaign_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "update_campaign",
			title: "Change a campaign",
			description: "Change a campaign of the caller's app (PATCH /v1/campaigns/{campaign_id}): give any of daily_budget_cents (at least 1000), max_bid_cents (at or above the campaign's floor, else bid_below_floor; null to buy at the floor) and categories (replaces them; the floor follows). What is not given stays; giving nothing answers missing_field. " +
				"The next fills and install claims use the change at once; offers already made keep their price. A daily budget below spent_today_cents stops the campaign until the next UTC day (what it spent stands). A paused campaign stays paused." + keyNote,
			params: []param{
				campaignIDParam(),
				{name: "daily_budget_cents", schema: withDesc(
					schema{"type": "integer", "format": "int64", "minimum": xpromo.MinDailyBudgetCents, "maximum": maxCents},
					"Optional: the new daily budget in euro cents, at least 1000; it applies to the current UTC day.")},
				{name: "max_bid_cents", schema: withDesc(schema{"type": []any{"integer", "null"}, "format": "int64", "minimum": 1, "maximum": maxCents},
					"Optional: the new most paid per cleared install, in cents, at or above the campaign's floor; null makes it buy at the floor.")},
				{name: "categories",
					schema: withDesc(schema{"type": "array", "minItems": 1, "maxItems": 200,
						"items": schema{"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[a-z0-9-]{1,64}$"}},
						"Optional: the category keys (get_rate_card) it buys instead, each once.")},
			},
			output: campaignSchema(),
			hints:  reversible,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.Campaign)
				err := c.Do(ctx, http.MethodPatch, "/v1/campaigns/"+url.PathEscape(a.str("campaign_id")), a.body(), out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "get_ledger",
			title: "Read the app's ledger",
			description: "Read one page of the app's append-only credit ledger, oldest line first (GET /v1/apps/{app_id}/ledger): top-ups, earnings, charges, escrow, clawbacks, payouts, adjustments, each with the balance after it. " +
				"When more lines exist the page has next_cursor: call again with cursor set to it (and the same from and to) to read the next page." + keyNote,
			params: []param{
				appIDParam(),
				{name: "from", in: inQuery, schema: strFormat("date", 10, "Optional: the first UTC date included, YYYY-MM-DD.")},
				{name: "to", in: inQuery, schema: strFormat("date", 10, "Optional: the last UTC date included, YYYY-MM-DD.")},
				{name: "limit", in: inQuery, schema: withDesc(
					schema{"type": "integer", "minimum": 1, "maximum": xpromo.MaxLedgerLimit, "default": xpromo.DefaultLedgerLimit},
					"Optional: lines per page, 1 to 1000 (100 when omitted).")},
				{name: "cursor", in: inQuery, schema: nonEmpty(256, "Optional: next_cursor of the previous page.")},
			},
			output: ledgerPageSchema(),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.LedgerPage)
				err := c.Do(ctx, http.MethodGet, "/v1/apps/"+url.PathEscape(a.str("app_id"))+"/ledger?"+a.query().Encode(), nil, out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:        "get_stats",
			title:       "Read the app's stats",
			description: "Read the app's delivery and fraud figures over a period (GET /v1/apps/{app_id}/stats): impressions, clicks, installs, cleared installs, 48-hour retention, fraud rejections by reason code, floor and average clearing price." + keyNote,
			params: []param{
				appIDParam(),
				{name: "period", in: inQuery, schema: func() schema {
					s := enum("Optional: the reporting window (last_30_days when omitted).", "last_7_days", "last_30_days", "last_90_days")
					s["default"] = string(xpromo.DefaultPeriod)
					return s
				}()},
			},
			output: statsSchema(),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.Stats)
				err := c.Do(ctx, http.MethodGet, "/v1/apps/"+url.PathEscape(a.str("app_id"))+"/stats?"+a.query().Encode(), nil, out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "request_payout",
			title: "Pay out the app's earnings",
			description: "Transfer the app's withdrawable balance (cash earnings, at least EUR 50) to its connected payout account (POST /v1/apps/{app_id}/payout). " +
				"Money leaves the wallet: this cannot be undone. Refusals: below_minimum, payout_account_missing, payout_in_progress, payout_not_allowed." + keyNote,
			params: []param{appIDParam(), idempotencyKeyParam()},
			output: payoutSchema(),
			hints:  hints{readOnly: false, destructive: true, idempotent: false, openWorld: true},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.RequestPayout(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "start_payout_onboarding",
			title: "Link a payout account",
			description: "Link a connected payout account to the app and get the link where its owner completes it (POST /v1/apps/{app_id}/payout-account/onboarding). " +
				"Live mode: a Stripe Express account, created once per app; a person opens onboarding_url (valid for minutes; call again for a fresh one) to give Stripe their identity and bank account. " +
				"Test mode: the account is acct_test_<app_id>, ready at once." + keyNote,
			params: []param{appIDParam(), idempotencyKeyParam()},
			output: payoutOnboardingSchema(),
			hints:  hints{readOnly: false, destructive: false, idempotent: true, openWorld: true},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.StartPayoutOnboarding(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "get_payout_account",
			title: "Read the payout account",
			description: "Read the app's connected payout account as the payment processor reports it: payouts_enabled, and requirements_due (what its owner must still provide) (GET /v1/apps/{app_id}/payout-account). " +
				"Refusal: payout_account_missing (link one with start_payout_onboarding)." + keyNote,
			params: []param{appIDParam()},
			output: payoutAccountSchema(),
			hints:  hints{readOnly: true, destructive: false, idempotent: true, openWorld: true},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.GetPayoutAccount(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
	}, append(append(append(append(append(append(webhookTools(), complaintTools()...), gateTools()...), appTools()...), statsTools()...), listTools()...), dashboardTools()...)...)
}

// topUpWalletNote tells the agent whether top_up can pay over x402 by
// itself: only when xpromo-mcp was given a wallet key.
func topUpWalletNote(w *x402.Wallet) string {
	if w == nil {
		return " This MCP server holds no wallet: it cannot pay an x402 challenge itself (start xpromo-mcp with XPROMO_X402_WALLET_KEY_FILE to let it pay), so with prefer_x402 the challenge is returned for you to sign and send back as payment."
	}
	return " This MCP server holds a wallet (" + w.Address() + "): with prefer_x402 and no payment, top_up pays the challenge itself, signing an EIP-3009 authorization of exactly the quoted USDC to the challenge's payTo, and returns the topup ledger line; the wallet must hold that USDC on the challenge's network (base-sepolia on a test-mode server). Without prefer_x402 it returns a checkout_url and pays nothing."
}
