package conformance

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// MCP tool parity: the MCP server at /mcp (Streamable HTTP) has one tool per
// operation of the API document, named in its endpoint table, and each tool
// answers what its operation answers (seed-api "Endpoints"; decisions §1).
func mcpChecks() []Check {
	return []Check{
		{"every operation has its tool", checkMCPTools},
		{"tools answer what their operations answer", checkMCPParity},
		{"tool errors carry the API's Error body", checkMCPErrors},
		{"tools act like their operations", checkMCPActions},
	}
}

// mcpTools are the tools of the API document's endpoint table.
var mcpTools = []string{
	"register_app", "get_score", "get_rate_card", "get_network_stats", "get_integration_guide",
	"top_up", "create_campaign", "pause_campaign", "resume_campaign", "get_ledger", "get_stats",
	"request_payout",
}

// MCP is an initialized MCP session with the target's /mcp, sending key
// (when not "") as the bearer credential.
func (c *C) MCP(key string) *mcpclient.Client {
	c.Helper()
	headers := map[string]string{"User-Agent": "xpromo-conformance/" + SuiteVersion}
	if key != "" {
		headers["Authorization"] = "Bearer " + key
	}
	cl, err := mcpclient.NewStreamableHttpClient(c.BaseURL()+"/mcp",
		transport.WithHTTPBasicClient(c.http), transport.WithHTTPHeaders(headers))
	c.NoError(err, "an MCP client")
	c.Cleanup(func() { cl.Close() })
	c.NoError(cl.Start(c.ctx), "starting the MCP client")
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "xpromo-conformance", Version: SuiteVersion}
	if _, err := cl.Initialize(c.ctx, init); err != nil {
		if ex := c.Last(); ex.Status == http.StatusNotFound || ex.Status == http.StatusMethodNotAllowed {
			c.Skipf("needs the MCP endpoint /mcp (Streamable HTTP): %s", ex)
		}
		c.Fatalf("MCP initialize: %v", err)
	}
	return cl
}

// Call calls a tool and returns its result.
func (c *C) Call(cl *mcpclient.Client, tool string, args map[string]any) *mcp.CallToolResult {
	c.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := cl.CallTool(c.ctx, req)
	c.NoError(err, "MCP tools/call "+tool)
	return res
}

// structured is the tool result's structured content as generic JSON (or,
// when it has none, its text content parsed as JSON).
func structured(c *C, tool string, res *mcp.CallToolResult) any {
	c.Helper()
	raw := []byte(res.RawStructuredContent)
	if len(raw) == 0 && res.StructuredContent != nil {
		raw, _ = json.Marshal(res.StructuredContent)
	}
	if len(raw) == 0 {
		for _, ct := range res.Content {
			if t, ok := ct.(mcp.TextContent); ok {
				raw = []byte(t.Text)
				break
			}
		}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		c.Fatalf("%s: the result is not JSON: %v (%s)", tool, err, clip(raw))
	}
	return v
}

// restJSON is the body of a REST answer as generic JSON.
func restJSON(c *C, ex Exchange) any {
	c.Helper()
	var v any
	if err := json.Unmarshal(ex.Body, &v); err != nil {
		c.Fatalf("%s: not JSON", ex)
	}
	return v
}

func checkMCPTools(c *C) {
	cl := c.MCP("")
	res, err := cl.ListTools(c.ctx, mcp.ListToolsRequest{})
	c.NoError(err, "MCP tools/list")
	have := map[string]mcp.Tool{}
	for _, t := range res.Tools {
		have[t.Name] = t
	}
	for _, name := range mcpTools {
		t, ok := have[name]
		if !ok {
			c.Errorf("no tool %q (the API document names one per operation)", name)
			continue
		}
		if strings.TrimSpace(t.Description) == "" {
			c.Errorf("tool %q has no description", name)
		}
	}
}

func checkMCPParity(c *C) {
	a := fundedApp(c, 5000, 6000)
	camp := createCampaign(c, a, nil)
	_ = camp
	cl := c.MCP(a.Key)
	ctx := c.Ctx()
	for _, tc := range []struct {
		tool string
		args map[string]any
		rest func() error
	}{
		{"get_rate_card", nil, func() error { _, err := a.Client.GetRateCard(ctx); return err }},
		{"get_score", map[string]any{"app_id": a.ID}, func() error { _, err := a.Client.GetScore(ctx, a.ID); return err }},
		{"get_ledger", map[string]any{"app_id": a.ID}, func() error { _, err := a.Client.GetLedger(ctx, a.ID, nil); return err }},
		{"get_stats", map[string]any{"app_id": a.ID, "period": "last_7_days"}, func() error {
			_, err := a.Client.GetStats(ctx, a.ID, &xpromo.StatsParams{Period: xpromo.PeriodLast7Days})
			return err
		}},
	} {
		res := c.Call(cl, tc.tool, tc.args)
		if res.IsError {
			c.Errorf("%s answered a tool error: %v", tc.tool, structured(c, tc.tool, res))
			continue
		}
		got := structured(c, tc.tool, res)
		c.NoError(tc.rest(), "the REST operation of "+tc.tool)
		want := restJSON(c, c.Last())
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			c.Errorf("%s answers\n  %s\nits REST operation\n  %s", tc.tool, clip(g), clip(w))
		}
	}
	guide := c.Call(cl, "get_integration_guide", nil)
	rest, err := a.Client.GetIntegrationGuide(ctx)
	c.NoError(err, "GET /integration-guide")
	text := ""
	for _, ct := range guide.Content {
		if t, ok := ct.(mcp.TextContent); ok {
			text += t.Text
		}
	}
	if guide.IsError || strings.TrimSpace(text) != strings.TrimSpace(rest) {
		c.Errorf("get_integration_guide does not answer the guide GET /integration-guide serves (%d vs %d characters)", len(text), len(rest))
	}
}

