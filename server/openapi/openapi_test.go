package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

func load(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromData(Document)
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	return doc
}

func TestDocumentValidates(t *testing.T) {
	doc := load(t)
	if !doc.IsOpenAPI31OrLater() {
		t.Fatal("kin-openapi does not see an OpenAPI 3.1 document")
	}
	// Validate switches itself to OpenAPI 3.1 / JSON Schema 2020-12 rules
	// for a 3.1 document; also check that every format and default is sound.
	err := doc.Validate(context.Background(),
		openapi3.EnableMultiError(),
		openapi3.EnableSchemaDefaultsValidation(),
		openapi3.EnableSchemaPatternValidation(),
		openapi3.EnableExamplesValidation(),
	)
	if err != nil {
		t.Fatalf("openapi.json does not validate: %v", err)
	}
}

func TestDocumentHeader(t *testing.T) {
	doc := load(t)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	if doc.Info.Version != "1.0.0" || doc.Info.Title != "xpromo API" {
		t.Errorf("info = %q %q, want xpromo API 1.0.0", doc.Info.Title, doc.Info.Version)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/" {
		t.Errorf("servers = %v, want one server with url /", doc.Servers)
	}
	if len(doc.Security) != 1 || len(doc.Security[0]) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Errorf("global security = %v, want [{bearerAuth: []}]", doc.Security)
	}
	ss := doc.Components.SecuritySchemes["bearerAuth"]
	if ss == nil || ss.Value.Type != "http" || ss.Value.Scheme != "bearer" {
		t.Errorf("bearerAuth security scheme missing or not http bearer")
	}
}

// The document is JSON without duplicate keys (encoding/json would silently
// keep the last one) and without the OpenAPI 3.0 `nullable` keyword.
func TestDocumentIsCleanJSON(t *testing.T) {
	if !json.Valid(Document) {
		t.Fatal("openapi.json is not valid JSON")
	}
	if err := checkDuplicateKeys(json.NewDecoder(bytes.NewReader(Document))); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(Document, []byte(`"nullable"`)) {
		t.Error(`openapi.json uses "nullable"; OpenAPI 3.1 spells it type: [T, "null"]`)
	}
}

func checkDuplicateKeys(dec *json.Decoder) error {
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				if seen[key] {
					return fmt.Errorf("duplicate key %q at %s", key, path)
				}
				seen[key] = true
				if err := walk(path + "/" + key); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s/%d", path, i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	return walk("")
}

type opSpec struct {
	method, path string
	public       bool
	body         bool // takes a JSON request body
}

