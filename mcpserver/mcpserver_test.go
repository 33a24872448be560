package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// These tests need no xpromo server: they check what the MCP server says
// about itself and what it refuses before calling the API. The API is a
// closed port, so a call that does reach it answers `unavailable`. The
// calls against the real server (parity with REST, errors from the API,
// keys, the stdio binary, /mcp over HTTP) are in server/wire/mcp_test.go.

// closedURL is the URL of a port nothing listens on.
func closedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func newTestServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	c := xpromo.NewClient(closedURL(t), xpromo.WithRetries(0))
	return New(c, opts...)
}

func connect(t testing.TB, s *Server) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(s.MCPServer())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(t testing.TB, c *client.Client, name string, args any) *mcp.CallToolResult {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// errorOf returns the error body of a tool error, failing the test if res
// is not one in the documented shape.
func errorOf(t testing.TB, res *mcp.CallToolResult) errorBody {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error, got %+v", res)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var te toolError
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&te); err != nil {
		t.Fatalf("structuredContent %s is not {error: {code, message, retry_after}}: %v", raw, err)
	}
	if te.Error.Code == "" || te.Error.Message == "" {
		t.Fatalf("error without code or message: %s", raw)
	}
	var text string
	if len(res.Content) > 0 {
		if tc, ok := mcp.AsTextContent(res.Content[0]); ok {
			text = tc.Text
		}
	}
	if !json.Valid([]byte(text)) || !strings.Contains(text, te.Error.Code) {
		t.Errorf("the text content should be the error as JSON, got %q", text)
	}
	return te.Error
}

func TestToolsList(t *testing.T) {
	c := connect(t, newTestServer(t))
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(sorted(names), sorted(ToolNames)) || len(names) != 20 {
		t.Fatalf("tools = %v, want exactly %v", names, ToolNames)
	}

	// The annotations, decided per tool (see hints).
	want := map[string][4]bool{ // readOnly, destructive, idempotent, openWorld
		"register_app":          {false, false, false, true},
		"get_score":             {true, false, true, false},
		"get_rate_card":         {true, false, true, false},
		"get_network_stats":     {true, false, true, false},
		"get_integration_guide": {true, false, true, false},
		"top_up":                {false, false, false, true},
		"create_campaign":       {false, false, false, false},
		"pause_campaign":        {false, false, true, false},
		"resume_campaign":       {false, false, true, false},
		"get_ledger":            {true, false, true, false},
		"get_stats":             {true, false, true, false},
		"request_payout":        {false, true, false, true},
		// Webhooks: redelivery makes the server POST to the receiver.
		"create_webhook_endpoint": {false, false, false, false},
		"list_webhook_endpoints":  {true, false, true, false},
		"update_webhook_endpoint": {false, false, true, false},
		"delete_webhook_endpoint": {false, true, false, false},
		"rotate_webhook_secret":   {false, false, false, false},
		"list_webhook_attempts":   {true, false, true, false},
		"redeliver_webhook":       {false, false, false, true},
		"list_events":             {true, false, true, false},
	}
	for _, tl := range list.Tools {
		a := tl.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: every annotation must be set: %+v", tl.Name, a)
			continue
		}
		got := [4]bool{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint}
		if got != want[tl.Name] {
			t.Errorf("%s: annotations (readOnly, destructive, idempotent, openWorld) = %v, want %v", tl.Name, got, want[tl.Name])
		}
		if tl.Title == "" || a.Title != tl.Title || tl.Description == "" {
			t.Errorf("%s: title %q, annotation title %q, description %q", tl.Name, tl.Title, a.Title, tl.Description)
		}

		// Schemas as the client sees them.
		in := schemaOf(t, tl.RawInputSchema, tl.InputSchema)
		if in["type"] != "object" || in["additionalProperties"] != false {
			t.Errorf("%s: input schema must be a closed object: %v", tl.Name, in)
		}
		out := schemaOf(t, tl.RawOutputSchema, tl.OutputSchema)
		if out["type"] != "object" {
			t.Errorf("%s: output schema must be an object: %v", tl.Name, out)
		}
	}
}

