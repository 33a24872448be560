package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

func (r *runner) topUpCommand() *cobra.Command {
	var p xpromo.TopUpParams
	var open, complete bool
	var idemKey, walletFile string
	cmd := &cobra.Command{
		Use:   "topup --amount-cents N [--open | --complete | --x402 [--wallet-key-file F]]",
		Short: "buy credits (POST /v1/apps/{app_id}/top-up): prints or opens the checkout URL",
		Long: `Opens a checkout for amount_cents credits (at least 5000, EUR 50) and prints its
checkout_url; a person pays there and the wallet is credited then. --open opens
it in the browser.

Test mode: --complete pays the server's test checkout at once (POST to the
checkout URL), so scripts can fund a wallet; a live server refuses it (403
test_mode_only). With --json, each answer is printed as it came, one JSON
document per line (the top-up's, then the checkout's).

--x402 asks to pay machine to machine (Prefer: payment=x402): the answer is the
402 x402 challenge, printed with exit status 0 (it is an answer, not an error).
With --wallet-key-file F (a file holding a secp256k1 private key as 64 hex
digits), the CLI pays that challenge itself: it signs an EIP-3009 USDC
authorization of exactly the quoted amount to the challenge's payTo, valid for
its maxTimeoutSeconds, sends it, and prints the wallet's topup line and the
settlement's transaction. The wallet needs the USDC on the challenge's network
(base-sepolia in test mode). A refused payment exits with its x402_* code;
x402_pending means the outcome is not known yet: do not pay again, the server
credits the wallet once if the transfer landed.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "amount-cents"); err != nil {
				return err
			}
			if p.PreferX402 && (open || complete) {
				return usageErr("--x402 answers with a challenge, not a checkout: it cannot be combined with --open or --complete")
			}
			if walletFile != "" && !p.PreferX402 {
				return usageErr("--wallet-key-file pays an x402 challenge: it needs --x402")
			}
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			if walletFile != "" {
				w, err := x402.ReadWalletFile(walletFile)
				if err != nil {
					return usageErr("%v", err)
				}
				c = c.With(xpromo.WithX402Wallet(w))
			}
			ctx := cmd.Context()
			res, err := c.TopUp(ctx, appID, &p, idempotency(idemKey)...)
			if err != nil {
				return err
			}
			if res.Line != nil {
				if r.g.json {
					return r.writeRaw()
				}
				rows := [][2]string{{"line_id", res.Line.ID}, {"type", string(res.Line.Type)}, {"credited", eur(res.Line.AmountCents)}, {"balance_after", eur(res.Line.BalanceAfter)}}
				if settle, err := x402.DecodeResponse(res.PaymentResponse); err == nil {
					rows = append(rows, [2]string{"network", settle.Network}, [2]string{"payer", settle.Payer}, [2]string{"transaction", settle.Transaction})
				}
				return kv(r.env.Stdout, rows...)
			}
			if res.Challenge != nil {
				if r.g.json {
					return r.writeRaw()
				}
				return printChallenge(r.env.Stdout, res.Challenge)
			}
			if res.CheckoutURL == "" {
				return fmt.Errorf("the server answered neither a checkout_url nor a challenge")
			}
			rows := [][2]string{{"checkout_url", res.CheckoutURL}, {"amount", eur(p.AmountCents)}}
			if complete {
				if r.g.json {
					if err := r.writeRaw(); err != nil {
						return err
					}
				}
				sess, err := c.CompleteTestCheckout(ctx, res.CheckoutURL)
				if err != nil {
					if !r.g.json { // the checkout is still there to pay by hand
						_ = kv(r.env.Stdout, rows...)
					}
					return err
				}
				if r.g.json {
					return r.writeRaw()
				}
				return kv(r.env.Stdout, append(rows,
					[2]string{"session_id", sess.SessionID},
					[2]string{"status", sess.Status},
					[2]string{"credited", eur(sess.AmountCents) + " to " + sess.AppID},
				)...)
			}
			if r.g.json {
				err = r.writeRaw()
			} else {
				err = kv(r.env.Stdout, rows...)
			}
			if err != nil {
				return err
			}
			if open {
				if err := r.env.OpenURL(res.CheckoutURL); err != nil {
					fmt.Fprintf(r.env.Stderr, "warning: could not open a browser (%v); open the checkout_url yourself\n", err)
				}
			} else if !r.g.json {
				fmt.Fprintln(r.env.Stderr, "Pay at the checkout_url (--open opens it); the wallet is credited when the payment completes.")
			}
			return nil
		},
	}
	r.addAppIDFlag(cmd)
	f := cmd.Flags()
	f.Int64Var(&p.AmountCents, "amount-cents", 0, "credits to buy, in cents (at least 5000)")
	f.BoolVar(&open, "open", false, "open the checkout URL in the browser")
	f.BoolVar(&complete, "complete", false, "test mode: pay the test checkout now")
	f.BoolVar(&p.PreferX402, "x402", false, "pay over x402: print the 402 challenge (or pay it with --wallet-key-file)")
	f.StringVar(&walletFile, "wallet-key-file", "", "with --x402: pay the challenge with the secp256k1 key in this file (64 hex digits)")
	addIdempotencyFlag(cmd, &idemKey)
	return cmd
}

func printChallenge(w io.Writer, ch *xpromo.X402Challenge) error {
	if err := kv(w,
		[2]string{"payment", "402 payment required (x402)"},
		[2]string{"x402Version", strconv.Itoa(ch.X402Version)},
		[2]string{"resource", ch.Resource},
		[2]string{"error", ch.Error},
	); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t := newTable(w)
	t.row("SCHEME", "NETWORK", "MAX_AMOUNT_REQUIRED", "ASSET", "PAY_TO")
	for _, a := range ch.Accepts {
		t.row(a.Scheme, a.Network, a.MaxAmountRequired, a.Asset, a.PayTo)
	}
	return t.flush()
}

// Ledger export formats.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatCSV   = "csv"
)

func (r *runner) ledgerCommand() *cobra.Command {
	var p xpromo.LedgerParams
	var format string
	cmd := &cobra.Command{
		Use:   "ledger [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--format table|json|csv]",
		Short: "the app's ledger, every page (GET /v1/apps/{app_id}/ledger)",
		Long: `Streams every line of the app's ledger, oldest first, following the API's
pages. --from and --to are UTC dates, both included.

Formats: table (amounts in EUR), csv (the API's field names and integer cents),
json (one {"lines": [...]} document, the lines as the API sends them; --json
means --format json). On a large ledger a progress counter is drawn on stderr
when stderr is a terminal.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if r.g.json {
				if cmd.Flags().Changed("format") && format != formatJSON {
					return usageErr("--json and --format %s disagree", format)
				}
				format = formatJSON
			}
			switch format {
			case formatTable, formatJSON, formatCSV:
			default:
				return usageErr("--format must be table, json or csv, not %q", format)
			}
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			return r.exportLedger(cmd.Context(), c, appID, p, format)
		},
	}
	r.addAppIDFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&p.From, "from", "", "first UTC date included, YYYY-MM-DD")
	f.StringVar(&p.To, "to", "", "last UTC date included, YYYY-MM-DD")
	f.StringVar(&format, "format", formatTable, "table, json or csv")
	f.IntVar(&p.Limit, "limit", xpromo.MaxLedgerLimit, "lines per page requested (the API's limit, 1-1000); every page is read")
	return cmd
}