// The twelve operations of the API document, by MCP tool name, plus the two
// additive discovery documents.
var operations = map[string]opSpec{
	"register_app":          {"POST", "/v1/apps", true, true},
	"get_score":             {"GET", "/v1/apps/{app_id}/score", false, false},
	"get_app":               {"GET", "/v1/apps/{app_id}", false, false},
	"update_app":            {"PATCH", "/v1/apps/{app_id}", false, true},
	"get_rate_card":         {"GET", "/v1/rate-card", true, false},
	"get_network_stats":     {"GET", "/v1/network-stats", true, false},
	"get_integration_guide": {"GET", "/v1/integration-guide", true, false},
	"top_up":                {"POST", "/v1/apps/{app_id}/top-up", false, true},
	"create_campaign":       {"POST", "/v1/campaigns", false, true},
	"pause_campaign":        {"POST", "/v1/campaigns/{campaign_id}/pause", false, false},
	"resume_campaign":       {"POST", "/v1/campaigns/{campaign_id}/resume", false, false},
	"list_campaigns":        {"GET", "/v1/campaigns", false, false},
	// Additive: the dashboard's reads (docs/dashboard.md "API").
	"get_balance":         {"GET", "/v1/apps/{app_id}/balance", false, false},
	"list_payouts":        {"GET", "/v1/apps/{app_id}/payouts", false, false},
	"list_api_keys":       {"GET", "/v1/apps/{app_id}/keys", false, false},
	"list_chains":         {"GET", "/v1/chains", false, false},
	"get_thresholds":      {"GET", "/v1/apps/{app_id}/thresholds", false, false},
	"get_campaign":        {"GET", "/v1/campaigns/{campaign_id}", false, false},
	"update_campaign":     {"PATCH", "/v1/campaigns/{campaign_id}", false, true},
	"get_ledger":          {"GET", "/v1/apps/{app_id}/ledger", false, false},
	"get_stats":           {"GET", "/v1/apps/{app_id}/stats", false, false},
	"get_daily_stats":     {"GET", "/v1/stats/daily", false, false},
	"request_payout":      {"POST", "/v1/apps/{app_id}/payout", false, false},
	"get_x402_descriptor": {"GET", "/.well-known/x402", true, false},
	"get_openapi":         {"GET", "/openapi.json", true, false},
	// Additive operators' operations (admin token).
	"cut_category_floor":  {"POST", "/v1/admin/categories/{category}/floors", false, true},
	"admin_get_app":       {"GET", "/v1/admin/apps/{app_id}", false, false},
	"admin_approve_app":   {"POST", "/v1/admin/apps/{app_id}/approve", false, true},
	"admin_reject_app":    {"POST", "/v1/admin/apps/{app_id}/reject", false, true},
	"admin_suspend_app":   {"POST", "/v1/admin/apps/{app_id}/suspend", false, true},
	"admin_reinstate_app": {"POST", "/v1/admin/apps/{app_id}/reinstate", false, true},
	"admin_review_app":    {"POST", "/v1/admin/apps/{app_id}/review", false, true},
	"admin_list_audit":    {"GET", "/v1/admin/audit", false, false},
	"admin_list_apps":     {"GET", "/v1/admin/apps", false, false},
	// Additive app operations (API key).
	"rotate_api_key": {"POST", "/v1/apps/{app_id}/keys/rotate", false, false},
	"get_job":        {"GET", "/v1/apps/{app_id}/jobs/{job_id}", false, false},
	// The vetting gate: re-check and contact challenge (API key), the
	// challenge link's page (public).
	"recheck_gate":             {"POST", "/v1/apps/{app_id}/gate/recheck", false, false},
	"verify_contact_code":      {"POST", "/v1/apps/{app_id}/contact/verify", false, true},
	"resend_contact_challenge": {"POST", "/v1/apps/{app_id}/contact/resend", false, false},
	"get_contact_verify_page":  {"GET", "/v1/contact/verify", true, false},
	"verify_contact_token":     {"POST", "/v1/contact/verify", true, false},
	// Test mode's checkout page (public) and payout accounts (admin).
	"get_test_checkout":        {"GET", "/test/checkout/{session_id}", true, false},
	"complete_test_checkout":   {"POST", "/test/checkout/{session_id}", true, false},
	"admin_set_payout_account": {"PUT", "/v1/admin/apps/{app_id}/payout-account", false, true},
	"admin_adjust_wallet":      {"POST", "/v1/admin/apps/{app_id}/adjustments", false, true},
	// Connected payout accounts (API key). Stripe's webhook
	// (POST /v1/stripe/webhook) is Stripe's callback, not an operation of
	// the API, like /healthz: docs/payments.md describes it.
	"get_payout_account":      {"GET", "/v1/apps/{app_id}/payout-account", false, false},
	"start_payout_onboarding": {"POST", "/v1/apps/{app_id}/payout-account/onboarding", false, false},
	// Attribution: SDK keys and chains (API key), the SDK endpoints
	// (public), the test clock and the sweep (admin).
	"register_sdk_key":      {"POST", "/v1/apps/{app_id}/sdk-keys", false, true},
	"list_sdk_keys":         {"GET", "/v1/apps/{app_id}/sdk-keys", false, false},
	"revoke_sdk_key":        {"POST", "/v1/apps/{app_id}/sdk-keys/{key_id}/revoke", false, false},
	"get_chain":             {"GET", "/v1/chains/{chain_id}", false, false},
	"sdk_fill":              {"POST", "/v1/sdk/fill", true, true},
	"sdk_click":             {"POST", "/v1/sdk/click", true, true},
	"sdk_install":           {"POST", "/v1/sdk/install", true, true},
	"sdk_heartbeat":         {"POST", "/v1/sdk/heartbeat", true, true},
	"get_clock":             {"GET", "/v1/admin/clock", false, false},
	"advance_clock":         {"POST", "/v1/admin/clock/advance", false, true},
	"run_attribution_sweep": {"POST", "/v1/admin/attribution/sweep", false, false},
	// Webhooks (API key).
	"create_webhook_endpoint": {"POST", "/v1/apps/{app_id}/webhook-endpoints", false, true},
	"list_webhook_endpoints":  {"GET", "/v1/apps/{app_id}/webhook-endpoints", false, false},
	"get_webhook_endpoint":    {"GET", "/v1/apps/{app_id}/webhook-endpoints/{endpoint_id}", false, false},
	"update_webhook_endpoint": {"PATCH", "/v1/apps/{app_id}/webhook-endpoints/{endpoint_id}", false, true},
	"delete_webhook_endpoint": {"DELETE", "/v1/apps/{app_id}/webhook-endpoints/{endpoint_id}", false, false},
	"rotate_webhook_secret":   {"POST", "/v1/apps/{app_id}/webhook-endpoints/{endpoint_id}/rotate-secret", false, false},
	"list_webhook_attempts":   {"GET", "/v1/apps/{app_id}/webhook-endpoints/{endpoint_id}/attempts", false, false},
	"redeliver_webhook":       {"POST", "/v1/apps/{app_id}/webhook-endpoints/{endpoint_id}/redeliver", false, true},
	"list_events":             {"GET", "/v1/apps/{app_id}/events", false, false},
	"get_event":               {"GET", "/v1/apps/{app_id}/events/{event_id}", false, false},
	// Earn mode and complaints (API key; resolving: admin).
	"get_earn_mode":           {"GET", "/v1/apps/{app_id}/earn-mode", false, false},
	"set_earn_mode":           {"POST", "/v1/apps/{app_id}/earn-mode", false, true},
	"create_complaint":        {"POST", "/v1/apps/{app_id}/complaints", false, true},
	"list_complaints":         {"GET", "/v1/apps/{app_id}/complaints", false, false},
	"admin_list_complaints":   {"GET", "/v1/admin/complaints", false, false},
	"admin_resolve_complaint": {"POST", "/v1/admin/complaints/{complaint_id}/resolve", false, true},

	// What the served integration guide links, so that it is complete
	// alone (public).
	"get_integration_guide_vectors":  {"GET", "/v1/integration-guide/vectors.json", true, false},
	"get_integration_guide_protocol": {"GET", "/v1/integration-guide/protocol.md", true, false},

	// The web dashboard's sign-in link (API key; docs/dashboard.md).
	"dashboard_link": {"POST", "/v1/dashboard/sign-in-links", false, false},
}

// optionalBody lists the operations whose JSON body may be left out.
var optionalBody = map[string]bool{
	"admin_approve_app": true, "admin_reject_app": true, "admin_suspend_app": true,
	"admin_reinstate_app": true, "admin_review_app": true,
}

type foundOp struct {
	opSpec
	op       *openapi3.Operation
	pathItem *openapi3.PathItem
}

func allOperations(t *testing.T, doc *openapi3.T) map[string]foundOp {
	t.Helper()
	out := map[string]foundOp{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId", method, path)
				continue
			}
			out[op.OperationID] = foundOp{opSpec: opSpec{method: method, path: path}, op: op, pathItem: item}
		}
	}
	return out
}

func TestOperationSet(t *testing.T) {
	doc := load(t)
	found := allOperations(t, doc)
	for id, want := range operations {
		got, ok := found[id]
		if !ok {
			t.Errorf("operation %s missing", id)
			continue
		}
		if got.method != want.method || got.path != want.path {
			t.Errorf("operation %s is %s %s, want %s %s", id, got.method, got.path, want.method, want.path)
		}
	}
	for id, got := range found {
		if _, ok := operations[id]; !ok {
			t.Errorf("undeclared operation %s (%s %s): add it to the test's list", id, got.method, got.path)
		}
	}
	// Operational endpoints are not part of the API description.
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if doc.Paths.Find(p) != nil {
			t.Errorf("%s must not be documented", p)
		}
	}
}

