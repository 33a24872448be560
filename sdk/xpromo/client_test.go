package xpromo_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// seen is one request as the test server received it.
type seen struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   string
}

// fakeAPI is an httptest server answering from a handler, recording every
// request.
type fakeAPI struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newFakeAPI(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int)) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), string(body)})
		n := len(f.reqs)
		f.mu.Unlock()
		h(w, r, n)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

// client builds a client of f with fast retries.
func (f *fakeAPI) client(opts ...xpromo.Option) *xpromo.Client {
	return xpromo.NewClient(f.URL, append([]xpromo.Option{
		xpromo.WithAPIKey("xp_test_key"),
		xpromo.WithRetryWait(time.Millisecond, 5*time.Millisecond),
	}, opts...)...)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_test")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func errBody(code, msg string, retryAfter *time.Time) string {
	ra := "null"
	if retryAfter != nil {
		ra = `"` + retryAfter.UTC().Format(time.RFC3339) + `"`
	}
	return fmt.Sprintf(`{"error":{"code":%q,"message":%q,"retry_after":%s}}`, code, msg, ra)
}

var idemKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)

func TestRequestShape(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Path {
		case "/v1/apps":
			writeJSON(w, 201, `{"app_id":"app_1","api_key":"xp_test_new","status":"pending","scoring_job_id":"job_1"}`)
		case "/v1/apps/app 1/score":
			writeJSON(w, 200, `{"status":"pending","gate":{},"reputation":{},"behavior":null,"reasons":[],"next_review_at":"2026-11-22T09:00:00Z"}`)
		case "/v1/admin/apps/app_1/approve":
			writeJSON(w, 200, `{"app_id":"app_1","status":"approved","status_history":[]}`)
		case "/v1/apps/app_1/stats":
			writeJSON(w, 200, `{"fraud_rejected":{"fraud_token_reused":2}}`)
		case "/v1/integration-guide":
			w.Header().Set("Content-Type", "text/markdown")
			io.WriteString(w, "# Quickstart\n")
		default:
			writeJSON(w, 404, errBody("not_found", "no route", nil))
		}
	})
	c := f.client(xpromo.WithUserAgent("xpromo-cli/9"), xpromo.WithAdminToken("admintok"))
	ctx := context.Background()

	reg, err := c.RegisterApp(ctx, &xpromo.RegisterAppRequest{Name: "A", Platform: xpromo.PlatformMac, BundleID: "com.a", Domain: "a.com", DownloadURL: "https://a.com/a.dmg", ContactEmail: "a@a.com"})
	if err != nil {
		t.Fatal(err)
	}
	if reg.AppID != "app_1" || reg.APIKey != "xp_test_new" || reg.Status != xpromo.AppStatusPending {
		t.Errorf("RegisterApp = %+v", reg)
	}
	score, err := c.GetScore(ctx, "app 1")
	if err != nil {
		t.Fatal(err)
	}
	if score.Status != xpromo.AppStatusPending {
		t.Errorf("score = %+v", score)
	}
	adm, err := c.AdminApproveApp(ctx, "app_1", "looks fine")
	if err != nil {
		t.Fatal(err)
	}
	if adm.Status != xpromo.AppStatusApproved {
		t.Errorf("admin = %+v", adm)
	}
	st, err := c.GetStats(ctx, "app_1", &xpromo.StatsParams{Period: xpromo.PeriodLast7Days})
	if err != nil {
		t.Fatal(err)
	}
	if st.FraudRejected["fraud_token_reused"] != 2 {
		t.Errorf("stats = %+v", st)
	}
	guide, err := c.GetIntegrationGuide(ctx)
	if err != nil || guide != "# Quickstart\n" {
		t.Errorf("guide = %q, %v", guide, err)
	}

	reqs := f.requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	post := reqs[0]
	if post.Method != "POST" || post.Path != "/v1/apps" {
		t.Errorf("register: %s %s", post.Method, post.Path)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(post.Body), &body); err != nil || body["platform"] != "mac" || body["bundle_id"] != "com.a" {
		t.Errorf("register body %s (%v)", post.Body, err)
	}
	if _, ok := body["category"]; ok {
		t.Errorf("unset optional category sent: %s", post.Body)
	}
	for name, want := range map[string]string{
		"Content-Type":  "application/json",
		"Accept":        "application/json",
		"Authorization": "Bearer xp_test_key",
		"User-Agent":    "xpromo-cli/9 xpromo-go/" + xpromo.Version,
	} {
		if got := post.Header.Get(name); got != want {
			t.Errorf("register %s = %q, want %q", name, got, want)
		}
	}
	if k := post.Header.Get("Idempotency-Key"); !idemKeyRE.MatchString(k) {
		t.Errorf("Idempotency-Key %q is not 16 random bytes in base64url", k)
	}

	get := reqs[1]
	if get.Method != "GET" || get.Path != "/v1/apps/app 1/score" {
		t.Errorf("score: %s %s", get.Method, get.Path)
	}
	if get.Header.Get("Content-Type") != "" || get.Header.Get("Idempotency-Key") != "" {
		t.Errorf("a GET without body carries Content-Type %q / Idempotency-Key %q", get.Header.Get("Content-Type"), get.Header.Get("Idempotency-Key"))
	}
	if got := reqs[2].Header.Get("Authorization"); got != "Bearer admintok" {
		t.Errorf("admin call Authorization = %q, want the admin token", got)
	}
	if !strings.Contains(reqs[2].Body, `"reason":"looks fine"`) {
		t.Errorf("admin body %q", reqs[2].Body)
	}
	if reqs[3].RawQuery != "period=last_7_days" {
		t.Errorf("stats query %q", reqs[3].RawQuery)
	}
	if got := reqs[4].Header.Get("Accept"); got != "text/markdown" {
		t.Errorf("guide Accept = %q", got)
	}
}

