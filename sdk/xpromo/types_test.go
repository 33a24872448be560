package xpromo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

var (
	t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	t1 = time.Date(2027, 5, 21, 0, 0, 0, 0, time.UTC)
)

// goldenCase: Marshal(value) must equal golden byte for byte (after
// compacting golden), and Unmarshal(golden) must equal decoded (value when
// decoded is nil). Goldens are written in the field order of the document.
type goldenCase struct {
	name    string
	value   any
	golden  string
	decoded any
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{
			name: "RegisterAppRequest",
			value: RegisterAppRequest{Name: "Snip", Platform: PlatformMac, BundleID: "com.example.snip",
				Domain: "example.com", DownloadURL: "https://example.com/Snip.zip", ContactEmail: "dev@example.com"},
			golden: `{"name":"Snip","platform":"mac","bundle_id":"com.example.snip","domain":"example.com",
				"download_url":"https://example.com/Snip.zip","contact_email":"dev@example.com"}`,
		},
		{
			name:   "RegisterAppResponse",
			value:  RegisterAppResponse{AppID: "app_1", APIKey: "xp_test_abc", Status: AppStatusPending, ScoringJobID: "job_1"},
			golden: `{"app_id":"app_1","api_key":"xp_test_abc","status":"pending","scoring_job_id":"job_1"}`,
		},
		{
			name: "Score/behavior null, reasons empty",
			value: Score{Status: AppStatusApproved,
				Gate:         Gate{Signed: true, MalwareClean: true, DomainAgeOK: true, ContactVerified: true, BundleMatch: false},
				Reputation:   Reputation{Total: 71, AIVisibility: 80, Cadence: 60, Reviews: 55, Coherence: 90},
				NextReviewAt: t0},
			golden: `{"status":"approved",
				"gate":{"signed":true,"malware_clean":true,"domain_age_ok":true,"contact_verified":true,"bundle_match":false},
				"reputation":{"total":71,"ai_visibility":80,"cadence":60,"reviews":55,"coherence":90},
				"behavior":null,"reasons":[],"next_review_at":"2026-11-21T10:00:00Z","retry_after":null}`,
			decoded: Score{Status: AppStatusApproved,
				Gate:       Gate{Signed: true, MalwareClean: true, DomainAgeOK: true, ContactVerified: true, BundleMatch: false},
				Reputation: Reputation{Total: 71, AIVisibility: 80, Cadence: 60, Reviews: 55, Coherence: 90},
				Reasons:    []string{}, NextReviewAt: t0},
		},
		{
			name: "Score/behavior set",
			value: Score{Status: AppStatusLive, Gate: Gate{true, true, true, true, true},
				Reputation: Reputation{Total: 50, AIVisibility: 50, Cadence: 50, Reviews: 50, Coherence: 50},
				Behavior:   &Behavior{Retention48h: 0.82, UninstallRate: 0.05, Canary: false, Complaints: 1},
				Reasons:    []string{"reviews_unavailable"}, NextReviewAt: t0},
			golden: `{"status":"live",
				"gate":{"signed":true,"malware_clean":true,"domain_age_ok":true,"contact_verified":true,"bundle_match":true},
				"reputation":{"total":50,"ai_visibility":50,"cadence":50,"reviews":50,"coherence":50},
				"behavior":{"retention_48h":0.82,"uninstall_rate":0.05,"canary":false,"complaints":1},
				"reasons":["reviews_unavailable"],"next_review_at":"2026-11-21T10:00:00Z","retry_after":null}`,
		},
		{
			name: "Score/rejected, domain too young: retry_after set",
			value: Score{Status: AppStatusRejected, Gate: Gate{Signed: true, MalwareClean: true, BundleMatch: true},
				Reasons: []string{"gate_domain_too_young", "reputation_pending"}, NextReviewAt: t0, RetryAfter: &t0},
			golden: `{"status":"rejected",
				"gate":{"signed":true,"malware_clean":true,"domain_age_ok":false,"contact_verified":false,"bundle_match":true},
				"reputation":{"total":0,"ai_visibility":0,"cadence":0,"reviews":0,"coherence":0},
				"behavior":null,"reasons":["gate_domain_too_young","reputation_pending"],"next_review_at":"2026-11-21T10:00:00Z","retry_after":"2026-11-21T10:00:00Z"}`,
		},
		{
			name:   "CreateCampaignRequest/floor buyer omits max_bid_cents",
			value:  CreateCampaignRequest{AppID: "app_1", Categories: []string{"productivity"}, DailyBudgetCents: 1000},
			golden: `{"app_id":"app_1","categories":["productivity"],"daily_budget_cents":1000}`,
		},
		{
			name:   "CreateCampaignRequest/with bid",
			value:  CreateCampaignRequest{AppID: "app_1", Categories: []string{"productivity", "utilities"}, DailyBudgetCents: 5000, MaxBidCents: ptr[int64](250)},
			golden: `{"app_id":"app_1","categories":["productivity","utilities"],"daily_budget_cents":5000,"max_bid_cents":250}`,
		},
		{
			name: "Campaign/floor price: max_bid_cents null",
			value: Campaign{CampaignID: "cmp_1", DailyBudgetCents: 1000, Status: CampaignStatusThrottled, FloorCents: 120,
				AppID: "app_1", Categories: []string{"games"}, CreatedAt: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)},
			golden: `{"campaign_id":"cmp_1","daily_budget_cents":1000,"status":"throttled","status_reason":null,"floor_cents":120,"max_bid_cents":null,` +
				`"app_id":"app_1","categories":["games"],"spent_today_cents":0,"created_at":"2026-11-21T09:00:00Z","updated_at":"2026-11-21T09:30:00Z"}`,
		},
		{
			name: "Campaign/with bid",
			value: Campaign{CampaignID: "cmp_1", DailyBudgetCents: 1000, Status: CampaignStatusPaused, FloorCents: 120, MaxBidCents: ptr[int64](300),
				AppID: "app_1", Categories: []string{"games", "finance"}, SpentTodayCents: 600, CreatedAt: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)},
			golden: `{"campaign_id":"cmp_1","daily_budget_cents":1000,"status":"paused","status_reason":null,"floor_cents":120,"max_bid_cents":300,` +
				`"app_id":"app_1","categories":["games","finance"],"spent_today_cents":600,"created_at":"2026-11-21T09:00:00Z","updated_at":"2026-11-21T09:00:00Z"}`,
		},
		{
			name:    "Campaign/categories [] when nil",
			value:   Campaign{CampaignID: "cmp_1", DailyBudgetCents: 1000, Status: CampaignStatusActive, FloorCents: 120, CreatedAt: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)},
			decoded: Campaign{CampaignID: "cmp_1", DailyBudgetCents: 1000, Status: CampaignStatusActive, FloorCents: 120, Categories: []string{}, CreatedAt: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)},
			golden: `{"campaign_id":"cmp_1","daily_budget_cents":1000,"status":"active","status_reason":null,"floor_cents":120,"max_bid_cents":null,` +
				`"app_id":"","categories":[],"spent_today_cents":0,"created_at":"2026-11-21T09:00:00Z","updated_at":"2026-11-21T09:00:00Z"}`,
		},
		{
			name:  "LedgerLine/nullables null",
			value: LedgerLine{ID: "ln_1", Ts: t0, Type: LineTopup, AmountCents: 5000, BalanceAfter: 5000},
			golden: `{"id":"ln_1","ts":"2026-11-21T10:00:00Z","type":"topup","amount_cents":5000,
				"counterparty_app_id":null,"event_chain_id":null,"balance_after":5000,"note":null}`,
		},
		{
			name: "LedgerLine/nullables set",
			value: LedgerLine{ID: "ln_2", Ts: t0, Type: LineEscrowHold, AmountCents: -150,
				CounterpartyAppID: ptr("app_2"), EventChainID: ptr("ch_1"), BalanceAfter: 4850, Note: ptr("hold")},
			golden: `{"id":"ln_2","ts":"2026-11-21T10:00:00Z","type":"escrow_hold","amount_cents":-150,
				"counterparty_app_id":"app_2","event_chain_id":"ch_1","balance_after":4850,"note":"hold"}`,
		},
		{
			name:    "LedgerPage/last page: no next_cursor, lines never null",
			value:   LedgerPage{},
			golden:  `{"lines":[]}`,
			decoded: LedgerPage{Lines: []LedgerLine{}},
		},
		{
			name: "LedgerPage/with next_cursor",
			value: LedgerPage{Lines: []LedgerLine{{ID: "ln_1", Ts: t0, Type: LinePayout, AmountCents: -5000, BalanceAfter: 0}},
				NextCursor: ptr("c_abc")},
			golden: `{"lines":[{"id":"ln_1","ts":"2026-11-21T10:00:00Z","type":"payout","amount_cents":-5000,
				"counterparty_app_id":null,"event_chain_id":null,"balance_after":0,"note":null}],"next_cursor":"c_abc"}`,
		},
		{
			name: "Stats",
			value: Stats{Impressions: 1000, Clicks: 40, Installs: 12, Cleared: 10, Retention48h: 0.83,
				FraudRejected: map[string]int64{"fraud_token_reused": 2, "fraud_datacenter_asn": 1},
				FloorCents:    120, AvgClearingPriceCents: 131},
			golden: `{"impressions":1000,"clicks":40,"installs":12,"cleared":10,"retention_48h":0.83,
				"fraud_rejected":{"fraud_datacenter_asn":1,"fraud_token_reused":2},"floor_cents":120,"avg_clearing_price_cents":131}`,
		},
		{
			name:    "Stats/empty fraud_rejected is {}",
			value:   Stats{FloorCents: 120, AvgClearingPriceCents: 120},
			golden:  `{"impressions":0,"clicks":0,"installs":0,"cleared":0,"retention_48h":0,"fraud_rejected":{},"floor_cents":120,"avg_clearing_price_cents":120}`,
			decoded: Stats{FraudRejected: map[string]int64{}, FloorCents: 120, AvgClearingPriceCents: 120},
		},
		{
			name: "RateCard",
			value: RateCard{Currency: Currency, TakeRate: TakeRate, CreditBonus: CreditBonus,
				Categories:         []RateCardCategory{{Key: "productivity", Label: "Productivity", FloorCentsMin: 100, FloorCentsMax: 140}},
				ReservedFloorShare: ReservedFloorShare, PricingModel: PricingModel},
			golden: `{"currency":"EUR","take_rate":0.3,"credit_bonus":1.2,
				"categories":[{"key":"productivity","label":"Productivity","floor_cents_min":100,"floor_cents_max":140}],
				"reserved_floor_share":0.3,"pricing_model":"floor_plus_second_price"}`,
		},
		{
			name:   "NetworkStats",
			value:  NetworkStats{Period: "last_30_days", ClearingRate: 0.71, FraudPct: 0.04, AvgCPIByCategory: map[string]int64{"productivity": 131}},
			golden: `{"period":"last_30_days","clearing_rate":0.71,"fraud_pct":0.04,"avg_cpi_by_category":{"productivity":131}}`,
		},
		{
			name:   "TopUpRequest",
			value:  TopUpRequest{AmountCents: 5000},
			golden: `{"amount_cents":5000}`,
		},
		{
			name:   "TopUpResponse",
			value:  TopUpResponse{CheckoutURL: "https://checkout.example/cs_test_1"},
			golden: `{"checkout_url":"https://checkout.example/cs_test_1"}`,
		},
		{
			name: "X402Challenge",
			value: X402Challenge{X402Version: X402Version, Resource: "https://api.example/v1/apps/app_1/top-up",
				Error: "X-PAYMENT header is required",
				Accepts: []X402Accept{{Scheme: "exact", Network: "base-sepolia", MaxAmountRequired: "54320000",
					Resource: "https://api.example/v1/apps/app_1/top-up", Description: "xpromo wallet top-up",
					MimeType: "application/json", PayTo: "0x1111111111111111111111111111111111111111",
					MaxTimeoutSeconds: 300, Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
					Extra: X402Extra{Name: "USDC", Version: "2"}}}},
			golden: `{"x402Version":1,"accepts":[{"scheme":"exact","network":"base-sepolia","maxAmountRequired":"54320000",
				"resource":"https://api.example/v1/apps/app_1/top-up","description":"xpromo wallet top-up",
				"mimeType":"application/json","payTo":"0x1111111111111111111111111111111111111111",
				"maxTimeoutSeconds":300,"asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e",
				"extra":{"name":"USDC","version":"2"}}],
				"resource":"https://api.example/v1/apps/app_1/top-up","error":"X-PAYMENT header is required"}`,
		},
		{
			name:   "PayoutResponse",
			value:  PayoutResponse{TransferID: "tr_test_1", AmountCents: 5000, PayoutID: "po_1"},
			golden: `{"transfer_id":"tr_test_1","amount_cents":5000,"payout_id":"po_1"}`,
		},
		{
			name:   "ErrorResponse/retry_after null",
			value:  ErrorResponse{Error: ErrorBody{Code: "not_found", Message: "no such app"}},
			golden: `{"error":{"code":"not_found","message":"no such app","retry_after":null}}`,
		},
		{
			name:   "ErrorResponse/retry_after set",
			value:  ErrorResponse{Error: ErrorBody{Code: "gate_domain_too_young", Message: "domain registered 2026-11-21", RetryAfter: &t1}},
			golden: `{"error":{"code":"gate_domain_too_young","message":"domain registered 2026-11-21","retry_after":"2027-05-21T00:00:00Z"}}`,
		},
	}
}