func TestSecurity(t *testing.T) {
	doc := load(t)
	for id, f := range allOperations(t, doc) {
		want := operations[id]
		switch {
		case want.public:
			if f.op.Security == nil || len(*f.op.Security) != 0 {
				t.Errorf("%s is public: want security: []", id)
			}
		case strings.HasPrefix(want.path, "/v1/admin/"):
			if f.op.Security == nil || len(*f.op.Security) != 1 || (*f.op.Security)[0]["adminToken"] == nil {
				t.Errorf("%s is an admin operation: want security [{adminToken: []}]", id)
			}
		default:
			if f.op.Security != nil {
				t.Errorf("%s is protected: want the global bearer security, got an override", id)
			}
		}
	}
}

func responseHeaders(r *openapi3.ResponseRef) openapi3.Headers { return r.Value.Headers }

func isErrorBody(r *openapi3.ResponseRef) bool {
	mt := r.Value.Content.Get("application/json")
	return mt != nil && mt.Schema != nil && mt.Schema.Ref == "#/components/schemas/Error" && len(r.Value.Content) == 1
}

func hasParam(f foundOp, in, name string) *openapi3.Parameter {
	for _, ps := range []openapi3.Parameters{f.op.Parameters, f.pathItem.Parameters} {
		if p := ps.GetByInAndName(in, name); p != nil {
			return p
		}
	}
	return nil
}