func TestBaseURLForms(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, `{"currency":"EUR","categories":[]}`)
	})
	for _, base := range []string{f.URL, f.URL + "/", f.URL + "/v1", f.URL + "/v1/"} {
		if _, err := xpromo.NewClient(base).GetRateCard(context.Background()); err != nil {
			t.Errorf("%s: %v", base, err)
		}
	}
	for _, r := range f.requests() {
		if r.Path != "/v1/rate-card" {
			t.Errorf("path %q, want /v1/rate-card", r.Path)
		}
	}
	if _, err := xpromo.NewClient("127.0.0.1:8080").GetRateCard(context.Background()); err == nil {
		t.Error("a base URL without scheme was accepted")
	}
}

func TestRetriesReuseIdempotencyKey(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n < 3 {
			writeJSON(w, 503, errBody("unavailable", "try again", nil))
			return
		}
		writeJSON(w, 201, `{"campaign_id":"cmp_1","daily_budget_cents":5000,"status":"throttled","floor_cents":80,"max_bid_cents":null}`)
	})
	cmp, err := f.client().CreateCampaign(context.Background(), &xpromo.CreateCampaignRequest{AppID: "app_1", Categories: []string{"productivity"}, DailyBudgetCents: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if cmp.CampaignID != "cmp_1" || cmp.Status != xpromo.CampaignStatusThrottled {
		t.Errorf("campaign = %+v", cmp)
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d attempts, want 3", len(reqs))
	}
	key := reqs[0].Header.Get("Idempotency-Key")
	for i, r := range reqs {
		if r.Header.Get("Idempotency-Key") != key {
			t.Errorf("attempt %d key %q, want %q (the first attempt's)", i, r.Header.Get("Idempotency-Key"), key)
		}
		if r.Body != reqs[0].Body {
			t.Errorf("attempt %d body %q differs from %q", i, r.Body, reqs[0].Body)
		}
	}

	// A second call gets a fresh key; a key of the caller's is sent as is.
	if _, err := f.client().PauseCampaign(context.Background(), "cmp_1"); err != nil {
		t.Fatal(err)
	}
	var resp xpromo.Response
	if _, err := f.client().PauseCampaign(context.Background(), "cmp_1", xpromo.WithIdempotencyKey("mine-1"), xpromo.WithResponse(&resp)); err != nil {
		t.Fatal(err)
	}
	reqs = f.requests()
	if k := reqs[3].Header.Get("Idempotency-Key"); k == key || !idemKeyRE.MatchString(k) {
		t.Errorf("second call key %q (first %q)", k, key)
	}
	if k := reqs[4].Header.Get("Idempotency-Key"); k != "mine-1" {
		t.Errorf("caller's key sent as %q", k)
	}
	if resp.StatusCode != 201 || resp.IdempotencyKey != "mine-1" || resp.RequestID != "req_test" {
		t.Errorf("response = %+v", resp)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	reset := time.Date(2026, 11, 21, 9, 1, 0, 0, time.UTC)
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, 429, errBody("rate_limited", "slow down", &reset))
			return
		}
		writeJSON(w, 200, `{"period":"last_30_days","clearing_rate":0.5,"fraud_pct":0.01,"avg_cpi_by_category":{}}`)
	})
	// The wait bounds are far below one second: only Retry-After can make
	// the client wait, and the server answers 200 after it either way. What
	// is checked is that the 429 was retried although Retry-After (1 s)
	// exceeds RetryWaitMax.
	ns, err := f.client().GetNetworkStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ns.ClearingRate != 0.5 || len(f.requests()) != 2 {
		t.Errorf("stats %+v after %d requests", ns, len(f.requests()))
	}
}

