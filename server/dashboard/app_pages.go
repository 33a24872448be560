package dashboard

import (
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/payments"
)

// appID is the signed-in app (the routes behind requireRole(RoleApp)).
func appID(r *http.Request) string {
	s, _ := sessionFrom(r)
	return s.AppID
}

// fail answers a domain error as a page: its catalogue status (a 4xx says
// what was wrong), or 503 for anything else, logged.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		status := apperr.HTTPStatus(err)
		if ae.Code == apperr.NotFound {
			d.notFound(w, r)
			return
		}
		d.renderError(w, r, status, ae.Message+" ("+ae.Code+")")
		return
	}
	d.log.ErrorContext(r.Context(), "dashboard: a page failed", "path", r.URL.Path, "err", err)
	d.renderError(w, r, http.StatusServiceUnavailable, "The server could not answer this page; try again in a moment.")
}

// newFormKey is the Idempotency-Key a form carries, drawn when the form is
// rendered: submitting it twice is one action.
func newFormKey() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "dash-" + hex.EncodeToString(b)
}

// kpi is one figure of the overview: this period's and the previous one's.
type kpi struct {
	Label         string
	Now, Previous int64
	Money         bool
}

// Change is the change against the previous period, as the overview says it.
func (k kpi) Change() string {
	switch {
	case k.Previous == 0 && k.Now == 0:
		return "no change"
	case k.Previous == 0:
		return "new"
	}
	pct := float64(k.Now-k.Previous) / float64(k.Previous) * 100
	return fmt.Sprintf("%+.0f%%", pct)
}

// Value is the figure as the page shows it.
func (k kpi) Value() string {
	if k.Money {
		return eur(k.Now)
	}
	return strconv.FormatInt(k.Now, 10)
}

// PreviousValue is the previous period's figure.
func (k kpi) PreviousValue() string {
	if k.Money {
		return eur(k.Previous)
	}
	return strconv.FormatInt(k.Previous, 10)
}

// overviewDays is the overview's period; it is compared with the same
// number of days before it.
const overviewDays = 7

type overviewData struct {
	App       appSummary
	From, To  string // this period, UTC days
	KPIs      []kpi
	Balance   payments.Balance
	Attention []string
	Installs  barChart
	Days      []xpromo.DayStats
}

type appSummary struct {
	ID, Name, Status, EarnMode string
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), appID(r)
	app, err := d.cfg.Services.Apps.App(ctx, id)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	today := d.now().UTC().Truncate(24 * time.Hour)
	q := attribution.DailyQuery{From: today.AddDate(0, 0, -2*overviewDays+1), To: today}
	page, err := d.cfg.Services.Attribution.DailyStats(ctx, id, q)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	bal, err := d.cfg.Services.Payments.Balance(ctx, id)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	prev, cur := page.Days[:overviewDays], page.Days[overviewDays:]
	sum := func(days []xpromo.DayStats, f func(xpromo.DayStats) int64) (n int64) {
		for _, d := range days {
			n += f(d)
		}
		return n
	}
	figure := func(label string, money bool, f func(xpromo.DayStats) int64) kpi {
		return kpi{Label: label, Now: sum(cur, f), Previous: sum(prev, f), Money: money}
	}
	data := overviewData{
		App:  appSummary{ID: app.ID, Name: app.Name, Status: string(app.Status), EarnMode: string(app.EarnMode)},
		From: cur[0].Day, To: cur[len(cur)-1].Day, Balance: bal, Days: cur,
		KPIs: []kpi{
			figure("Installs of your app", false, func(d xpromo.DayStats) int64 { return d.Advertiser.Installs }),
			figure("Cleared installs (paid)", false, func(d xpromo.DayStats) int64 { return d.Advertiser.Cleared }),
			figure("Spend", true, func(d xpromo.DayStats) int64 { return d.Advertiser.SpendCents }),
			figure("Impressions you showed", false, func(d xpromo.DayStats) int64 { return d.Publisher.Impressions }),
			figure("Installs you drove", false, func(d xpromo.DayStats) int64 { return d.Publisher.Installs }),
			figure("Earned", true, func(d xpromo.DayStats) int64 { return d.Publisher.EarnedCents }),
		},
	}
	data.Attention = attention(app.Status, bal)
	data.Installs = installsChart(cur)
	d.render(w, r, http.StatusOK, "overview", view{Title: "Overview", Active: "overview", Data: data})
}

// attention lists what the app team should act on.
func attention(status xpromo.AppStatus, bal payments.Balance) []string {
	var out []string
	switch status {
	case xpromo.AppStatusPending:
		out = append(out, "Your app waits for review: it shows no ads and gets no installs until an operator approves it.")
	case xpromo.AppStatusRejected:
		out = append(out, "Your app was rejected: see the reasons in the score (GET /v1/apps/{app_id}/gate).")
	case xpromo.AppStatusSuspended:
		out = append(out, "Your app is suspended: its campaigns do not run and its slots are not filled.")
	}
	if bal.WalletCents < 0 {
		out = append(out, "Your wallet is overdrawn ("+eur(bal.WalletCents)+"): top up to run campaigns again.")
	}
	if bal.PayoutPending {
		out = append(out, "A payout is in flight.")
	}
	return out
}