func TestResponsesAndParameters(t *testing.T) {
	doc := load(t)
	rlHeaders := []string{"RateLimit-Policy", "RateLimit", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"}

	for id, f := range allOperations(t, doc) {
		spec := operations[id]
		resp := f.op.Responses
		need := func(status int, why string) *openapi3.ResponseRef {
			r := resp.Status(status)
			if r == nil {
				t.Errorf("%s: no %d response (%s)", id, status, why)
			}
			return r
		}

		// Every response documents the rate-limit headers; every 4xx/5xx
		// except the x402 402 has the Error body.
		for code, r := range resp.Map() {
			for _, h := range rlHeaders {
				if responseHeaders(r)[h] == nil || responseHeaders(r)[h].Ref != "#/components/headers/"+h {
					t.Errorf("%s %s: header %s missing or not a $ref to components.headers", id, code, h)
				}
			}
			if code[0] >= '4' && code != "402" && !isErrorBody(r) {
				t.Errorf("%s %s: body is not the Error schema", id, code)
			}
			if r.Value.Description == nil || *r.Value.Description == "" {
				t.Errorf("%s %s: no description", id, code)
			}
		}

		need(429, "rate limits apply to every operation")
		if r := resp.Status(429); r != nil {
			for _, h := range []string{"Retry-After", "RateLimit", "RateLimit-Policy"} {
				if responseHeaders(r)[h] == nil {
					t.Errorf("%s 429: header %s missing", id, h)
				}
			}
			if h := responseHeaders(r)["Retry-After"]; h != nil && !h.Value.Required {
				t.Errorf("%s 429: Retry-After must be required", id)
			}
		}
		need(500, "generic")
		need(503, "generic")

		if spec.public {
			if resp.Status(401) != nil {
				t.Errorf("%s is public but documents 401", id)
			}
		} else if r := need(401, "protected"); r != nil {
			if h := responseHeaders(r)["WWW-Authenticate"]; h == nil || !h.Value.Required {
				t.Errorf("%s 401: WWW-Authenticate header missing or not required", id)
			}
		}

		if strings.Contains(spec.path, "{app_id}") || strings.Contains(spec.path, "{campaign_id}") {
			need(404, "cross-app or missing id")
		}

		if spec.method == "POST" {
			if p := hasParam(f, "header", "Idempotency-Key"); p == nil {
				t.Errorf("%s: no Idempotency-Key header parameter", id)
			}
			for _, pr := range f.op.Parameters {
				if pr.Value.Name == "Idempotency-Key" && pr.Ref != "#/components/parameters/IdempotencyKey" {
					t.Errorf("%s: Idempotency-Key is not the shared component", id)
				}
			}
			need(409, "idempotency_key_in_use")
			need(422, "idempotency_key_reused")
			need(400, "malformed request")
		}

		if spec.body {
			rb := f.op.RequestBody
			if rb == nil || rb.Value.Required == optionalBody[id] {
				t.Errorf("%s: request body missing, or required when optional (or the reverse)", id)
			} else {
				mt := rb.Value.Content.Get("application/json")
				if mt == nil || len(rb.Value.Content) != 1 {
					t.Errorf("%s: request body must be application/json only", id)
				} else if ap := mt.Schema.Value.AdditionalProperties.Has; ap == nil || *ap {
					t.Errorf("%s: request body schema must set additionalProperties: false", id)
				}
			}
			need(413, "body too large")
			need(415, "wrong content type")
			need(400, "malformed JSON")
			need(422, "validation")
		} else if f.op.RequestBody != nil {
			t.Errorf("%s takes no body but documents one", id)
		}

		hasQuery := false
		for _, ps := range []openapi3.Parameters{f.op.Parameters, f.pathItem.Parameters} {
			for _, p := range ps {
				if p.Value.In == "query" {
					hasQuery = true
				}
			}
		}
		if hasQuery {
			need(422, "invalid query parameter")
		}
	}
}

// The status codes the API document lists, with their bodies.
func TestSeedStatusCodes(t *testing.T) {
	doc := load(t)
	ops := allOperations(t, doc)
	cases := []struct {
		op     string
		status int
		schema string // component schema of the body, "" for Error
	}{
		{"register_app", 201, "RegisterAppResponse"},
		{"register_app", 422, ""},
		{"get_score", 200, "Score"},
		{"get_score", 404, ""},
		{"get_rate_card", 200, "RateCard"},
		{"get_network_stats", 200, "NetworkStats"},
		{"top_up", 402, "X402Challenge"},
		{"create_campaign", 201, "Campaign"},
		{"pause_campaign", 200, "Campaign"},
		{"resume_campaign", 200, "Campaign"},
		{"get_ledger", 200, "LedgerPage"},
		{"get_stats", 200, "Stats"},
		{"get_daily_stats", 200, "DailyStatsPage"},
		{"request_payout", 200, "PayoutResponse"},
		{"start_payout_onboarding", 200, "PayoutOnboarding"},
		{"get_payout_account", 200, "PayoutAccountStatus"},
		{"request_payout", 409, ""},
		{"get_x402_descriptor", 200, "X402Descriptor"},
	}
	for _, c := range cases {
		r := ops[c.op].op.Responses.Status(c.status)
		if r == nil {
			t.Errorf("%s: no %d response", c.op, c.status)
			continue
		}
		mt := r.Value.Content.Get("application/json")
		if mt == nil {
			t.Errorf("%s %d: no application/json body", c.op, c.status)
			continue
		}
		want := "#/components/schemas/" + c.schema
		if c.schema == "" {
			want = "#/components/schemas/Error"
		}
		got := mt.Schema.Ref
		if got == "" && len(mt.Schema.Value.AllOf) > 0 {
			got = mt.Schema.Value.AllOf[0].Ref // Campaign narrowed by status
		}
		if got != want {
			t.Errorf("%s %d: body %q, want %q", c.op, c.status, got, want)
		}
	}

	// Top-up 200: checkout_url, or the topup ledger line after a settled x402 payment.
	r := ops["top_up"].op.Responses.Status(200)
	one := r.Value.Content.Get("application/json").Schema.Value.OneOf
	if len(one) != 2 || one[0].Ref != "#/components/schemas/TopUpResponse" || one[1].Ref != "#/components/schemas/LedgerLine" {
		t.Errorf("top_up 200: want oneOf [TopUpResponse, LedgerLine]")
	}

	// Integration guide: text/markdown string.
	g := ops["get_integration_guide"].op.Responses.Status(200)
	if mt := g.Value.Content.Get("text/markdown"); mt == nil || !mt.Schema.Value.Type.Is("string") || len(g.Value.Content) != 1 {
		t.Error("get_integration_guide 200 must be text/markdown with a string schema")
	}

	// Query parameters.
	ledger := ops["get_ledger"]
	for name, check := range map[string]func(*openapi3.Schema) bool{
		"from":   func(s *openapi3.Schema) bool { return s.Format == "date" },
		"to":     func(s *openapi3.Schema) bool { return s.Format == "date" },
		"cursor": func(s *openapi3.Schema) bool { return s.Type.Is("string") },
		"limit": func(s *openapi3.Schema) bool {
			return s.Type.Is("integer") && s.Min != nil && *s.Min == 1 && s.Max != nil && *s.Max == 1000 && s.Default == float64(100)
		},
	} {
		p := hasParam(ledger, "query", name)
		if p == nil || p.Required || !check(p.Schema.Value) {
			t.Errorf("get_ledger: query parameter %q missing or wrong", name)
		}
	}
	p := hasParam(ops["get_stats"], "query", "period")
	if p == nil || p.Required {
		t.Fatal("get_stats: optional query parameter period missing")
	}
	var enum []string
	for _, v := range p.Schema.Value.Enum {
		enum = append(enum, v.(string))
	}
	if !slices.Equal(enum, []string{"last_7_days", "last_30_days", "last_90_days"}) {
		t.Errorf("get_stats period enum = %v", enum)
	}

	// Limits.
	sch := doc.Components.Schemas
	for _, c := range []struct {
		schema, prop string
		min          float64
	}{
		{"TopUpRequest", "amount_cents", 5000},
		{"CreateCampaignRequest", "daily_budget_cents", 1000},
	} {
		m := sch[c.schema].Value.Properties[c.prop].Value.Min
		if m == nil || *m != c.min {
			t.Errorf("%s.%s minimum = %v, want %v", c.schema, c.prop, m, c.min)
		}
	}
}

// TestRouting checks that the document's paths resolve against its server
// url "/" as the router will mount them.
func TestRouting(t *testing.T) {
	doc := load(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	for id, spec := range operations {
		path := strings.NewReplacer("{app_id}", "app_123", "{campaign_id}", "cmp_456").Replace(spec.path)
		req := httptest.NewRequest(spec.method, "http://api.example"+path, nil)
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Errorf("%s %s: %v", spec.method, path, err)
			continue
		}
		if route.Operation.OperationID != id {
			t.Errorf("%s %s routes to %s, want %s", spec.method, path, route.Operation.OperationID, id)
		}
		if strings.Contains(spec.path, "{app_id}") && params["app_id"] != "app_123" {
			t.Errorf("%s: app_id = %q", id, params["app_id"])
		}
	}
}

// --- the SDK wire types and the schemas describe the same JSON ---

var wireTypes = map[string]any{
	"RegisterAppRequest":    xpromo.RegisterAppRequest{},
	"RegisterAppResponse":   xpromo.RegisterAppResponse{},
	"Score":                 xpromo.Score{},
	"Gate":                  xpromo.Gate{},
	"Reputation":            xpromo.Reputation{},
	"Behavior":              xpromo.Behavior{},
	"CreateCampaignRequest": xpromo.CreateCampaignRequest{},
	"Campaign":              xpromo.Campaign{},
	"LedgerLine":            xpromo.LedgerLine{},
	"LedgerPage":            xpromo.LedgerPage{},
	"Stats":                 xpromo.Stats{},
	"DailyStatsPage":        xpromo.DailyStatsPage{},
	"DayStats":              xpromo.DayStats{},
	"AdvertiserDayStats":    xpromo.AdvertiserDayStats{},
	"PublisherDayStats":     xpromo.PublisherDayStats{},
	"RateCard":              xpromo.RateCard{},
	"RateCardCategory":      xpromo.RateCardCategory{},
	"NetworkStats":          xpromo.NetworkStats{},
	"TopUpRequest":          xpromo.TopUpRequest{},
	"TopUpResponse":         xpromo.TopUpResponse{},
	"X402Challenge":         xpromo.X402Challenge{},
	"X402Accept":            xpromo.X402Accept{},
	"PayoutResponse":        xpromo.PayoutResponse{},
	"PayoutOnboarding":      xpromo.PayoutOnboarding{},
	"PayoutAccountStatus":   xpromo.PayoutAccountStatus{},
	"Error":                 xpromo.ErrorResponse{},
	"KeyRotation":           xpromo.KeyRotation{},
	"DashboardSignInLink":   xpromo.DashboardSignInLink{},
	"Job":                   xpromo.Job{},
	"JobError":              xpromo.JobError{},
	"ContactVerifyRequest":  xpromo.ContactVerifyRequest{},
	"ContactVerification":   xpromo.ContactVerification{},
	"ContactChallenge":      xpromo.ContactChallenge{},
	"AdminActionRequest":    xpromo.AdminActionRequest{},
	"AdminApp":              xpromo.AdminApp{},
	"App":                   xpromo.App{},
	"AppUpdate":             xpromo.AppUpdate{},
	"UpdateAppRequest":      xpromo.UpdateAppRequest{},
	"CampaignPage":          xpromo.CampaignPage{},
	"Balance":               xpromo.Balance{},
	"Thresholds":            xpromo.Thresholds{},
	"Threshold":             xpromo.Threshold{},
	"Payout":                xpromo.Payout{},
	"PayoutPage":            xpromo.PayoutPage{},
	"ChainPage":             xpromo.ChainPage{},
	"APIKeyInfo":            xpromo.APIKeyInfo{},
	"APIKeyList":            xpromo.APIKeyList{},
	"AdminAppPage":          xpromo.AdminAppPage{},
	"StatusChange":          xpromo.StatusChange{},
	"AuditEntry":            xpromo.AuditEntry{},
	"AuditPage":             xpromo.AuditPage{},
	// Attribution.
	"RegisterSDKKeyRequest": xpromo.RegisterSDKKeyRequest{},
	"SDKKey":                xpromo.SDKKey{},
	"SDKKeyList":            xpromo.SDKKeyList{},
	"FillRequest":           xpromo.FillRequest{},
	"FillResponse":          xpromo.FillResponse{},
	"Creative":              xpromo.Creative{},
	"Offer":                 attribution.Offer{},
	"ClickRequest":          xpromo.ClickRequest{},
	"ClickResponse":         xpromo.ClickResponse{},
	"InstallRequest":        xpromo.InstallRequest{},
	"InstallResponse":       xpromo.InstallResponse{},
	"HeartbeatRequest":      xpromo.HeartbeatRequest{},
	"HeartbeatResponse":     xpromo.HeartbeatResponse{},
	"Chain":                 xpromo.Chain{},
	"ClockState":            xpromo.ClockState{},
	"SweepResult":           xpromo.SweepResult{},
	// Webhooks.
	"Event":                        xpromo.Event{},
	"EventPage":                    xpromo.EventPage{},
	"WebhookEndpoint":              xpromo.WebhookEndpoint{},
	"WebhookEndpointList":          xpromo.WebhookEndpointList{},
	"CreateWebhookEndpointRequest": xpromo.CreateWebhookEndpointRequest{},
	"UpdateWebhookEndpointRequest": xpromo.UpdateWebhookEndpointRequest{},
	"WebhookAttempt":               xpromo.WebhookAttempt{},
	"WebhookAttemptPage":           xpromo.WebhookAttemptPage{},
	"RedeliverRequest":             xpromo.RedeliverRequest{},
	"WebhookDelivery":              xpromo.WebhookDelivery{},
	"ChainEventData":               xpromo.ChainEventData{},
	"FraudEventData":               xpromo.FraudEventData{},
	"PayoutEventData":              xpromo.PayoutEventData{},
	"ScoreEventData":               xpromo.ScoreEventData{},
	// Earn mode and complaints.
	"SetEarnModeRequest":      xpromo.SetEarnModeRequest{},
	"EarnModeState":           xpromo.EarnModeState{},
	"CreateComplaintRequest":  xpromo.CreateComplaintRequest{},
	"Complaint":               xpromo.Complaint{},
	"ComplaintPage":           xpromo.ComplaintPage{},
	"ResolveComplaintRequest": xpromo.ResolveComplaintRequest{},
}

func schemaNullable(s *openapi3.Schema) bool {
	if s.Type.IncludesNull() {
		return true
	}
	for _, alt := range append(append(openapi3.SchemaRefs{}, s.OneOf...), s.AnyOf...) {
		if alt.Value.Type.IncludesNull() {
			return true
		}
	}
	return false
}

// compareStruct checks that the JSON names of typ's fields are the schema's
// properties, that a field is required exactly when it is not omitempty, and
// that it is nullable exactly when it is a pointer that is not omitempty.
func compareStruct(t *testing.T, name string, typ reflect.Type, s *openapi3.Schema) {
	t.Helper()
	goProps := map[string]bool{}
	for _, f := range jsonFields(typ) {
		tag := f.Tag.Get("json")
		jname, opts, _ := strings.Cut(tag, ",")
		if jname == "" || jname == "-" {
			t.Errorf("%s.%s has no json name", name, f.Name)
			continue
		}
		goProps[jname] = true
		prop := s.Properties[jname]
		if prop == nil {
			t.Errorf("%s: Go field %s (%q) is not in the schema", name, f.Name, jname)
			continue
		}
		omitempty := strings.Contains(opts, "omitempty")
		if required := slices.Contains(s.Required, jname); required == omitempty {
			t.Errorf("%s.%s: required=%v but omitempty=%v", name, jname, required, omitempty)
		}
		nullable := f.Type.Kind() == reflect.Pointer && !omitempty
		if got := schemaNullable(prop.Value); got != nullable {
			t.Errorf("%s.%s: schema nullable=%v, Go nullable=%v", name, jname, got, nullable)
		}
		// Nested structs described inline (ErrorBody, X402Extra).
		ft := f.Type
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Time]() && prop.Ref == "" {
			compareStruct(t, name+"."+jname, ft, prop.Value)
		}
	}
	for p := range s.Properties {
		if !goProps[p] {
			t.Errorf("%s: schema property %q has no Go field", name, p)
		}
	}
}