func TestRetryAfterTooLongIsReturned(t *testing.T) {
	reset := time.Date(2026, 11, 21, 9, 10, 0, 0, time.UTC)
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "600")
		writeJSON(w, 429, errBody("rate_limited", "slow down", &reset))
	})
	_, err := f.client().GetRateCard(context.Background())
	var e *xpromo.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if e.Status != 429 || e.Code != xpromo.CodeRateLimited || e.RetryAfter == nil || !e.RetryAfter.Equal(reset) {
		t.Errorf("error = %+v", e)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d attempts; a Retry-After above the maximum must not be waited out", n)
	}
}

func TestNoRetryOn4xx(t *testing.T) {
	for _, status := range []int{400, 401, 404, 409, 422} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
				writeJSON(w, status, errBody("below_minimum", "amount_cents must be at least 5000", nil))
			})
			_, err := f.client().TopUp(context.Background(), "app_1", &xpromo.TopUpParams{AmountCents: 4999})
			var e *xpromo.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *Error", err)
			}
			want := xpromo.Error{Status: status, Code: "below_minimum", Message: "amount_cents must be at least 5000", RequestID: "req_test"}
			if *e != want {
				t.Errorf("error = %+v, want %+v", *e, want)
			}
			if !xpromo.IsCode(err, xpromo.CodeBelowMinimum) || xpromo.ErrorCode(err) != "below_minimum" {
				t.Error("IsCode / ErrorCode do not see the code")
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("%d attempts on a %d, want 1", n, status)
			}
		})
	}
}

func TestRetriesExhausted(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 500, errBody("internal", "internal error; quote request id req_test", nil))
	})
	_, err := f.client(xpromo.WithRetries(2)).RequestPayout(context.Background(), "app_1")
	var e *xpromo.Error
	if !errors.As(err, &e) || e.Status != 500 || e.Code != xpromo.CodeInternal {
		t.Fatalf("err = %v, want the last 500 as *Error", err)
	}
	if n := len(f.requests()); n != 3 {
		t.Errorf("%d attempts, want 1 + 2 retries", n)
	}
	f2 := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 503, errBody("unavailable", "down", nil))
	})
	if _, err := f2.client(xpromo.WithRetries(0)).RequestPayout(context.Background(), "app_1"); !xpromo.IsCode(err, xpromo.CodeUnavailable) {
		t.Errorf("err = %v", err)
	}
	if n := len(f2.requests()); n != 1 {
		t.Errorf("WithRetries(0): %d attempts", n)
	}
}

func TestRetryOnConnectionError(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			// Drop the connection without an answer.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		writeJSON(w, 200, `{"transfer_id":"tr_1","amount_cents":7000}`)
	})
	p, err := f.client().RequestPayout(context.Background(), "app_1")
	if err != nil {
		t.Fatal(err)
	}
	if p.TransferID != "tr_1" || p.AmountCents != 7000 {
		t.Errorf("payout = %+v", p)
	}
	reqs := f.requests()
	if len(reqs) != 2 || reqs[0].Header.Get("Idempotency-Key") != reqs[1].Header.Get("Idempotency-Key") {
		t.Errorf("%d attempts; keys must match across them", len(reqs))
	}
}

