package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
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
// keys, the stdio binary, /mcp over HTTP) are in server/assembly/mcp_test.go.

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
// is not one in the documented shape: isError, no structuredContent (the
// output schema describes answers, not errors), and one text content that
// is the API's Error body.
func errorOf(t testing.TB, res *mcp.CallToolResult) errorBody {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error, got %+v", res)
	}
	if res.StructuredContent != nil {
		t.Errorf("a tool error must carry no structuredContent (it would break the output schema): %v", res.StructuredContent)
	}
	if len(res.Content) != 1 {
		t.Fatalf("want one text content, got %+v", res.Content)
	}
	tc, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("want text content, got %+v", res.Content[0])
	}
	var te toolError
	dec := json.NewDecoder(strings.NewReader(tc.Text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&te); err != nil {
		t.Fatalf("text %s is not {error: {code, message, retry_after}}: %v", tc.Text, err)
	}
	if te.Error.Code == "" || te.Error.Message == "" {
		t.Fatalf("error without code or message: %s", tc.Text)
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
	if !slices.Equal(sorted(names), sorted(ToolNames)) || len(names) != 41 {
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
		"list_campaigns":        {true, false, true, false},
		"get_campaign":          {true, false, true, false},
		"update_campaign":       {false, false, true, false},
		"get_ledger":            {true, false, true, false},
		"get_stats":             {true, false, true, false},
		"request_payout":        {false, true, false, true},
		// Payout accounts: they ask the payment processor.
		"start_payout_onboarding": {false, false, true, true},
		"get_payout_account":      {true, false, true, true},
		// Webhooks: redelivery makes the server POST to the receiver.
		"create_webhook_endpoint": {false, false, false, false},
		"list_webhook_endpoints":  {true, false, true, false},
		"update_webhook_endpoint": {false, false, true, false},
		"delete_webhook_endpoint": {false, true, false, false},
		"rotate_webhook_secret":   {false, false, false, false},
		"list_webhook_attempts":   {true, false, true, false},
		"redeliver_webhook":       {false, false, false, true},
		"list_events":             {true, false, true, false},
		// Earn mode and complaints.
		"get_earn_mode":    {true, false, true, false},
		"set_earn_mode":    {false, false, true, false},
		"create_complaint": {false, false, false, false},
		"list_complaints":  {true, false, true, false},
		// The gate: a re-check fetches the download, looks the domain up and
		// may mail the contact; a resend mails it.
		"recheck_gate":             {false, false, true, true},
		"verify_contact_code":      {false, false, false, false},
		"resend_contact_challenge": {false, false, false, true},
		// The app's record: a changed appcast URL is read by the scoring
		// run it queues.
		"get_app":    {true, false, true, false},
		"update_app": {false, false, true, true},
		// The dashboard's reads.
		"get_balance":     {true, false, true, false},
		"list_payouts":    {true, false, true, false},
		"list_api_keys":   {true, false, true, false},
		"list_chains":     {true, false, true, false},
		"get_daily_stats": {true, false, true, false},
		"get_thresholds":  {true, false, true, false},
		// The dashboard's sign-in link: a new one each call.
		"dashboard_link": {false, false, false, false},
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

// recordingAPI is a local API that records the one request it gets and
// answers it with status and body.
type recordingAPI struct {
	url  string
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	method, path, query string
	header              http.Header
	body                string
}

func newRecordingAPI(t *testing.T, status int, body string) *recordingAPI {
	t.Helper()
	api := &recordingAPI{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		api.mu.Lock()
		api.reqs = append(api.reqs, recorded{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Clone(), string(b)})
		api.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_test")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	api.url = srv.URL
	return api
}

func (a *recordingAPI) requests() []recorded {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.reqs)
}

const apiRefusal = `{"error":{"code":"below_minimum","message":"the API's own words","retry_after":null}}`

// Arguments reach the API as the agent wrote them (body fields unchanged,
// query values as text, headers as given), so that the API judges every
// mistake with its own code and message, which the tool error carries
// unchanged.
func TestArgumentsReachTheAPIAsWritten(t *testing.T) {
	cases := []struct {
		tool                      string
		args                      string
		method, path, query, body string
		header                    [2]string
	}{
		{tool: "create_campaign", args: `{"app_id":"app_1","categories":["x"],"daily_budget_cents":"5000","colour":"blue","idempotency_key":"k1"}`,
			method: "POST", path: "/v1/campaigns", body: `{"app_id":"app_1","categories":["x"],"colour":"blue","daily_budget_cents":"5000"}`, header: [2]string{"Idempotency-Key", "k1"}},
		{tool: "create_campaign", args: `{"app_id":"app_1","categories":[],"daily_budget_cents":10,"idempotency_key":""}`,
			method: "POST", path: "/v1/campaigns", body: `{"app_id":"app_1","categories":[],"daily_budget_cents":10}`, header: [2]string{"Idempotency-Key", ""}},
		{tool: "register_app", args: `{"name":"","platform":"linux"}`,
			method: "POST", path: "/v1/apps", body: `{"name":"","platform":"linux"}`},
		{tool: "top_up", args: `{"app_id":"app 1","amount_cents":123456789012345678901234567890}`,
			method: "POST", path: "/v1/apps/app%201/top-up", body: `{"amount_cents":123456789012345678901234567890}`},
		{tool: "top_up", args: `{"app_id":"app_1","amount_cents":"5000"}`,
			method: "POST", path: "/v1/apps/app_1/top-up", body: `{"amount_cents":"5000"}`},
		{tool: "top_up", args: `{"app_id":"app_1","amount_cents":4999,"prefer_x402":true}`,
			method: "POST", path: "/v1/apps/app_1/top-up", body: `{"amount_cents":4999}`, header: [2]string{"Prefer", "payment=x402"}},
		{tool: "get_ledger", args: `{"app_id":"app_1","limit":0,"from":"yesterday","cursor":""}`,
			method: "GET", path: "/v1/apps/app_1/ledger", query: "cursor=&from=yesterday&limit=0"},
		{tool: "get_ledger", args: `{"app_id":"app_1","limit":"ten"}`,
			method: "GET", path: "/v1/apps/app_1/ledger", query: "limit=ten"},
		{tool: "get_stats", args: `{"app_id":"app_1","period":"forever"}`,
			method: "GET", path: "/v1/apps/app_1/stats", query: "period=forever"},
		{tool: "get_score", args: `{"app_id":""}`, method: "GET", path: "/v1/apps//score"},
	}
	for _, tc := range cases {
		api := newRecordingAPI(t, 422, apiRefusal)
		c := connect(t, New(xpromo.NewClient(api.url, xpromo.WithRetries(0))))
		e := errorOf(t, call(t, c, tc.tool, json.RawMessage(tc.args)))
		if e.Code != "below_minimum" || e.Message != "the API's own words" || e.RequestID != "req_test" {
			t.Errorf("%s %s: the API's error must come back unchanged, got %+v", tc.tool, tc.args, e)
		}
		reqs := api.requests()
		if len(reqs) != 1 {
			t.Fatalf("%s %s: %d requests, want 1", tc.tool, tc.args, len(reqs))
		}
		r := reqs[0]
		if r.method != tc.method || r.path != tc.path || r.query != tc.query {
			t.Errorf("%s %s: sent %s %s ?%s, want %s %s ?%s", tc.tool, tc.args, r.method, r.path, r.query, tc.method, tc.path, tc.query)
		}
		if tc.body != "" && !jsonEqual(r.body, tc.body) {
			t.Errorf("%s %s: body %s, want %s", tc.tool, tc.args, r.body, tc.body)
		}
		if h := tc.header; h[0] != "" {
			if vs, ok := r.header[h[0]]; !ok || len(vs) != 1 || vs[0] != h[1] {
				t.Errorf("%s %s: header %s = %q, want %q", tc.tool, tc.args, h[0], vs, h[1])
			}
		}
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	dx := json.NewDecoder(strings.NewReader(a))
	dx.UseNumber()
	dy := json.NewDecoder(strings.NewReader(b))
	dy.UseNumber()
	return dx.Decode(&x) == nil && dy.Decode(&y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// What the REST request cannot carry is refused by the tool itself, with
// the code the API gives for the same mistake in a body; the API is not
// called.
func TestArgumentsTheAPICannotSee(t *testing.T) {
	cases := []struct {
		tool, args, code, message string
	}{
		{"get_score", `{}`, "missing_field", "app_id is required"},
		{"top_up", `{"amount_cents":5000}`, "missing_field", "app_id is required"},
		{"pause_campaign", `{"campaign_id":7}`, "invalid_type", `field "campaign_id" must be a string, not integer`},
		{"get_score", `{"app_id":{"id":"app_1"}}`, "invalid_type", `field "app_id" must be a string, not object`},
		{"get_rate_card", `{"verbose":true}`, "unknown_field", `unknown field "verbose"`},
		{"get_score", `{"app_id":"app_1","colour":"blue"}`, "unknown_field", `unknown field "colour"`},
		{"top_up", `{"app_id":"app_1","amount_cents":5000,"prefer_x402":"yes"}`, "invalid_type", `field "prefer_x402" must be a boolean, not string`},
		{"request_payout", `{"app_id":"app_1","idempotency_key":5}`, "invalid_type", `field "idempotency_key" must be a string, not integer`},
		{"get_ledger", `{"app_id":"app_1","limit":[1]}`, "invalid_type", `field "limit" must be a string, not array`},
		{"get_score", `[1]`, "invalid_type", ""},
	}
	for _, tc := range cases {
		api := newRecordingAPI(t, 500, `{}`)
		c := connect(t, New(xpromo.NewClient(api.url, xpromo.WithRetries(0))))
		e := errorOf(t, call(t, c, tc.tool, json.RawMessage(tc.args)))
		if e.Code != tc.code || (tc.message != "" && e.Message != tc.message) {
			t.Errorf("%s %s: got %s %q, want %s %q", tc.tool, tc.args, e.Code, e.Message, tc.code, tc.message)
		}
		if n := len(api.requests()); n != 0 {
			t.Errorf("%s %s: the API was called %d times", tc.tool, tc.args, n)
		}
	}
}

// Over stdio, an unauthorized answer says how to give the session a key
// (the API's message asks for a header the agent cannot send); over HTTP the
// API's message stands.
func TestUnauthorizedOverStdio(t *testing.T) {
	api := newRecordingAPI(t, 401, `{"error":{"code":"unauthorized","message":"this endpoint needs `+"`Authorization: Bearer <API_KEY>`"+`","retry_after":null}}`)
	args := json.RawMessage(`{"app_id":"app_1"}`)

	noKey := connect(t, New(xpromo.NewClient(api.url, xpromo.WithRetries(0)), WithIssuedKeyRemembered()))
	e := errorOf(t, call(t, noKey, "get_score", args))
	if e.Code != "unauthorized" || !strings.Contains(e.Message, "XPROMO_API_KEY") || !strings.Contains(e.Message, "register_app") || strings.Contains(e.Message, "Authorization") {
		t.Errorf("no key: %+v", e)
	}
	badKey := connect(t, New(xpromo.NewClient(api.url, xpromo.WithRetries(0), xpromo.WithAPIKey("xp_test_bad"))))
	if e := errorOf(t, call(t, badKey, "get_score", args)); e.Code != "unauthorized" || !strings.Contains(e.Message, "XPROMO_API_KEY") {
		t.Errorf("bad key: %+v", e)
	}
	s := New(xpromo.NewClient(api.url, xpromo.WithRetries(0)))
	res, err := s.handler(s.tools["get_score"])(ContextWithAuthorization(context.Background(), ""), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "get_score", Arguments: args}})
	if err != nil {
		t.Fatal(err)
	}
	if e := errorOf(t, res); !strings.Contains(e.Message, "Authorization") {
		t.Errorf("HTTP: the API's message must stand: %+v", e)
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

func TestErrorBodyOf(t *testing.T) {
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
		got := errorBodyOf(tc.err)
		if got.Code != tc.want.Code || got.Message != tc.want.Message || got.RequestID != tc.want.RequestID ||
			(got.RetryAfter == nil) != (tc.want.RetryAfter == nil) {
			t.Errorf("%v: got %+v, want %+v", tc.err, got, tc.want)
		}
	}
	if got := errorBodyOf(context.DeadlineExceeded); got.Code != "unavailable" {
		t.Errorf("deadline: %+v", got)
	}
	if got := errorBodyOf(errors.New("dial tcp: connection refused")); got.Code != "unavailable" {
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

// The HTTP handler refuses GET (the server sends nothing outside a
// request) and serves POST.
func TestHTTPHandlerMethods(t *testing.T) {
	h := newTestServer(t).HTTPHandler()
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	if rec.status != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", rec.status)
	}
}

// The DNS-rebinding guard: Host must be a loopback name or an allowed
// host; Origin, when sent, a loopback origin or an allowed one.
func TestOriginGuard(t *testing.T) {
	h := newTestServer(t).HTTPHandler(WithAllowedHosts("api.example.com:443"), WithAllowedOrigins("https://app.example.com"))
	any := newTestServer(t).HTTPHandler(WithAllowedOrigins("*"))
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	cases := []struct {
		h            http.Handler
		host, origin string
		ok           bool
	}{
		{h, "127.0.0.1:8080", "", true},
		{h, "localhost:8080", "http://localhost:8080", true},
		{h, "[::1]:8080", "http://[::1]:3000", true},
		{h, "127.0.0.1:8080", "https://127.0.0.1", true},
		{h, "api.example.com", "", true},
		{h, "API.example.com:8443", "https://app.example.com", true},
		{h, "app.example.com", "", true}, // an allowed origin's host
		{h, "evil.example.com", "", false},
		{h, "evil.example.com:8080", "http://evil.example.com:8080", false},
		{h, "127.0.0.1:8080", "http://evil.example.com", false},
		{h, "localhost", "null", false},
		{h, "localhost", "https://app.example.com.evil.com", false},
		{any, "localhost", "https://anything.example", true},
		{any, "evil.example.com", "", false}, // * is for origins, not hosts
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(http.MethodPost, "http://"+tc.host+"/mcp", strings.NewReader(ping))
		req.Host = tc.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		rec := &recorder{header: http.Header{}}
		tc.h.ServeHTTP(rec, req)
		if got := rec.status != http.StatusForbidden; got != tc.ok {
			t.Errorf("Host %q Origin %q: status %d, want allowed=%v", tc.host, tc.origin, rec.status, tc.ok)
		}
		if !tc.ok {
			var msg mcp.JSONRPCError
			if err := json.Unmarshal([]byte(rec.body.String()), &msg); err != nil || msg.Error.Message == "" {
				t.Errorf("403 body must be a JSON-RPC error: %q", rec.body.String())
			}
		}
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

// Over stdio (JSON-RPC lines), a session subscribed to an app's ledger is
// told when a payout made through this server changes it, and gets the
// log records of its calls once it set a level.
func TestStdioSubscriptionAndLogging(t *testing.T) {
	api := newRecordingAPI(t, 200, `{"transfer_id":"tr_1","amount_cents":5000,"payout_id":"po_1"}`)
	s := New(xpromo.NewClient(api.url, xpromo.WithRetries(0), xpromo.WithAPIKey("xp_test_k")))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.ServeStdio(ctx, inR, outW, nil)
	lines := make(chan map[string]any, 100)
	go func() {
		dec := json.NewDecoder(outR)
		for {
			var m map[string]any
			if dec.Decode(&m) != nil {
				close(lines)
				return
			}
			lines <- m
		}
	}()
	send := func(msg string) { io.WriteString(inW, msg+"\n") }
	// until reads messages until the answer to id, returning those before it.
	until := func(id float64) []map[string]any {
		var got []map[string]any
		for m := range lines {
			if m["id"] == id {
				return got
			}
			got = append(got, m)
		}
		t.Fatal("output ended")
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	until(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"xpromo://apps/app_1/ledger"}}`)
	until(2)
	send(`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"info"}}`)
	until(3)
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"request_payout","arguments":{"app_id":"app_1"}}}`)
	// The notifications may be written after the answer (mcp-go writes them
	// from another goroutine): read until all three came.
	var answered, updated, logged bool
	for m := range lines {
		params, _ := m["params"].(map[string]any)
		switch {
		case m["id"] == 4.0:
			answered = true
		case m["method"] == "notifications/resources/updated":
			updated = params["uri"] == "xpromo://apps/app_1/ledger"
		case m["method"] == "notifications/message":
			logged = logged || (params["logger"] == "xpromo-mcp" && params["level"] == "info")
		}
		if answered && updated && logged {
			break
		}
	}
	if !answered || !updated || !logged {
		t.Fatalf("answered %v, resources/updated %v, info record %v", answered, updated, logged)
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"resources/unsubscribe","params":{"uri":"xpromo://apps/app_1/ledger"}}`)
	until(5)
	s.subs.mu.Lock()
	for _, uris := range s.subs.uris {
		if len(uris) > 0 {
			t.Errorf("subscriptions left after unsubscribe: %v", uris)
		}
	}
	s.subs.mu.Unlock()
	inW.Close()
}