// toolErrorCode is the Error body's code of a tool error.
func toolErrorCode(c *C, tool string, res *mcp.CallToolResult) string {
	c.Helper()
	if !res.IsError {
		c.Errorf("%s succeeded, want a tool error", tool)
		return ""
	}
	v, _ := structured(c, tool, res).(map[string]any)
	e, _ := v["error"].(map[string]any)
	code, _ := e["code"].(string)
	if _, ok := e["message"].(string); !ok {
		c.Errorf("%s: the tool error has no error.message: %v", tool, v)
	}
	return code
}

func checkMCPErrors(c *C) {
	a, other := c.NewApp(), c.NewApp()
	cl := c.MCP(a.Key)
	for _, tc := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"get_score", map[string]any{"app_id": other.ID}, "not_found"},
		{"top_up", map[string]any{"app_id": a.ID, "amount_cents": 4999}, "below_minimum"},
		{"request_payout", map[string]any{"app_id": a.ID}, "below_minimum"},
		{"create_campaign", map[string]any{"app_id": a.ID, "categories": []string{someCategory(c)}, "daily_budget_cents": 999}, "below_minimum"},
	} {
		if code := toolErrorCode(c, tc.tool, c.Call(cl, tc.tool, tc.args)); code != tc.code {
			c.Errorf("%s %v: tool error %q, want %q as its REST operation answers", tc.tool, tc.args, code, tc.code)
		}
	}
	// Without a key, a protected tool answers the REST API's 401 code.
	anon := c.MCP("")
	if code := toolErrorCode(c, "get_score", c.Call(anon, "get_score", map[string]any{"app_id": a.ID})); code != "unauthorized" {
		c.Errorf("get_score without a key: tool error %q, want unauthorized", code)
	}
}

func checkMCPActions(c *C) {
	ctx := c.Ctx()
	// register_app issues a key that works on the REST API.
	reg := Registration(xpromo.PlatformWin)
	res := c.Call(c.MCP(""), "register_app", map[string]any{
		"name": reg.Name, "platform": string(reg.Platform), "bundle_id": reg.BundleID, "domain": reg.Domain,
		"download_url": reg.DownloadURL, "contact_email": reg.ContactEmail,
	})
	if res.IsError {
		c.Fatalf("register_app: %v", structured(c, "register_app", res))
	}
	v, _ := structured(c, "register_app", res).(map[string]any)
	appID, _ := v["app_id"].(string)
	key, _ := v["api_key"].(string)
	if v["status"] != "pending" || appID == "" || key == "" {
		c.Fatalf("register_app answered %v, want a pending app with its key", v)
	}
	a := &App{ID: appID, Key: key, Platform: xpromo.PlatformWin, Client: c.AsApp(key)}
	_, err := a.Client.GetScore(ctx, appID)
	c.NoError(err, "the key register_app issued, on the REST API")

	// create_campaign and pause_campaign act on the campaign the REST API sees.
	cl := c.MCP(key)
	res = c.Call(cl, "create_campaign", map[string]any{"app_id": appID, "categories": []string{someCategory(c)}, "daily_budget_cents": 2000})
	if res.IsError {
		c.Fatalf("create_campaign: %v", structured(c, "create_campaign", res))
	}
	camp, _ := structured(c, "create_campaign", res).(map[string]any)
	id, _ := camp["campaign_id"].(string)
	if camp["status"] != "throttled" || id == "" {
		c.Fatalf("create_campaign answered %v, want a throttled campaign", camp)
	}
	res = c.Call(cl, "pause_campaign", map[string]any{"campaign_id": id})
	if p, _ := structured(c, "pause_campaign", res).(map[string]any); res.IsError || p["status"] != "paused" {
		c.Errorf("pause_campaign answered %v", p)
	}
	r, err := a.Client.ResumeCampaign(ctx, id)
	c.NoError(err, "resuming, on the REST API, the campaign MCP created")
	if r.Status != xpromo.CampaignStatusThrottled {
		c.Errorf("resume answered %s", r.Status)
	}
	// top_up opens a checkout whose payment shows in the ledger.
	res = c.Call(cl, "top_up", map[string]any{"app_id": appID, "amount_cents": 5000})
	top, _ := structured(c, "top_up", res).(map[string]any)
	url, _ := top["checkout_url"].(string)
	if res.IsError || url == "" {
		c.Fatalf("top_up answered %v, want a checkout_url", top)
	}
	_, err = c.Public().CompleteTestCheckout(ctx, url)
	c.NoError(err, "completing the checkout top_up opened")
	if lines := c.Lines(a, nil); len(lines) != 1 || lines[0].AmountCents != 5000 {
		c.Errorf("after top_up and payment the ledger is %+v", lines)
	}
}