func TestContextCancelStopsRetries(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		cancel() // the caller gives up while the server is failing
		w.Header().Set("Retry-After", "30")
		writeJSON(w, 503, errBody("unavailable", "down", nil))
	})
	_, err := f.client().GetRateCard(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d attempts after cancel", n)
	}
}

func TestUnexpectedErrorBody(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(404)
		io.WriteString(w, "<html>not here</html>")
	})
	_, err := f.client().GetRateCard(context.Background())
	var e *xpromo.Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != "" || !strings.Contains(e.Message, "not here") {
		t.Fatalf("err = %#v", err)
	}
}

func TestTopUpAnswers(t *testing.T) {
	challenge := `{"x402Version":1,"accepts":[{"scheme":"exact","network":"base-sepolia","maxAmountRequired":"54000000","resource":"http://x/v1/apps/app_1/top-up","description":"xpromo top-up","mimeType":"application/json","payTo":"0x0000000000000000000000000000000000000000","maxTimeoutSeconds":300,"asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","extra":{"name":"USDC","version":"2"}}],"resource":"http://x/v1/apps/app_1/top-up","error":"X-PAYMENT header is required"}`
	payment := base64.StdEncoding.EncodeToString([]byte(`{"x402Version":1}`))
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch {
		case r.Header.Get("X-PAYMENT") != "":
			w.Header().Set("X-PAYMENT-RESPONSE", "c2V0dGxlZA==")
			writeJSON(w, 200, `{"id":"ln_1","ts":"2026-11-21T09:00:00Z","type":"topup","amount_cents":5000,"counterparty_app_id":null,"event_chain_id":null,"balance_after":5000,"note":"x402"}`)
		case r.Header.Get("Prefer") == "payment=x402":
			writeJSON(w, 402, challenge)
		default:
			writeJSON(w, 200, `{"checkout_url":"http://x/test/checkout/cs_1"}`)
		}
	})
	c := f.client()
	ctx := context.Background()

	res, err := c.TopUp(ctx, "app_1", &xpromo.TopUpParams{AmountCents: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if res.CheckoutURL != "http://x/test/checkout/cs_1" || res.PaymentRequired() || res.Line != nil {
		t.Errorf("checkout answer = %+v", res)
	}

	res, err = c.TopUp(ctx, "app_1", &xpromo.TopUpParams{AmountCents: 5000, PreferX402: true}, xpromo.WithIdempotencyKey("topup-x402"))
	if err != nil {
		t.Fatalf("a 402 challenge must not be an error: %v", err)
	}
	if !res.PaymentRequired() || res.CheckoutURL != "" {
		t.Fatalf("x402 answer = %+v", res)
	}
	ch := res.Challenge
	if ch.X402Version != 1 || len(ch.Accepts) != 1 || ch.Accepts[0].MaxAmountRequired != "54000000" || ch.Accepts[0].Extra.Name != "USDC" || ch.Error == "" {
		t.Errorf("challenge = %+v", ch)
	}

	res, err = c.TopUp(ctx, "app_1", &xpromo.TopUpParams{AmountCents: 5000, Payment: payment}, xpromo.WithIdempotencyKey("topup-x402"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Line == nil || res.Line.Type != xpromo.LineTopup || res.Line.BalanceAfter != 5000 || res.PaymentResponse != "c2V0dGxlZA==" {
		t.Errorf("settled answer = %+v", res)
	}

	reqs := f.requests()
	if reqs[0].Body != `{"amount_cents":5000}` {
		t.Errorf("body %q", reqs[0].Body)
	}
	if reqs[1].Header.Get("Idempotency-Key") != "topup-x402" || reqs[2].Header.Get("Idempotency-Key") != "topup-x402" || reqs[2].Header.Get("X-PAYMENT") != payment {
		t.Errorf("paid retry headers: %v", reqs[2].Header)
	}
	if n := len(reqs); n != 3 {
		t.Errorf("%d requests: a 402 must not be retried", n)
	}
}

func TestLedgerLinesWalksPages(t *testing.T) {
	const pages = 3
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		page := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			page, _ = strconv.Atoi(strings.TrimPrefix(c, "c"))
		}
		var lines []string
		for i := range 2 {
			id := page*2 + i + 1
			lines = append(lines, fmt.Sprintf(`{"id":"ln_%d","ts":"2026-11-21T09:00:00Z","type":"topup","amount_cents":5000,"counterparty_app_id":null,"event_chain_id":null,"balance_after":%d,"note":null}`, id, id*5000))
		}
		next := ""
		if page+1 < pages {
			next = fmt.Sprintf(`,"next_cursor":"c%d"`, page+1)
		}
		writeJSON(w, 200, `{"lines":[`+strings.Join(lines, ",")+`]`+next+`}`)
	})
	c := f.client()
	params := &xpromo.LedgerParams{From: "2026-11-01", To: xpromo.DateOf(time.Date(2026, 11, 30, 23, 0, 0, 0, time.FixedZone("x", -3600))), Limit: 2}
	var ids []string
	for line, err := range c.LedgerLines(context.Background(), "app_1", params) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, line.ID)
	}
	if got := strings.Join(ids, ","); got != "ln_1,ln_2,ln_3,ln_4,ln_5,ln_6" {
		t.Errorf("lines %s", got)
	}
	reqs := f.requests()
	if len(reqs) != pages {
		t.Fatalf("%d pages fetched, want %d", len(reqs), pages)
	}
	wantQ := []string{
		"from=2026-11-01&limit=2&to=2026-12-01",
		"cursor=c1&from=2026-11-01&limit=2&to=2026-12-01",
		"cursor=c2&from=2026-11-01&limit=2&to=2026-12-01",
	}
	for i, r := range reqs {
		if r.RawQuery != wantQ[i] {
			t.Errorf("page %d query %q, want %q", i, r.RawQuery, wantQ[i])
		}
	}
	if params.Cursor != "" {
		t.Error("the iterator changed the caller's params")
	}

	// Stopping early fetches no further page.
	for line := range c.LedgerLines(context.Background(), "app_1", params) {
		if line.ID == "ln_2" {
			break
		}
	}
	if n := len(f.requests()); n != pages+1 {
		t.Errorf("%d requests after an early break, want %d", n, pages+1)
	}

	// One page directly.
	page, err := c.GetLedger(context.Background(), "app_1", &xpromo.LedgerParams{Cursor: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Lines) != 2 || page.NextCursor != nil {
		t.Errorf("last page = %+v", page)
	}
}