// jsonFields are the fields encoding/json encodes of typ: those of an
// embedded struct without a json name (AdminApp's App) in its place.
func jsonFields(typ reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		out = append(out, f)
	}
	return out
}

func TestSchemasMatchSDKTypes(t *testing.T) {
	doc := load(t)
	for name, v := range wireTypes {
		ref := doc.Components.Schemas[name]
		if ref == nil {
			t.Errorf("schema %s missing", name)
			continue
		}
		compareStruct(t, name, reflect.TypeOf(v), ref.Value)
	}
	// Every object schema is covered (X402Descriptor has no SDK type yet;
	// UpdateCampaignRequest's Go fields are not its JSON: it encodes itself,
	// FloorPrice as "max_bid_cents": null, so TestSchemasAcceptSDKValues
	// checks what it sends instead).
	var missing []string
	for name, ref := range doc.Components.Schemas {
		if _, ok := wireTypes[name]; !ok && ref.Value.Type.Is("object") && name != "X402Descriptor" && name != "UpdateCampaignRequest" {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("object schemas without an SDK type in this test: %v", missing)
	}
	// Enums.
	for name, values := range map[string][]string{
		"Platform":        {string(xpromo.PlatformMac), string(xpromo.PlatformWin)},
		"AppStatus":       {"pending", "approved", "throttled", "live", "suspended", "rejected"},
		"CampaignStatus":  {"throttled", "active", "paused"},
		"LineType":        {"topup", "earn", "charge", "escrow_hold", "escrow_release", "clawback", "payout", "adjustment"},
		"Period":          {"last_7_days", "last_30_days", "last_90_days"},
		"EarnMode":        {string(xpromo.EarnModeCash), string(xpromo.EarnModeCredits)},
		"ComplaintReason": {string(xpromo.ComplaintMisleadingAd), string(xpromo.ComplaintMalware), string(xpromo.ComplaintBrokenInstall), string(xpromo.ComplaintFraud), string(xpromo.ComplaintOther)},
		"ComplaintStatus": {string(xpromo.ComplaintOpen), string(xpromo.ComplaintUpheld), string(xpromo.ComplaintDismissed)},
	} {
		var got []string
		for _, v := range doc.Components.Schemas[name].Value.Enum {
			got = append(got, v.(string))
		}
		if !slices.Equal(got, values) {
			t.Errorf("%s enum = %v, want %v", name, got, values)
		}
	}
}

// Values the SDK produces validate against the schemas (JSON Schema 2020-12,
// as openapi3filter applies to a 3.1 document), and values the API forbids
// do not.
func TestSchemasAcceptSDKValues(t *testing.T) {
	doc := load(t)
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	bid := int64(250)
	budget := int64(2000)
	note := "operator correction"
	cursor := "c_1"

	valid := []struct {
		schema string
		value  any
	}{
		{"RegisterAppRequest", xpromo.RegisterAppRequest{Name: "Snip", Platform: xpromo.PlatformWin, BundleID: "Example.Snip",
			Domain: "example.com", DownloadURL: "https://example.com/snip.msix", ContactEmail: "dev@example.com"}},
		{"RegisterAppResponse", xpromo.RegisterAppResponse{AppID: "app_1", APIKey: "xp_test_x", Status: xpromo.AppStatusPending, ScoringJobID: "job_1"}},
		{"Score", xpromo.Score{Status: xpromo.AppStatusPending, NextReviewAt: now}},
		{"Score", xpromo.Score{Status: xpromo.AppStatusLive, Behavior: &xpromo.Behavior{Retention48h: 0.8}, Reasons: []string{"x"}, NextReviewAt: now}},
		{"CreateCampaignRequest", xpromo.CreateCampaignRequest{AppID: "app_1", Categories: []string{"productivity"}, DailyBudgetCents: 1000}},
		{"CreateCampaignRequest", xpromo.CreateCampaignRequest{AppID: "app_1", Categories: []string{"productivity"}, DailyBudgetCents: 1000, MaxBidCents: &bid}},
		{"Campaign", xpromo.Campaign{CampaignID: "c", DailyBudgetCents: 1000, Status: xpromo.CampaignStatusThrottled, FloorCents: 100,
			AppID: "app_1", Categories: []string{"productivity"}, CreatedAt: now, UpdatedAt: now}},
		{"Campaign", xpromo.Campaign{CampaignID: "c", DailyBudgetCents: 1000, Status: xpromo.CampaignStatusActive, FloorCents: 100, MaxBidCents: &bid,
			AppID: "app_1", Categories: []string{"productivity", "games"}, SpentTodayCents: 1200, CreatedAt: now, UpdatedAt: now}},
		{"CampaignPage", xpromo.CampaignPage{}},
		{"Balance", xpromo.Balance{AppID: "app_1", Currency: "EUR", WalletCents: -5, CreditsCents: -5, MinPayoutCents: 5000, AsOf: now}},
		{"PayoutPage", xpromo.PayoutPage{}},
		{"Thresholds", xpromo.Thresholds{AppID: "app_1", Status: xpromo.AppStatusThrottled, AsOf: now, Thresholds: []xpromo.Threshold{
			{Name: xpromo.ThresholdLiveRetention, Kind: xpromo.ThresholdKindLive, Comparison: "at_least", Bar: 0.4, Value: 0.5, Sample: &bid,
				WindowHours: &bid, Since: &now, State: xpromo.ThresholdMet, Reason: "cleared_with_good_retention"},
			{Name: xpromo.ThresholdCanaryClicks, Kind: xpromo.ThresholdKindSuspension, Comparison: "at_least", Bar: 1,
				State: xpromo.ThresholdWithin, Reason: "canary_failed"}}}},
		{"Payout", xpromo.Payout{PayoutID: "po_1", AmountCents: 5000, Currency: "EUR", Status: xpromo.PayoutSent, Destination: "acct_1", CreatedAt: now, UpdatedAt: now}},
		{"ChainPage", xpromo.ChainPage{}},
		{"APIKeyList", xpromo.APIKeyList{Keys: []xpromo.APIKeyInfo{{Prefix: "xp_test_abcd", CreatedAt: now, ExpiresAt: &now}}}},
		{"AdminAppPage", xpromo.AdminAppPage{}},
		{"UpdateCampaignRequest", xpromo.UpdateCampaignRequest{DailyBudgetCents: &budget}},
		{"UpdateCampaignRequest", xpromo.UpdateCampaignRequest{FloorPrice: true, Categories: []string{"games"}}},
		{"UpdateCampaignRequest", xpromo.UpdateCampaignRequest{MaxBidCents: &bid}},
		{"LedgerLine", xpromo.LedgerLine{ID: "l", Ts: now, Type: xpromo.LineAdjustment, AmountCents: -1, Note: &note}},
		{"LedgerPage", xpromo.LedgerPage{}},
		{"LedgerPage", xpromo.LedgerPage{Lines: []xpromo.LedgerLine{{ID: "l", Ts: now, Type: xpromo.LineTopup, AmountCents: 5000, BalanceAfter: 5000}}, NextCursor: &cursor}},
		{"Stats", xpromo.Stats{FraudRejected: map[string]int64{"fraud_token_reused": 1}}},
		{"Stats", xpromo.Stats{}},
		{"RateCard", xpromo.RateCard{Currency: xpromo.Currency, TakeRate: xpromo.TakeRate, CreditBonus: xpromo.CreditBonus,
			ReservedFloorShare: xpromo.ReservedFloorShare, PricingModel: xpromo.PricingModel,
			Categories: []xpromo.RateCardCategory{{Key: "k", Label: "K", FloorCentsMin: 1, FloorCentsMax: 2}}}},
		{"NetworkStats", xpromo.NetworkStats{Period: "last_30_days"}},
		{"TopUpRequest", xpromo.TopUpRequest{AmountCents: 5000}},
		{"TopUpResponse", xpromo.TopUpResponse{CheckoutURL: "https://checkout.example/x"}},
		{"X402Challenge", xpromo.X402Challenge{X402Version: 1, Resource: "https://api.example/v1/apps/a/top-up", Error: "X-PAYMENT header is required",
			Accepts: []xpromo.X402Accept{{Scheme: "exact", Network: "base-sepolia", MaxAmountRequired: "54000000",
				Resource: "https://api.example/v1/apps/a/top-up", Description: "top-up", MimeType: "application/json",
				PayTo: "0x1111111111111111111111111111111111111111", MaxTimeoutSeconds: 300,
				Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", Extra: xpromo.X402Extra{Name: "USDC", Version: "2"}}}}},
		{"PayoutResponse", xpromo.PayoutResponse{TransferID: "tr_1", AmountCents: 5000, PayoutID: "po_1"}},
		{"PayoutOnboarding", xpromo.PayoutOnboarding{AccountID: "acct_1", OnboardingURL: "https://connect.stripe.com/setup/e/acct_1"}},
		{"PayoutAccountStatus", xpromo.PayoutAccountStatus{AccountID: "acct_1", RequirementsDue: []string{"external_account"}}},
		{"RegisterAppRequest", xpromo.RegisterAppRequest{Name: "Snip", Platform: xpromo.PlatformMac, BundleID: "com.example.snip",
			Domain: "example.com", DownloadURL: "https://example.com/Snip.zip", ContactEmail: "dev@example.com", Category: "developer-tools"}},
		{"KeyRotation", xpromo.KeyRotation{APIKey: "xp_test_x", PreviousKeyExpiresAt: now}},
		{"DashboardSignInLink", xpromo.DashboardSignInLink{URL: "https://xpromo.example/dashboard/sign-in?link=abc", ExpiresAt: now}},
		{"Job", xpromo.Job{JobID: "job_1", Kind: xpromo.JobGate, Status: xpromo.JobQueued, CreatedAt: now, RunAfter: now}},
		{"Job", xpromo.Job{JobID: "job_1", Kind: xpromo.JobScoring, Status: xpromo.JobSucceeded, CreatedAt: now, RunAfter: now, FinishedAt: &now}},
		{"Job", xpromo.Job{JobID: "job_1", Kind: xpromo.JobGate, Status: xpromo.JobQueued, CreatedAt: now, RunAfter: now, Attempts: 2,
			LastError: &xpromo.JobError{Code: "job_timeout", Message: "the job ran out of its time budget; it will be retried"}}},
		{"AdminActionRequest", xpromo.AdminActionRequest{}},
		{"AdminApp", xpromo.AdminApp{App: xpromo.App{AppID: "app_1", Name: "Snip", Platform: xpromo.PlatformWin, BundleID: "a.b", Domain: "example.com",
			DownloadURL: "https://example.com/s.msix", ContactEmail: "dev@example.com", Status: xpromo.AppStatusPending, EarnMode: "cash", CreatedAt: now, UpdatedAt: now}}},
		{"AdminApp", xpromo.AdminApp{App: xpromo.App{AppID: "app_1", Name: "Snip", Platform: xpromo.PlatformMac, BundleID: "a.b", Domain: "example.com",
			DownloadURL: "https://example.com/s.zip", ContactEmail: "dev@example.com", Category: &cursor, Status: xpromo.AppStatusApproved, EarnMode: "credits", CreatedAt: now, UpdatedAt: now},
			StatusHistory: []xpromo.StatusChange{{To: xpromo.AppStatusPending, Reason: "registered", Actor: "system", At: now}}}},
		{"App", xpromo.App{AppID: "app_1", Name: "Snip", Platform: xpromo.PlatformWin, BundleID: "a.b", Domain: "example.com",
			DownloadURL: "https://example.com/s.msix", ContactEmail: "dev@example.com", AppcastURL: xpromo.String("https://example.com/appcast.xml"),
			Status: xpromo.AppStatusSuspended, EarnMode: "cash", CreatedAt: now, UpdatedAt: now}},
		{"AppUpdate", xpromo.AppUpdate{App: xpromo.App{AppID: "app_1", Name: "Snip", Platform: xpromo.PlatformWin, BundleID: "a.b", Domain: "example.com",
			DownloadURL: "https://example.com/s.msix", ContactEmail: "dev@example.com", Status: xpromo.AppStatusLive, EarnMode: "cash", CreatedAt: now, UpdatedAt: now},
			ScoringJobID: xpromo.String("job_1")}},
		{"UpdateAppRequest", xpromo.UpdateAppRequest{AppcastURL: xpromo.String("https://example.com/appcast.xml")}},
		{"UpdateAppRequest", xpromo.UpdateAppRequest{}}, // null: remove it
		{"AuditPage", xpromo.AuditPage{}},
		{"AuditPage", xpromo.AuditPage{Entries: []xpromo.AuditEntry{{ID: "aud_1", Actor: "admin", Action: "app.approve", Subject: "app_1", Detail: json.RawMessage(`{"to":"approved"}`), At: now}}}},
		{"FillRequest", xpromo.FillRequest{AppID: "app_1", Slot: xpromo.SlotAboutWindow, Platform: xpromo.PlatformMac, Signature: "h.p.s"}},
		{"FillRequest", xpromo.FillRequest{AppID: "app_1", Slot: xpromo.SlotBeforeQuit, Platform: xpromo.PlatformWin, DeviceID: "dev_Zk3pV0m2", Locale: "zh-Hant-TW", Signature: "h.p.s"}},
		{"Error", xpromo.ErrorResponse{Error: xpromo.ErrorBody{Code: "not_found", Message: "m"}}},
		{"Error", xpromo.ErrorResponse{Error: xpromo.ErrorBody{Code: "rate_limited", Message: "m", RetryAfter: &now}}},
	}
	for _, c := range valid {
		if err := visit(t, doc, c.schema, c.value); err != nil {
			t.Errorf("%s rejects the SDK value %+v: %v", c.schema, c.value, err)
		}
	}

	invalid := []struct {
		schema, json, why string
	}{
		{"RegisterAppRequest", `{"name":"a","platform":"linux","bundle_id":"b","domain":"d","download_url":"https://x/y","contact_email":"a@b.c"}`, "platform enum"},
		{"RegisterAppRequest", `{"name":"a","platform":"mac","bundle_id":"b","domain":"d","download_url":"https://x/y","contact_email":"a@b.c","extra":1}`, "unknown field"},
		{"RegisterAppRequest", `{"name":"a","platform":"mac","bundle_id":"b","domain":"d","download_url":"https://x/y"}`, "missing contact_email"},
		{"RegisterAppRequest", `{"name":"a","platform":"mac","bundle_id":"b","domain":"d","download_url":"https://x/y","contact_email":"a@b.c","category":"Dev Tools"}`, "category not a key"},
		{"Job", `{"job_id":"j","kind":"email","status":"queued","created_at":"2026-11-21T10:00:00Z","run_after":"2026-11-21T10:00:00Z","finished_at":null,"attempts":0,"last_error":null}`, "kind enum"},
		{"Job", `{"job_id":"j","kind":"gate","status":"queued","created_at":"2026-11-21T10:00:00Z","run_after":"2026-11-21T10:00:00Z","finished_at":null,"attempts":1,"last_error":{"code":"Not A Code","message":""}}`, "last_error code pattern"},
		{"AdminActionRequest", `{"reason":"x","note":"y"}`, "unknown field"},
		{"UpdateAppRequest", `{}`, "appcast_url is required (null removes it)"},
		{"UpdateAppRequest", `{"appcast_url":"https://example.com/a.xml","bundle_id":"com.example.b"}`, "a registration field"},
		{"UpdateAppRequest", `{"appcast_url":""}`, "an empty URL"},
		{"TopUpRequest", `{"amount_cents":4999}`, "below 5000"},
		{"CreateCampaignRequest", `{"app_id":"a","categories":["c"],"daily_budget_cents":999}`, "below 1000"},
		{"CreateCampaignRequest", `{"app_id":"a","categories":[],"daily_budget_cents":1000}`, "no category"},
		{"Campaign", `{"campaign_id":"c","daily_budget_cents":1000,"status":"throttled","floor_cents":1}`, "max_bid_cents must be present (null)"},
		{"LedgerLine", `{"id":"l","ts":"2026-11-21T10:00:00Z","type":"refund","amount_cents":1,"counterparty_app_id":null,"event_chain_id":null,"balance_after":1,"note":null}`, "type enum"},
		{"LedgerPage", `{"lines":null}`, "lines never null"},
		{"Score", `{"status":"pending","gate":{"signed":true,"malware_clean":true,"domain_age_ok":true,"contact_verified":true,"bundle_match":true},"reputation":{"total":101,"ai_visibility":0,"cadence":0,"reviews":0,"coherence":0},"behavior":null,"reasons":[],"next_review_at":"2026-11-21T10:00:00Z"}`, "reputation over 100"},
		{"RateCard", `{"currency":"USD","take_rate":0.3,"credit_bonus":1.2,"categories":[],"reserved_floor_share":0.3,"pricing_model":"floor_plus_second_price"}`, "currency constant"},
		{"X402Challenge", `{"x402Version":2,"accepts":[],"resource":"https://x/y","error":""}`, "version 1 only"},
		{"Error", `{"error":{"code":"x","message":"m"}}`, "retry_after required"},
		{"FillRequest", `{"app_id":"app_1","slot":"about_window","platform":"mac"}`, "signature required"},
		{"FillRequest", `{"app_id":"app 1","slot":"about_window","platform":"mac","signature":"s"}`, "app_id not an identifier"},
		{"FillRequest", `{"app_id":"app_1","slot":"about_window","platform":"mac","locale":"de_CH","signature":"s"}`, "locale not a tag"},
	}
	for _, c := range invalid {
		var v any
		if err := json.Unmarshal([]byte(c.json), &v); err != nil {
			t.Fatalf("bad test JSON for %s: %v", c.why, err)
		}
		if err := doc.Components.Schemas[c.schema].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err == nil {
			t.Errorf("%s accepts a value it must reject (%s): %s", c.schema, c.why, c.json)
		}
	}

	// The narrowed 201 of create_campaign rejects a campaign not throttled.
	create := doc.Paths.Find("/v1/campaigns").Post.Responses.Status(201).Value.Content.Get("application/json").Schema.Value
	active := map[string]any{"campaign_id": "c", "daily_budget_cents": 1000.0, "status": "active", "status_reason": nil, "floor_cents": 1.0, "max_bid_cents": nil,
		"app_id": "app_1", "categories": []any{"productivity"}, "spent_today_cents": 0.0, "created_at": "2026-11-21T10:00:00Z", "updated_at": "2026-11-21T10:00:00Z"}
	if err := create.VisitJSON(active, openapi3.EnableJSONSchema2020()); err == nil {
		t.Error("create_campaign 201 accepts status active")
	}
	active["status"] = "throttled"
	if err := create.VisitJSON(active, openapi3.EnableJSONSchema2020()); err != nil {
		t.Errorf("create_campaign 201 rejects a throttled campaign: %v", err)
	}
}

func visit(t *testing.T, doc *openapi3.T, schema string, value any) error {
	t.Helper()
	b, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.NewDecoder(io.MultiReader(bytes.NewReader(b))).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return doc.Components.Schemas[schema].Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}