type chainsData struct {
	State, Role string
	States      []string
	Chains      []chainRow
	Next        string // the next page's query string, "" on the last page
}

type chainRow struct {
	ID, State, Role, CampaignID, Reason string
	PriceCents                          int64
	ClickedAt                           time.Time
}

func roleOf(appID string, c attribution.Chain) string {
	if c.PublisherAppID == appID {
		return attribution.RolePublisher
	}
	return attribution.RoleAdvertiser
}

func (d *Dashboard) installs(w http.ResponseWriter, r *http.Request) {
	id := appID(r)
	v := r.URL.Query()
	// An empty select sends state= : no filter.
	for _, k := range []string{"state", "role", "campaign_id", "cursor"} {
		if v.Has(k) && v.Get(k) == "" {
			v.Del(k)
		}
	}
	q, err := attribution.ParseChainQuery(id, v)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	page, err := d.cfg.Services.Attribution.ListChains(r.Context(), q)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := chainsData{State: string(q.State), Role: q.Role,
		States: []string{"clicked", "installed", "activated_48h", "cleared", "refunded", "rejected"}}
	for _, c := range page.Chains {
		data.Chains = append(data.Chains, chainRow{ID: c.ID, State: string(c.State), Role: roleOf(id, c), CampaignID: c.CampaignID,
			Reason: c.Reason, PriceCents: c.PriceCents, ClickedAt: c.ClickedAt})
	}
	if page.Next != "" {
		next := url.Values{"cursor": {page.Next}}
		if q.State != "" {
			next.Set("state", string(q.State))
		}
		if q.Role != "" {
			next.Set("role", q.Role)
		}
		data.Next = next.Encode()
	}
	d.render(w, r, http.StatusOK, "installs", view{Title: "Installs", Active: "installs", Data: data})
}

// signatureCheck is what the chain page says of one signature.
type signatureCheck struct {
	What   string // "click token" or "install countersignature"
	Signer string // the app whose SDK signed it
	KID    string
	Token  string
	OK     bool
	Detail string
}

type chainData struct {
	Chain      attribution.Chain
	Role       string
	Signatures []signatureCheck
}

func (d *Dashboard) chainDetail(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), appID(r)
	c, err := d.cfg.Services.Attribution.Chain(ctx, id, chi.URLParam(r, "chain_id"))
	if err != nil {
		d.fail(w, r, err) // another app's chain is not_found, as in the API
		return
	}
	data := chainData{Chain: c, Role: roleOf(id, c)}
	click, cerr := token.ParseClick(c.ClickToken)
	check := signatureCheck{What: "click token", Signer: c.PublisherAppID, KID: c.PublisherKID, Token: c.ClickToken}
	if cerr != nil {
		check.Detail = "does not parse: " + cerr.Error()
	} else {
		check.OK, check.Detail = d.verifyWith(r, c.PublisherAppID, c.PublisherKID, func(pub []byte) error { return click.Verify(pub) })
	}
	data.Signatures = append(data.Signatures, check)
	if c.Countersignature != "" {
		cs := signatureCheck{What: "install countersignature", Signer: c.AdvertiserAppID, KID: c.AdvertiserKID, Token: c.Countersignature}
		in, err := token.ParseInstall(c.Countersignature)
		switch {
		case err != nil:
			cs.Detail = "does not parse: " + err.Error()
		case cerr != nil:
			cs.Detail = "cannot be checked: the click token it countersigns does not parse"
		default:
			cs.OK, cs.Detail = d.verifyWith(r, c.AdvertiserAppID, c.AdvertiserKID, func(pub []byte) error { return in.Verify(pub, click) })
		}
		data.Signatures = append(data.Signatures, cs)
	}
	d.render(w, r, http.StatusOK, "chain", view{Title: "Chain " + c.ID, Active: "installs", Data: data})
}

// verifyWith verifies a signature with the SDK key kid of app, and says
// which key verified it.
func (d *Dashboard) verifyWith(r *http.Request, app, kid string, verify func(pub []byte) error) (bool, string) {
	keys, err := d.cfg.Services.Attribution.SDKKeys(r.Context(), app)
	if err != nil {
		return false, "the SDK keys could not be read"
	}
	for _, k := range keys {
		if k.ID != kid {
			continue
		}
		if err := verify(k.PublicKey); err != nil {
			return false, "does not verify with SDK key " + kid + " of " + app + ": " + err.Error()
		}
		return true, "verifies with SDK key " + kid + " of " + app + " (Ed25519)"
	}
	return false, "SDK key " + kid + " is not registered for " + app
}