func TestLedgerLinesYieldsError(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			writeJSON(w, 200, `{"lines":[{"id":"ln_1","ts":"2026-11-21T09:00:00Z","type":"topup","amount_cents":1,"balance_after":1}],"next_cursor":"c1"}`)
			return
		}
		writeJSON(w, 422, errBody("invalid_cursor", "bad cursor", nil))
	})
	var got []string
	for line, err := range f.client().LedgerLines(context.Background(), "app_1", nil) {
		if err != nil {
			got = append(got, xpromo.ErrorCode(err))
			continue // the iterator must end by itself after an error
		}
		got = append(got, line.ID)
	}
	if strings.Join(got, ",") != "ln_1,invalid_cursor" {
		t.Errorf("yielded %v", got)
	}
}

func TestCompleteTestCheckoutSendsNoCredential(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, `{"session_id":"cs_1","status":"completed","amount_cents":5000,"app_id":"app_1"}`)
	})
	c := f.client(xpromo.WithAdminToken("admintok"))
	for _, ref := range []string{f.URL + "/test/checkout/cs_1", "cs_1"} {
		s, err := c.CompleteTestCheckout(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != "completed" || s.AmountCents != 5000 {
			t.Errorf("session = %+v", s)
		}
	}
	for _, r := range f.requests() {
		if r.Method != "POST" || r.Path != "/test/checkout/cs_1" || r.Header.Get("Authorization") != "" || r.Header.Get("Idempotency-Key") == "" {
			t.Errorf("%s %s Authorization=%q", r.Method, r.Path, r.Header.Get("Authorization"))
		}
	}
}

