package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Resources are the REST API's readable documents, under xpromo:// URIs,
// each read with the caller's credentials as the tools are. Only documents:
// a key's campaigns are read with list_campaigns and get_campaign, and a
// chain by its id, so there is no resource for them.

const (
	uriGuide        = "xpromo://integration-guide"
	uriOpenAPI      = "xpromo://openapi.json"
	uriRateCard     = "xpromo://rate-card"
	uriNetworkStats = "xpromo://network-stats"
)

func appURI(appID, what string) string { return "xpromo://apps/" + appID + "/" + what }

// readAPI is what a resource handler reads: its REST answer, as text.
type readAPI func(ctx context.Context, c *xpromo.Client, args map[string]string, opts []xpromo.CallOption) (string, error)

type resource struct {
	uri, name, title, description, mime string
	read                                readAPI
}

func staticResources() []resource {
	return []resource{
		{uriGuide, "integration-guide", "SDK integration guide", "How to embed the xpromo SDK in a macOS or Windows app (GET /v1/integration-guide). Public.", "text/markdown",
			func(ctx context.Context, c *xpromo.Client, _ map[string]string, opts []xpromo.CallOption) (string, error) {
				return c.GetIntegrationGuide(ctx, opts...)
			}},
		{uriOpenAPI, "openapi", "OpenAPI document", "The REST API's contract, OpenAPI 3.1 (GET /openapi.json): every path, field, enum and status. Public.", "application/json",
			func(ctx context.Context, c *xpromo.Client, _ map[string]string, opts []xpromo.CallOption) (string, error) {
				doc, err := c.GetOpenAPIDocument(ctx, opts...)
				return string(doc), err
			}},
		{uriRateCard, "rate-card", "Rate card", "Categories with their floor prices per cleared install, the take rate and the credit bonus (GET /v1/rate-card). Public.", "application/json",
			jsonOf(func(ctx context.Context, c *xpromo.Client, _ map[string]string, opts []xpromo.CallOption) (any, error) {
				return c.GetRateCard(ctx, opts...)
			})},
		{uriNetworkStats, "network-stats", "Network figures", "Clear rate, fraud rate and average cost per install by category (GET /v1/network-stats). Public.", "application/json",
			jsonOf(func(ctx context.Context, c *xpromo.Client, _ map[string]string, opts []xpromo.CallOption) (any, error) {
				return c.GetNetworkStats(ctx, opts...)
			})},
	}
}

type template struct {
	uri, name, title, description string
	read                          readAPI
}

func resourceTemplates() []template {
	return []template{
		{"xpromo://apps/{app_id}/score", "app-score", "The app's score", "Status, vetting gate outcomes, score and reasons of the caller's app (GET /v1/apps/{app_id}/score)." + keyNote,
			jsonOf(func(ctx context.Context, c *xpromo.Client, a map[string]string, opts []xpromo.CallOption) (any, error) {
				return c.GetScore(ctx, a["app_id"], opts...)
			})},
		{"xpromo://apps/{app_id}/ledger{?from,to,limit,cursor}", "app-ledger", "The app's ledger", "One page of the caller's app's ledger, oldest line first (GET /v1/apps/{app_id}/ledger; the query as the REST API's). Subscribers are told when a payout or a paid top-up made through this server changes it." + keyNote,
			func(ctx context.Context, c *xpromo.Client, a map[string]string, opts []xpromo.CallOption) (string, error) {
				var out json.RawMessage
				err := c.Do(ctx, "GET", "/v1/apps/"+url.PathEscape(a["app_id"])+"/ledger?"+queryOf(a, "from", "to", "limit", "cursor"), nil, &out, opts...)
				return string(out), err
			}},
		{"xpromo://apps/{app_id}/stats{?period}", "app-stats", "The app's stats", "Delivery and fraud figures of the caller's app over a period (GET /v1/apps/{app_id}/stats; period last_7_days, last_30_days or last_90_days)." + keyNote,
			func(ctx context.Context, c *xpromo.Client, a map[string]string, opts []xpromo.CallOption) (string, error) {
				var out json.RawMessage
				err := c.Do(ctx, "GET", "/v1/apps/"+url.PathEscape(a["app_id"])+"/stats?"+queryOf(a, "period"), nil, &out, opts...)
				return string(out), err
			}},
		{"xpromo://apps/{app_id}/jobs/{job_id}", "app-job", "A background job of the app", "A scoring or gate job of the caller's app, e.g. scoring_job_id of register_app (GET /v1/apps/{app_id}/jobs/{job_id})." + keyNote,
			jsonOf(func(ctx context.Context, c *xpromo.Client, a map[string]string, opts []xpromo.CallOption) (any, error) {
				return c.GetJob(ctx, a["app_id"], a["job_id"], opts...)
			})},
		{"xpromo://chains/{chain_id}", "chain", "An attribution chain", "One attribution chain (impression, click, install) the caller's app is part of (GET /v1/chains/{chain_id})." + keyNote,
			jsonOf(func(ctx context.Context, c *xpromo.Client, a map[string]string, opts []xpromo.CallOption) (any, error) {
				return c.GetChain(ctx, a["chain_id"], opts...)
			})},
	}
}