// ledgerWriter writes ledger lines in one format as they stream in.
type ledgerWriter interface {
	line(l xpromo.LedgerLine) error
	close() error
}

func (r *runner) exportLedger(ctx context.Context, c *xpromo.Client, appID string, p xpromo.LedgerParams, format string) error {
	var w ledgerWriter
	switch format {
	case formatCSV:
		w = newCSVLedger(r.env.Stdout)
	case formatJSON:
		w = &jsonLedger{w: r.env.Stdout}
	default:
		w = &tableLedger{t: newTable(r.env.Stdout)}
	}
	// Progress only where a person sees it, and not over the data: stdout
	// streams csv/json lines, so draw only when stdout is elsewhere (a
	// table is printed at the end, after the counter is cleared).
	showProgress := r.env.IsTerminal(r.env.Stderr) && (format == formatTable || !r.env.IsTerminal(r.env.Stdout))
	progress := newLineProgress(r.env.Stderr, showProgress, p.Limit)
	defer progress.done()
	for l, err := range c.LedgerLines(ctx, appID, &p) {
		if err != nil {
			return err
		}
		if err := w.line(l); err != nil {
			return err
		}
		progress.add()
	}
	progress.done()
	return w.close()
}

// lineProgress counts lines on stderr once a ledger spans more than one
// page ("large").
type lineProgress struct {
	w       io.Writer
	enabled bool
	page    int
	n       int
	bar     *progressbar.ProgressBar
}