func TestGoldenJSON(t *testing.T) {
	testGoldenJSON(t, goldenCases())
}

// testGoldenJSON runs one subtest per case: the value and a pointer to it
// both marshal to the golden byte for byte, and the golden decodes (with
// no unknown fields) back to the value, or to decoded where it is set.
func testGoldenJSON(t *testing.T, cases []goldenCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := json.Compact(&want, []byte(tc.golden)); err != nil {
				t.Fatalf("bad golden: %v", err)
			}

			// Encode: value and pointer to value must both give the golden.
			for _, v := range []any{tc.value, ptrTo(tc.value)} {
				got, err := json.Marshal(v)
				if err != nil {
					t.Fatalf("marshal %T: %v", v, err)
				}
				if !bytes.Equal(got, want.Bytes()) {
					t.Errorf("marshal %T:\n got %s\nwant %s", v, got, want.Bytes())
				}
			}

			// Decode: golden into a fresh value of the same type.
			dst := reflect.New(reflect.TypeOf(tc.value))
			dec := json.NewDecoder(bytes.NewReader(want.Bytes()))
			dec.DisallowUnknownFields() // every golden field must map to a Go field
			if err := dec.Decode(dst.Interface()); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			expect := tc.decoded
			if expect == nil {
				expect = tc.value
			}
			if got := dst.Elem().Interface(); !reflect.DeepEqual(got, expect) {
				t.Errorf("unmarshal:\n got %#v\nwant %#v", got, expect)
			}
		})
	}
}

