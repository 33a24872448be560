package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Prompts walk an agent through the jobs people ask of it, with the tools
// and the server's behaviour as they are today.

type prompt struct {
	name, title, description string
	args                     []promptArg
	text                     func(args map[string]string, now time.Time) string
}

type promptArg struct {
	name, description string
	required          bool
}

func prompts() []prompt {
	appID := promptArg{"app_id", "The app's id (app_id of register_app).", true}
	return []prompt{
		{
			name:        "register_and_pass_gate",
			title:       "Register an app and pass the vetting gate",
			description: "Register a macOS or Windows app, keep its API key, and follow it through the vetting gate to approved.",
			args: []promptArg{
				{"platform", "mac or win.", false},
				{"category", "The rate-card category key of the app's own slots (optional).", false},
			},
			text: func(a map[string]string, _ time.Time) string {
				var b strings.Builder
				b.WriteString("Register my app with the xpromo network and get it approved.\n\n")
				if a["platform"] != "" {
					fmt.Fprintf(&b, "Platform: %s.\n", a["platform"])
				}
				if a["category"] != "" {
					fmt.Fprintf(&b, "Category of its own slots: %s.\n", a["category"])
				}
				b.WriteString(`
1. Ask me for what you do not know: the app's name, bundle identifier, web domain, an https download URL that serves the app, and a contact email. If a category is wanted, read get_rate_card (or the xpromo://rate-card resource) for the keys.
2. Call register_app with an idempotency_key of your choosing, so that a retry cannot register the app twice. The answer has app_id and api_key: the key is shown only once. Tell me to store it (over stdio, as XPROMO_API_KEY of xpromo-mcp; over HTTP, as the Authorization: Bearer header of the MCP client). Over stdio this session already uses it.
3. The app starts pending. The vetting gate checks that the domain is at least six months old, that the download serves the bundle id, signed, and that the contact address answers a challenge. The gate runs within seconds and mails the contact address a link and a 6-digit code; call get_score (or read xpromo://apps/{app_id}/score): status, the five gate booleans and reasons. While gate_contact_unverified is in reasons, ask the user for the code from that email and send it with verify_contact_code (resend_contact_challenge mails a new one); the gate then runs again at once. On a test-mode server, reserved names (example.com, *.example, *.test) are answered by built-in sandbox counterparts and the app is approved by itself.
4. Report the status when it changes: approved (campaigns may start), rejected (the reason code says why, e.g. gate_unsigned_binary, or gate_domain_too_young with retry_after, when the gate re-checks by itself): once the user has fixed it, call recheck_gate.
On a tool error, act on error.code, never on the message; retry_after says when a retry may succeed.`)
				return b.String()
			},
		},
		{
			name:        "fund_and_launch_campaign",
			title:       "Fund and launch a campaign",
			description: "Top up the app's wallet, then create a campaign that buys installs in rate-card categories.",
			args: []promptArg{appID,
				{"category", "The category key to buy installs in (see the rate card).", false},
				{"daily_budget_cents", "The most to spend per UTC day, in euro cents (at least 1000).", false},
			},
			text: func(a map[string]string, _ time.Time) string {
				var b strings.Builder
				fmt.Fprintf(&b, "Fund and launch a campaign for my app %s.\n", a["app_id"])
				if a["category"] != "" {
					fmt.Fprintf(&b, "Category: %s.\n", a["category"])
				}
				if a["daily_budget_cents"] != "" {
					fmt.Fprintf(&b, "Daily budget: %s cents.\n", a["daily_budget_cents"])
				}
				b.WriteString(`
1. Read get_rate_card: the categories, their floor prices per cleared install (cents), the take rate and the credit bonus. Pick the category with me if I did not.
2. Read get_score: campaigns of a pending app are accepted but deliver nothing until the app is approved (status_reason app_pending).
3. Read get_ledger for the balance (balance_after of the last line; follow next_cursor to the last page). If it is short, call top_up with amount_cents (at least 5000, euro cents) and an idempotency_key. Give me the checkout_url to pay; the wallet is credited with a topup line once paid (read get_ledger again). A machine payer can set prefer_x402 and answer the x402 challenge with payment instead.
4. Call create_campaign with app_id, categories, daily_budget_cents (at least 1000) and an idempotency_key; max_bid_cents only if I want to bid above the floor (below it is bid_below_floor). It starts throttled: status_reason says why.
5. pause_campaign and resume_campaign stop and restart it; update_campaign changes its daily budget, bid or categories, and list_campaigns shows every campaign with spent_today_cents. Report campaign_id, status and status_reason.`)
				return b.String()
			},
		},
		{
			name:        "read_monthly_results",
			title:       "Read this month's results",
			description: "Summarise the app's delivery, fraud and money movements of the current calendar month (UTC).",
			args:        []promptArg{appID},
			text: func(a map[string]string, now time.Time) string {
				now = now.UTC()
				first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
				return fmt.Sprintf(`Summarise this month's results of my app %s (%s, UTC).

1. Call get_ledger with app_id %s, from %s and to %s; follow next_cursor (same from and to) until the last page. Sum the lines by type: topup, earn, charge, escrow, clawback, payout, adjustment; the balance is balance_after of the last line.
2. Call get_stats with period last_30_days (the windows are rolling: last_7_days, last_30_days, last_90_days; say that it is not exactly the month): impressions, clicks, installs, cleared installs, 48-hour retention, fraud rejections by reason and prices.
3. Report spend, earnings, the balance, cleared installs and the fraud reasons, in euros (amounts are cents).`,
					a["app_id"], first.Format("January 2006"), a["app_id"], first.Format(time.DateOnly), now.Format(time.DateOnly))
			},
		},
		{
			name:        "pay_out_earnings",
			title:       "Request a payout",
			description: "Check the app's withdrawable earnings and pay them out to its payout account.",
			args:        []promptArg{appID},
			text: func(a map[string]string, _ time.Time) string {
				return fmt.Sprintf(`Pay out the earnings of my app %s.

1. Call get_ledger (all pages) and work out the withdrawable amount: cash earnings (earn lines) minus payouts and cash clawbacks, capped by the balance. Top-ups, refunds and adjustments are never withdrawable. At least 5000 cents (EUR 50) is needed.
2. Tell me the amount and ask me to confirm: a payout cannot be undone.
3. Call request_payout with app_id %s and an idempotency_key. The answer has transfer_id, amount_cents and payout_id.
4. A refusal is a tool error with a code: below_minimum (under EUR 50 withdrawable), payout_account_missing (no payout account connected: the operator connects it), payout_in_progress (wait for the previous one), payout_not_allowed (the app is suspended or rejected). Explain it to me; do not retry a refusal unchanged.`, a["app_id"], a["app_id"])
			},
		},
	}
}

// PromptNames are the prompts' names.
var PromptNames = []string{"register_and_pass_gate", "fund_and_launch_campaign", "read_monthly_results", "pay_out_earnings"}

func (s *Server) addPrompts() {
	for _, p := range prompts() {
		opts := []mcp.PromptOption{mcp.WithPromptTitle(p.title), mcp.WithPromptDescription(p.description)}
		for _, a := range p.args {
			aopts := []mcp.ArgumentOption{mcp.ArgumentDescription(a.description)}
			if a.required {
				aopts = append(aopts, mcp.RequiredArgument())
			}
			opts = append(opts, mcp.WithArgument(a.name, aopts...))
		}
		s.mcp.AddPrompt(mcp.NewPrompt(p.name, opts...), func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			for _, a := range p.args {
				if a.required && req.Params.Arguments[a.name] == "" {
					return nil, fmt.Errorf("%s is required", a.name)
				}
			}
			return mcp.NewGetPromptResult(p.description, []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(p.text(req.Params.Arguments, s.now()))),
			}), nil
		})
	}
}