func TestWithDerivesCredentials(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, `{"app_id":"app_1","account_id":"acct_1"}`)
	})
	base := f.client()
	other := base.With(xpromo.WithAPIKey("xp_test_other"), xpromo.WithAdminToken("adm"))
	if _, err := other.GetScore(context.Background(), "app_1"); err != nil {
		t.Fatal(err)
	}
	acct, err := other.AdminSetPayoutAccount(context.Background(), "app_1", "acct_1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := base.GetScore(context.Background(), "app_1"); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if reqs[0].Header.Get("Authorization") != "Bearer xp_test_other" || reqs[2].Header.Get("Authorization") != "Bearer xp_test_key" {
		t.Error("With changed the original client, or did not apply")
	}
	if reqs[1].Method != "PUT" || reqs[1].Body != `{"account_id":"acct_1"}` || reqs[1].Header.Get("Authorization") != "Bearer adm" || reqs[1].Header.Get("Idempotency-Key") != "" {
		t.Errorf("payout account request %+v", reqs[1])
	}
	if acct.AccountID != "acct_1" || other.APIKey() != "xp_test_other" || base.APIKey() != "xp_test_key" {
		t.Errorf("account %+v", acct)
	}
}

func TestDeadlineShorterThanRetryAfter(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "30")
		writeJSON(w, 503, errBody("unavailable", "maintenance", nil))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := f.client().GetRateCard(ctx)
	if !xpromo.IsCode(err, xpromo.CodeUnavailable) {
		t.Fatalf("err = %v; a wait past the deadline must return the 503 itself", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d attempts", n)
	}
}

func TestDo(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, `{"echo":"`+r.Method+` `+r.URL.RequestURI()+`"}`)
	})
	var out struct{ Echo string }
	if err := f.client().Do(context.Background(), "POST", "/v1/future/thing?x=1", map[string]int{"a": 1}, &out); err != nil {
		t.Fatal(err)
	}
	r := f.requests()[0]
	if err := f.client().Do(context.Background(), "GET", "http://elsewhere.example/v1/x", nil, nil); err == nil {
		t.Error("Do accepted an absolute URL (the API key would leave the server)")
	}
	if out.Echo != "POST /v1/future/thing?x=1" || r.Body != `{"a":1}` || r.Header.Get("Idempotency-Key") == "" || r.Header.Get("Authorization") != "Bearer xp_test_key" {
		t.Errorf("echo %q, request %+v", out.Echo, r)
	}
}

func TestLoggerSeesRetries(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			writeJSON(w, 502, errBody("internal", "x", nil))
			return
		}
		writeJSON(w, 200, `{}`)
	})
	var buf strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	if _, err := f.client(xpromo.WithLogger(logger)).GetNetworkStats(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "retrying request") {
		t.Errorf("log: %s", buf.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestConcurrentUse: one client (and clients derived from it) shared by
// many goroutines; run with -race.
func TestConcurrentUse(t *testing.T) {
	var mu sync.Mutex
	tried := map[string]bool{}
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		first := !tried[r.Header.Get("Idempotency-Key")]
		tried[r.Header.Get("Idempotency-Key")] = true
		mu.Unlock()
		if first { // every call's first attempt fails
			writeJSON(w, 503, errBody("unavailable", "x", nil))
			return
		}
		writeJSON(w, 200, `{"campaign_id":"`+r.Header.Get("Authorization")+`","status":"paused"}`)
	})
	base := f.client()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Go(func() {
			key := fmt.Sprintf("xp_test_%d", i)
			c := base.With(xpromo.WithAPIKey(key))
			for range 4 {
				cmp, err := c.PauseCampaign(context.Background(), "cmp_1")
				if err != nil {
					errs <- err
					return
				}
				if cmp.CampaignID != "Bearer "+key {
					errs <- fmt.Errorf("goroutine %d got %q", i, cmp.CampaignID)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	keys := map[string]int{}
	for _, r := range f.requests() {
		keys[r.Header.Get("Idempotency-Key")]++
	}
	if len(keys) != 64 {
		t.Errorf("%d distinct Idempotency-Keys over 64 calls", len(keys))
	}
	for k, n := range keys {
		if n != 2 {
			t.Errorf("key %s sent %d times, want 2 (one failure, one retry)", k, n)
		}
	}
}