func schemaOf(t *testing.T, raw json.RawMessage, structured any) map[string]any {
	t.Helper()
	b := []byte(raw)
	if len(b) == 0 {
		var err error
		if b, err = json.Marshal(structured); err != nil {
			t.Fatal(err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// The checker that names refused arguments understands every keyword the
// input schemas use.
func TestInputSchemaKeywordsAreChecked(t *testing.T) {
	var walk func(tool string, s schema)
	walk = func(tool string, s schema) {
		for k, v := range s {
			if !slices.Contains(checkedKeywords, k) {
				t.Errorf("%s: input schema keyword %q is not understood by check()", tool, k)
			}
			if sub, ok := v.(schema); ok {
				walk(tool, sub)
			}
		}
	}
	for _, tl := range allTools() {
		for _, p := range tl.params {
			walk(tl.name, p.schema)
		}
	}
}

// Arguments the input schema refuses come back as tool errors carrying the
// code the REST API gives for the same mistake; the API is not called.
func TestRefusedArguments(t *testing.T) {
	c := connect(t, newTestServer(t))
	campaign := func(k string, v any) map[string]any {
		m := map[string]any{"app_id": "app_1", "categories": []any{"productivity"}, "daily_budget_cents": 5000}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	register := func(k string, v any) map[string]any {
		m := map[string]any{"name": "Clipboard Pro", "platform": "mac", "bundle_id": "com.example.clip",
			"domain": "example.com", "download_url": "https://example.com/c.dmg", "contact_email": "a@example.com"}
		m[k] = v
		return m
	}
	cases := []struct {
		tool string
		args any
		code string
	}{
		{"create_campaign", campaign("daily_budget_cents", 10), "below_minimum"},
		{"create_campaign", campaign("daily_budget_cents", "5000"), "invalid_type"},
		{"create_campaign", campaign("daily_budget_cents", 1000.5), "invalid_type"},
		{"create_campaign", campaign("daily_budget_cents", nil), "missing_field"},
		{"create_campaign", campaign("categories", []any{}), "invalid_category"},
		{"create_campaign", campaign("categories", []any{""}), "invalid_category"},
		{"create_campaign", campaign("categories", []any{strings.Repeat("k", 65)}), "invalid_category"},
		{"create_campaign", campaign("categories", manyCategories(201)), "too_long"},
		{"create_campaign", campaign("daily_budget_cents", 10_000_000_001), "invalid_amount"},
		{"create_campaign", campaign("max_bid_cents", 0), "bid_below_floor"},
		{"create_campaign", campaign("app_id", strings.Repeat("a", 65)), "too_long"},
		{"register_app", register("name", strings.Repeat("n", 201)), "invalid_name"},
		{"register_app", register("category", ""), "invalid_category"},
		{"top_up", map[string]any{"app_id": "app_1", "amount_cents": 10_000_001}, "invalid_amount"},
		{"get_score", map[string]any{"app_id": strings.Repeat("a", 65)}, "not_found"},
		{"create_campaign", campaign("categories", []any{1}), "invalid_type"},
		{"create_campaign", campaign("app_id", ""), "missing_field"},
		{"create_campaign", campaign("colour", "blue"), "unknown_field"},
		{"create_campaign", campaign("max_bid_cents", nil), ""}, // valid: reaches the (closed) API
		{"create_campaign", campaign("idempotency_key", ""), "invalid_idempotency_key"},
		{"create_campaign", campaign("idempotency_key", strings.Repeat("k", 256)), "invalid_idempotency_key"},
		{"register_app", register("platform", "linux"), "invalid_platform"},
		{"register_app", register("name", ""), "missing_field"},
		{"register_app", register("category", "Not A Key"), "invalid_category"},
		{"top_up", map[string]any{"app_id": "app_1", "amount_cents": 4999}, "below_minimum"},
		{"top_up", map[string]any{"app_id": "app_1", "amount_cents": 5000, "prefer_x402": "yes"}, "invalid_type"},
		{"top_up", map[string]any{"amount_cents": 5000}, "missing_field"},
		{"get_ledger", map[string]any{"app_id": "app_1", "limit": 0}, "invalid_limit"},
		{"get_ledger", map[string]any{"app_id": "app_1", "limit": 1001}, "invalid_limit"},
		{"get_ledger", map[string]any{"app_id": "app_1", "cursor": ""}, "invalid_cursor"},
		{"get_stats", map[string]any{"app_id": "app_1", "period": "forever"}, "invalid_period"},
		{"get_score", map[string]any{}, "missing_field"},
		{"get_rate_card", map[string]any{"verbose": true}, "unknown_field"},
		{"pause_campaign", map[string]any{"campaign_id": 7}, "invalid_type"},
	}
	for _, tc := range cases {
		res := call(t, c, tc.tool, tc.args)
		e := errorOf(t, res)
		want := tc.code
		if want == "" {
			want = "unavailable" // the arguments passed; the API is a closed port
		}
		if e.Code != want {
			t.Errorf("%s %v: code %q (%s), want %q", tc.tool, tc.args, e.Code, e.Message, want)
		}
	}
}

// A number too large for 64 bits is an invalid_type, as the API answers it,
// whatever the bounds of its argument.

// manyCategories lists n category keys.
func manyCategories(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("k%d", i)
	}
	return out
}

func TestHugeInteger(t *testing.T) {
	c := connect(t, newTestServer(t))
	res := call(t, c, "top_up", json.RawMessage(`{"app_id":"app_1","amount_cents":123456789012345678901234567890}`))
	if e := errorOf(t, res); e.Code != "invalid_type" || !strings.Contains(e.Message, "64 bits") {
		t.Errorf("got %+v", e)
	}
}

// Every output schema compiles and is enforced: a server whose tools answer
// {} gets output validation errors, reported in the API's error shape.
func TestOutputSchemasAreEnforced(t *testing.T) {
	s := newTestServer(t)
	bare := server.NewMCPServer("t", "1", server.WithOutputSchemaValidation(), server.WithHooks(func() *server.Hooks {
		h := &server.Hooks{}
		h.AddAfterCallTool(s.explainRefusal)
		return h
	}()))
	for _, tl := range allTools() {
		bare.AddTool(tl.definition(), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(map[string]any{}, "{}"), nil
		})
	}
	c, err := client.NewInProcessClient(bare)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tl := range allTools() {
		e := errorOf(t, call(t, c, tl.name, nil))
		if e.Code != "internal" || !strings.Contains(e.Message, "output schema") {
			t.Errorf("%s: %+v, want an output schema violation", tl.name, e)
		}
	}
}

func TestErrorResult(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		err  error
		want errorBody
	}{
		{&xpromo.Error{Status: 429, Code: "rate_limited", Message: "slow down", RetryAfter: &at, RequestID: "req_1"},
			errorBody{Code: "rate_limited", Message: "slow down", RetryAfter: &at, RequestID: "req_1"}},
		{&xpromo.Error{Status: 502, Message: "unexpected answer: Bad Gateway"},
			errorBody{Code: "unavailable", Message: "unexpected answer: Bad Gateway"}},
		{&xpromo.Error{Status: 200, Message: "unexpected answer: <html>"},
			errorBody{Code: "internal", Message: "unexpected answer: <html>"}},
	}
	for _, tc := range cases {
		got := errorResult(tc.err).StructuredContent.(toolError).Error
		if got.Code != tc.want.Code || got.Message != tc.want.Message || got.RequestID != tc.want.RequestID ||
			(got.RetryAfter == nil) != (tc.want.RetryAfter == nil) {
			t.Errorf("%v: got %+v, want %+v", tc.err, got, tc.want)
		}
	}
	if got := errorResult(context.DeadlineExceeded).StructuredContent.(toolError).Error; got.Code != "unavailable" {
		t.Errorf("deadline: %+v", got)
	}
	if got := errorResult(errors.New("dial tcp: connection refused")).StructuredContent.(toolError).Error; got.Code != "unavailable" {
		t.Errorf("connection: %+v", got)
	}
}

// Over HTTP a request without Authorization sends none, even when the
// server's client has a key; over stdio the session's key is used.
func TestCallerCredentials(t *testing.T) {
	s := New(xpromo.NewClient("http://127.0.0.1:1", xpromo.WithAPIKey("xp_test_session")))
	if c := s.callerOf(context.Background()); c.client.APIKey() != "xp_test_session" || !c.session {
		t.Errorf("stdio: key %q session %v", c.client.APIKey(), c.session)
	}
	c := s.callerOf(ContextWithAuthorization(context.Background(), ""))
	if c.client.APIKey() != "" || len(c.opts) != 0 || c.session {
		t.Errorf("HTTP without Authorization must send no key: %+v", c)
	}
	c = s.callerOf(ContextWithAuthorization(context.Background(), "Bearer xp_test_caller"))
	if c.client.APIKey() != "" || len(c.opts) != 1 || c.session {
		t.Errorf("HTTP with Authorization must forward it: %+v", c)
	}
	s.setKey("xp_test_issued")
	if c := s.callerOf(context.Background()); c.client.APIKey() != "xp_test_issued" {
		t.Errorf("a remembered key must be used: %q", c.client.APIKey())
	}
}

// The HTTP handler refuses GET (no server-to-client stream) and serves POST.
func TestHTTPHandlerMethods(t *testing.T) {
	h := newTestServer(t).HTTPHandler(nil)
	req, _ := http.NewRequest(http.MethodGet, "/mcp", nil)
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	if rec.status != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", rec.status)
	}
}

type recorder struct {
	header http.Header
	status int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(s int) {
	if r.status == 0 {
		r.status = s
	}
}
func (r *recorder) Write(b []byte) (int, error) { r.WriteHeader(200); return r.body.Write(b) }