func ptrTo(v any) any {
	p := reflect.New(reflect.TypeOf(v))
	p.Elem().Set(reflect.ValueOf(v))
	return p.Interface()
}

// Decoding an explicit null into an optional request field leaves it unset,
// so a client that sends "max_bid_cents": null still means "floor buyer".
func TestCreateCampaignRequestNullBid(t *testing.T) {
	var r CreateCampaignRequest
	if err := json.Unmarshal([]byte(`{"app_id":"a","categories":["c"],"daily_budget_cents":1000,"max_bid_cents":null}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.MaxBidCents != nil {
		t.Fatalf("MaxBidCents = %v, want nil", *r.MaxBidCents)
	}
}

func TestEnums(t *testing.T) {
	valid := []interface{ Valid() bool }{
		PlatformMac, PlatformWin,
		AppStatusPending, AppStatusApproved, AppStatusThrottled, AppStatusLive, AppStatusSuspended, AppStatusRejected,
		CampaignStatusThrottled, CampaignStatusActive, CampaignStatusPaused,
		LineTopup, LineEarn, LineCharge, LineEscrowHold, LineEscrowRelease, LineClawback, LinePayout, LineAdjustment,
		PeriodLast7Days, PeriodLast30Days, PeriodLast90Days,
	}
	for _, v := range valid {
		if !v.Valid() {
			t.Errorf("%T(%v).Valid() = false", v, v)
		}
	}
	invalid := []interface{ Valid() bool }{
		Platform("linux"), Platform(""), AppStatus("active"), CampaignStatus("live"),
		LineType("refund"), Period("last_1_day"),
	}
	for _, v := range invalid {
		if v.Valid() {
			t.Errorf("%T(%v).Valid() = true", v, v)
		}
	}
	if !DefaultPeriod.Valid() {
		t.Error("DefaultPeriod is not a valid Period")
	}
}

func TestError(t *testing.T) {
	e := NewError(429, ErrorBody{Code: CodeRateLimited, Message: "slow down", RetryAfter: &t0}, "req_1")
	want := "xpromo: 429 rate_limited: slow down (retry after 2026-11-21T10:00:00Z) (request req_1)"
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	wrapped := fmt.Errorf("top up: %w", e)
	if !IsCode(wrapped, CodeRateLimited) || IsCode(wrapped, CodeNotFound) || ErrorCode(wrapped) != CodeRateLimited {
		t.Error("IsCode/ErrorCode do not see through wrapping")
	}
	if ErrorCode(fmt.Errorf("plain")) != "" || IsCode(nil, "") {
		t.Error("non-API errors must have no code")
	}
	if got := e.Body(); got.Code != CodeRateLimited || got.RetryAfter != &t0 {
		t.Errorf("Body() = %+v", got)
	}
	var _ error = e
	if got := (&Error{Status: 404, Code: CodeNotFound}).Error(); got != "xpromo: 404 not_found" {
		t.Errorf("minimal Error() = %q", got)
	}
}