func newLineProgress(w io.Writer, enabled bool, page int) *lineProgress {
	if page <= 0 {
		page = xpromo.DefaultLedgerLimit
	}
	return &lineProgress{w: w, enabled: enabled, page: page}
}

func (p *lineProgress) add() {
	p.n++
	if !p.enabled {
		return
	}
	if p.bar == nil {
		if p.n <= p.page {
			return
		}
		p.bar = progressbar.NewOptions(-1,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription("ledger lines"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetSpinnerChangeInterval(0), // no drawing goroutine
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetElapsedTime(false),
		)
		_ = p.bar.Set(p.n - 1)
	}
	_ = p.bar.Add(1)
}

func (p *lineProgress) done() {
	if p.bar != nil {
		_ = p.bar.Clear()
		_ = p.bar.Exit()
		p.bar = nil
	}
}

// csvHeader is the API's LedgerLine field names, in the API's order.
var csvHeader = []string{"id", "ts", "type", "amount_cents", "counterparty_app_id", "event_chain_id", "balance_after", "note"}

type csvLedger struct {
	w      *csv.Writer
	header bool
}

func newCSVLedger(w io.Writer) *csvLedger { return &csvLedger{w: csv.NewWriter(w)} }

func (c *csvLedger) line(l xpromo.LedgerLine) error {
	if !c.header {
		c.header = true
		if err := c.w.Write(csvHeader); err != nil {
			return err
		}
	}
	return c.w.Write([]string{
		l.ID, ts(l.Ts), string(l.Type), strconv.FormatInt(l.AmountCents, 10),
		deref(l.CounterpartyAppID), deref(l.EventChainID),
		strconv.FormatInt(l.BalanceAfter, 10), deref(l.Note),
	})
}

func (c *csvLedger) close() error {
	if !c.header { // an empty ledger still has its header
		c.header = true
		if err := c.w.Write(csvHeader); err != nil {
			return err
		}
	}
	c.w.Flush()
	return c.w.Error()
}

// jsonLedger writes {"lines":[...]}, one line per row, as it streams.
type jsonLedger struct {
	w io.Writer
	n int
}

func (j *jsonLedger) line(l xpromo.LedgerLine) error {
	raw, err := json.Marshal(l) // the wire type the server encodes
	if err != nil {
		return err
	}
	sep := ",\n"
	if j.n == 0 {
		sep = "{\"lines\":[\n"
	}
	j.n++
	_, err = fmt.Fprintf(j.w, "%s%s", sep, raw)
	return err
}

func (j *jsonLedger) close() error {
	var err error
	if j.n == 0 {
		_, err = io.WriteString(j.w, "{\"lines\":[]}\n")
	} else {
		_, err = io.WriteString(j.w, "\n]}\n")
	}
	return err
}

type tableLedger struct {
	t *table
	n int
}

func (t *tableLedger) line(l xpromo.LedgerLine) error {
	if t.n == 0 {
		t.t.row("ID", "TS", "TYPE", "AMOUNT", "BALANCE_AFTER", "COUNTERPARTY", "NOTE")
	}
	t.n++
	t.t.row(l.ID, ts(l.Ts), string(l.Type), eur(l.AmountCents), eur(l.BalanceAfter), orDash(l.CounterpartyAppID), orDash(l.Note))
	return nil
}

func (t *tableLedger) close() error {
	if t.n == 0 {
		t.t.row("no ledger lines")
	}
	return t.t.flush()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (r *runner) payoutCommand() *cobra.Command {
	var idemKey string
	cmd := &cobra.Command{
		Use:   "payout",
		Short: "pay the withdrawable balance out to the payout account (POST /v1/apps/{app_id}/payout)",
		Long: `Transfers the app's whole withdrawable balance (cash earnings of cleared
installs, less payouts and clawbacks; at least EUR 50) to its payout account.
Top-ups, adjustments and credits-mode earnings are not withdrawable. Refusals
exit 6: below_minimum, payout_in_progress, payout_account_missing.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			po, err := c.RequestPayout(cmd.Context(), appID, idempotency(idemKey)...)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout,
				[2]string{"transfer_id", po.TransferID},
				[2]string{"payout_id", po.PayoutID},
				[2]string{"amount", eur(po.AmountCents)},
			)
		},
	}
	r.addAppIDFlag(cmd)
	addIdempotencyFlag(cmd, &idemKey)
	return cmd
}

func (r *runner) payoutAccountCommand() *cobra.Command {
	return group("payout-account", "the app's connected payout account (Stripe Connect in live mode)",
		r.payoutAccountOnboardCommand(), r.payoutAccountStatusCommand())
}

func (r *runner) payoutAccountOnboardCommand() *cobra.Command {
	var open bool
	var idemKey string
	cmd := &cobra.Command{
		Use:   "onboard [--open]",
		Short: "link a payout account and print its onboarding link (POST /v1/apps/{app_id}/payout-account/onboarding)",
		Long: `Links a connected payout account to the app (live mode: a Stripe Express
account, created once per app) and prints the short-lived link where its owner
gives Stripe what it needs (identity, bank account). Run it again for a fresh
link when one expired. --open opens the link in the browser. Test mode: the
account is acct_test_<app_id>, ready at once; the link is the server's URL.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			o, err := c.StartPayoutOnboarding(cmd.Context(), appID, idempotency(idemKey)...)
			if err != nil {
				return err
			}
			if open {
				if err := r.env.OpenURL(o.OnboardingURL); err != nil {
					return err
				}
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout,
				[2]string{"account_id", o.AccountID},
				[2]string{"onboarding_url", o.OnboardingURL},
			)
		},
	}
	cmd.Flags().BoolVar(&open, "open", false, "open the onboarding link in the browser")
	r.addAppIDFlag(cmd)
	addIdempotencyFlag(cmd, &idemKey)
	return cmd
}

func (r *runner) payoutAccountStatusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "whether the payout account can receive payouts (GET /v1/apps/{app_id}/payout-account)",
		Long: `Prints the app's connected account as the payment processor reports it:
whether payouts are enabled, and what its holder must still provide. Exits 6
with payout_account_missing when the app has none ("xpromo payout-account
onboard" links one).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			st, err := c.GetPayoutAccount(cmd.Context(), appID)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			due := "none"
			if len(st.RequirementsDue) > 0 {
				due = strings.Join(st.RequirementsDue, ", ")
			}
			return kv(r.env.Stdout,
				[2]string{"account_id", st.AccountID},
				[2]string{"payouts_enabled", strconv.FormatBool(st.PayoutsEnabled)},
				[2]string{"charges_enabled", strconv.FormatBool(st.ChargesEnabled)},
				[2]string{"details_submitted", strconv.FormatBool(st.DetailsSubmitted)},
				[2]string{"requirements_due", due},
				[2]string{"disabled_reason", deref(st.DisabledReason)},
			)
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}