func jsonOf(read func(ctx context.Context, c *xpromo.Client, a map[string]string, opts []xpromo.CallOption) (any, error)) readAPI {
	return func(ctx context.Context, c *xpromo.Client, a map[string]string, opts []xpromo.CallOption) (string, error) {
		v, err := read(ctx, c, a, opts)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(v)
		return string(b), err
	}
}

func queryOf(a map[string]string, names ...string) string {
	q := url.Values{}
	for _, n := range names {
		if v, ok := a[n]; ok && v != "" {
			q.Set(n, v)
		}
	}
	return q.Encode()
}

// addResources registers the resources and templates.
func (s *Server) addResources() {
	for _, r := range staticResources() {
		s.mcp.AddResource(mcp.NewResource(r.uri, r.name, mcp.WithResourceTitle(r.title), mcp.WithResourceDescription(r.description), mcp.WithMIMEType(r.mime)),
			s.resourceHandler(r.mime, r.read))
	}
	for _, t := range resourceTemplates() {
		s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(t.uri, t.name, mcp.WithTemplateTitle(t.title), mcp.WithTemplateDescription(t.description), mcp.WithTemplateMIMEType("application/json")),
			server.ResourceTemplateHandlerFunc(s.resourceHandler("application/json", t.read)))
	}
}

// resourceHandler reads a resource with the caller's credentials. A
// refusal of the API is a JSON-RPC error whose message is the API's Error
// body, as a tool error's text is.
func (s *Server) resourceHandler(mime string, read readAPI) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		args := map[string]string{}
		for k, v := range req.Params.Arguments {
			switch v := v.(type) {
			case string:
				args[k] = v
			case []string:
				if len(v) > 0 {
					args[k] = v[0]
				}
			default:
				args[k] = fmt.Sprint(v)
			}
		}
		c := s.callerOf(ctx)
		text, err := read(ctx, c.client, args, c.opts)
		if err != nil {
			body := s.forSession(errorBodyOf(err), c)
			s.log(ctx, mcp.LoggingLevelWarning, map[string]any{"resource": req.Params.URI, "error": body})
			b, _ := json.Marshal(toolError{Error: body})
			return nil, errors.New(string(b))
		}
		if id := args["app_id"]; id != "" {
			s.ids.add(s.who(ctx), "app_id", id)
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: mime, Text: text}}, nil
	}
}

// Completions: the values an agent may mean for an argument of a prompt or
// a resource template, starting with what it typed.

// periods are the reporting windows of get_stats.
var periods = []string{"last_7_days", "last_30_days", "last_90_days"}

type completer struct{ s *Server }

func (c completer) CompletePromptArgument(ctx context.Context, _ string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return c.s.complete(ctx, arg)
}

func (c completer) CompleteResourceArgument(ctx context.Context, _ string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return c.s.complete(ctx, arg)
}

// complete offers, for app_id and campaign_id, the ids the caller has used
// or been given through this server (newest first: the API lists neither);
// for category, the rate card's keys; for period, the reporting windows;
// for platform, mac and win. Other arguments get no suggestion.
func (s *Server) complete(ctx context.Context, arg mcp.CompleteArgument) (*mcp.Completion, error) {
	var values []string
	switch arg.Name {
	case "app_id", "campaign_id":
		values = s.ids.list(s.who(ctx), arg.Name)
		slices.Reverse(values)
	case "category", "categories":
		c := s.callerOf(ctx)
		card, err := c.client.GetRateCard(ctx, c.opts...)
		if err != nil {
			return nil, errors.New(string(mustJSON(toolError{Error: errorBodyOf(err)})))
		}
		for _, cat := range card.Categories {
			values = append(values, cat.Key)
		}
	case "period":
		values = periods
	case "platform":
		values = []string{"mac", "win"}
	}
	out := []string{}
	for _, v := range values {
		if strings.HasPrefix(v, arg.Value) {
			out = append(out, v)
		}
	}
	total := len(out)
	if len(out) > 100 {
		out = out[:100] // the protocol's bound
	}
	return &mcp.Completion{Values: out, Total: total, HasMore: total > len(out)}, nil
}