type moneyData struct {
	Balance   payments.Balance
	Lines     []ledger.Line
	From, To  string
	Next      string
	CSV       string // the CSV download's query string
	TopUpKey  string
	MinPayout int64
	Payout    payoutData
}

func (d *Dashboard) ledgerQuery(w http.ResponseWriter, r *http.Request) (payments.LedgerQuery, url.Values, bool) {
	v := r.URL.Query()
	for _, k := range []string{"from", "to", "cursor", "limit"} {
		if v.Has(k) && v.Get(k) == "" {
			v.Del(k)
		}
	}
	q, err := payments.ParseLedgerQuery(appID(r), v)
	if err != nil {
		d.fail(w, r, err)
		return q, v, false
	}
	return q, v, true
}

func (d *Dashboard) money(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), appID(r)
	q, v, ok := d.ledgerQuery(w, r)
	if !ok {
		return
	}
	bal, err := d.cfg.Services.Payments.Balance(ctx, id)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	lines, next, err := d.cfg.Services.Payments.LedgerPage(ctx, id, q)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	pay, err := d.payoutSection(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := moneyData{Balance: bal, Lines: lines, From: v.Get("from"), To: v.Get("to"), TopUpKey: newFormKey(), MinPayout: payments.MinPayoutCents, Payout: pay}
	filter := url.Values{}
	for _, k := range []string{"from", "to"} {
		if v.Get(k) != "" {
			filter.Set(k, v.Get(k))
		}
	}
	data.CSV = filter.Encode()
	if next != "" {
		filter.Set("cursor", next)
		data.Next = filter.Encode()
	}
	d.render(w, r, http.StatusOK, "money", view{Title: "Money", Active: "money", Data: data})
}

// maxCSVLines bounds one CSV download (the ledger's largest page, ten
// times): a longer history is downloaded by date range.
const maxCSVLines = 10_000

// ledgerCSV downloads the filtered ledger lines, oldest first, as CSV.
func (d *Dashboard) ledgerCSV(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), appID(r)
	q, _, ok := d.ledgerQuery(w, r)
	if !ok {
		return
	}
	q.Limit = 1000
	var all []ledger.Line
	for len(all) < maxCSVLines {
		lines, next, err := d.cfg.Services.Payments.LedgerPage(ctx, id, q)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		all = append(all, lines...)
		if next == "" || len(lines) == 0 {
			break
		}
		q.AfterSeq = lines[len(lines)-1].Seq
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="xpromo-ledger-`+id+`.csv"`)
	cw := csv.NewWriter(w)
	cw.Write([]string{"created_at", "type", "amount_cents", "balance_after_cents", "counterparty", "chain_id", "note", "line_id", "operation_id"})
	for _, l := range all {
		cw.Write([]string{l.CreatedAt.UTC().Format(time.RFC3339Nano), string(l.Type), strconv.FormatInt(l.Amount, 10),
			strconv.FormatInt(l.BalanceAfter, 10), l.Counterparty, l.ChainID, csvSafe(l.Note), l.ID, l.OperationID})
	}
	cw.Flush()
}

// csvSafe keeps a spreadsheet from reading a note as a formula.
func csvSafe(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@') {
		return "'" + s
	}
	return s
}

// topUp opens a checkout session of the form's amount and sends the
// browser to its payment page (in test mode, the server's test checkout).
// It runs under idempotentForm: a second submit of the same form gets the
// same redirect to the same session.
func (d *Dashboard) topUp(w http.ResponseWriter, r *http.Request) {
	euros := r.PostForm.Get("amount_eur")
	amount, err := parseEuros(euros)
	if err != nil {
		d.renderError(w, r, http.StatusUnprocessableEntity, "The amount must be in euros, like 100 or 25.50.")
		return
	}
	if err := payments.ValidateTopUp(amount); err != nil {
		d.fail(w, r, err)
		return
	}
	_, checkoutURL, err := d.cfg.Services.Payments.TopUp(r.Context(), appID(r), amount)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, checkoutURL, http.StatusSeeOther)
}

// parseEuros reads "100", "25.5" or "25.50" as cents.
func parseEuros(s string) (int64, error) {
	if len(s) > 12 {
		return 0, errors.New("too long")
	}
	whole, frac, _ := cut(s, '.')
	if whole == "" || len(frac) > 2 {
		return 0, errors.New("not an amount")
	}
	w, err := strconv.ParseUint(whole, 10, 32)
	if err != nil {
		return 0, err
	}
	for len(frac) < 2 {
		frac += "0"
	}
	f, err := strconv.ParseUint(frac, 10, 8)
	if err != nil {
		return 0, err
	}
	return int64(w)*100 + int64(f), nil
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
