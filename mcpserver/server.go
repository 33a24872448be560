package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Name and Version identify the MCP server to its clients.
const (
	Name    = "xpromo"
	Version = "0.1.0"
)

// instructions are sent to the client at connection: a short orientation
// for the agent.
const instructions = `xpromo is a cross-promotion and paid-install network for macOS and Windows desktop apps. Amounts are integers in euro cents (one credit is one cent, currency EUR).

Start with get_rate_card (categories and their floor prices) and get_integration_guide (how to embed the SDK). register_app registers an app and issues its API key, shown only once: keep it. The other app tools act on the caller's own app only. Typical flow: register_app, top_up (pay at checkout_url), create_campaign, then get_ledger and get_stats.

A failed call returns isError with one text content, the API's Error body {"error": {"code", "message", "retry_after"}}: act on code (stable), never on message; retry_after says when a retry may succeed (e.g. rate_limited).

Resources (xpromo://rate-card, xpromo://apps/{app_id}/ledger, …) read the same documents; the prompts walk through registering, launching a campaign, this month's results and a payout.`

// Server is the xpromo MCP server: the tools of the API (ToolNames), each
// calling the REST API through the SDK client. Serve it over stdio with
// ServeStdio or over Streamable HTTP with HTTPHandler.
type Server struct {
	mcp   *server.MCPServer
	base  *xpromo.Client // the caller's client, with the session's key
	anon  *xpromo.Client // the same without a key: requests that bring their own
	tools map[string]*tool
	subs  *subscriptions
	ids   known
	now   func() time.Time

	rememberIssuedKey bool
	drainTimeout      time.Duration // ServeStdio's; 0 is DefaultStdioDrainTimeout
	mu                sync.Mutex
	key               string // the session's API key
}

// Option configures New.
type Option func(*Server)

// WithIssuedKeyRemembered makes the session switch to the API key that
// register_app issues: after a successful register_app, the tools act as
// the new app, so an agent can register and go on without configuring
// anything. It is for a server with one user, such as xpromo-mcp over stdio.
// Never use it on a server shared by several callers (over HTTP each
// request brings its own key anyway, and it is never remembered).
func WithIssuedKeyRemembered() Option {
	return func(s *Server) { s.rememberIssuedKey = true }
}

// New returns the MCP server in front of the API that c talks to. c's API
// key (xpromo.WithAPIKey, may be empty) is the session's key, used by every
// tool call that does not bring its own credentials (ContextWithAuthorization).
//
// Build c with xpromo.WithMaxRetryAfter(0) so that a rate limit comes back
// at once as a rate_limited tool error with its retry_after, rather than
// holding the agent's call while the client waits.
func New(c *xpromo.Client, opts ...Option) *Server {
	s := &Server{
		base:  c,
		anon:  c.With(xpromo.WithAPIKey("")),
		key:   c.APIKey(),
		tools: map[string]*tool{},
		subs:  newSubscriptions(),
		now:   time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	hooks := &server.Hooks{}
	hooks.AddAfterCallTool(s.explainRefusal)
	hooks.AddAfterSubscribe(s.subs.subscribe)
	hooks.AddAfterUnsubscribe(s.subs.unsubscribe)
	s.mcp = server.NewMCPServer(Name, Version,
		server.WithTitle("xpromo"),
		server.WithDescription("Cross-promotion and paid-install network for macOS and Windows desktop apps."),
		server.WithInstructions(instructions),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(true, false),
		server.WithPromptCapabilities(false),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(completer{s}),
		server.WithResourceCompletionProvider(completer{s}),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		// No input schema validation: the API judges the arguments, with
		// its own messages (arguments.go).
		server.WithOutputSchemaValidation(),
		server.WithHooks(hooks),
	)
	for _, t := range allTools() {
		if t.name == "top_up" {
			t.description += topUpWalletNote(c.X402Wallet())
		}
		s.tools[t.name] = t
		s.mcp.AddTool(t.definition(), s.handler(t))
	}
	s.addResources()
	s.addPrompts()
	return s
}

// MCPServer returns the underlying mcp-go server (for in-process clients
// and other transports).
func (s *Server) MCPServer() *server.MCPServer { return s.mcp }

// APIKey returns the session's API key: the client's, or the last one
// register_app issued under WithIssuedKeyRemembered.
func (s *Server) APIKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key
}

func (s *Server) setKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// ServeStdio serves the tools over stdio (newline-delimited JSON-RPC on in
// and out) until ctx is done or in ends. When in ends, every request read
// from it is still answered on out before ServeStdio returns (waiting at
// most DefaultStdioDrainTimeout), so `printf '…' | xpromo-mcp` gets every
// answer; when ctx ends, the calls in flight are cancelled. logger
// receives transport errors; nil discards them.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, logger *slog.Logger) error {
	std := server.NewStdioServer(s.mcp)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	std.SetErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelError))
	timeout := s.drainTimeout
	if timeout <= 0 {
		timeout = DefaultStdioDrainTimeout
	}
	calls := newInflight()
	return std.Listen(ctx,
		&drainingReader{ctx: ctx, src: bufio.NewReader(in), calls: calls, timeout: timeout, log: logger},
		&answerWriter{dst: out, calls: calls})
}

// Authorization over HTTP.

type authorizationKey struct{}

// ContextWithAuthorization returns ctx carrying the credentials of one
// request: the tools then send authorization (the value of an HTTP
// Authorization header, e.g. "Bearer xp_live_…"; "" for none) with their
// REST call, unchanged, instead of the session's key. The API judges it
// exactly as it judges its own callers.
func ContextWithAuthorization(ctx context.Context, authorization string) context.Context {
	return context.WithValue(ctx, authorizationKey{}, authorization)
}

func authorizationFrom(ctx context.Context) (string, bool) {
	v, ok := ctx.Value(authorizationKey{}).(string)
	return v, ok
}

// caller is who a tool call acts as.
type caller struct {
	client  *xpromo.Client
	opts    []xpromo.CallOption
	session bool   // the session's key (not the request's own credentials)
	key     string // the session's key, when session
}

func (s *Server) callerOf(ctx context.Context) caller {
	if auth, ok := authorizationFrom(ctx); ok {
		if auth == "" {
			return caller{client: s.anon}
		}
		return caller{client: s.anon, opts: []xpromo.CallOption{xpromo.WithHeader("Authorization", auth)}}
	}
	key := s.APIKey()
	if key == s.base.APIKey() {
		return caller{client: s.base, session: true, key: key}
	}
	return caller{client: s.base.With(xpromo.WithAPIKey(key)), session: true, key: key}
}

// handler runs tool t: check the arguments, call the API, shape the answer,
// and tell the session (a log record; resources/updated for what changed).
func (s *Server) handler(t *tool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw, err := decodeArguments(req.GetRawArguments())
		if err != nil {
			return s.failed(ctx, t, errorBody{Code: codeInvalidType, Message: err.Error()}), nil
		}
		if bad, refused := checkArguments(t.params, raw); refused {
			return s.failed(ctx, t, errorBodyOf(bad)), nil
		}
		args := arguments{values: raw, params: t.params}
		c := s.callerOf(ctx)
		opts := c.opts[:len(c.opts):len(c.opts)]
		if args.has("idempotency_key") {
			// Sent as given, even empty: the API judges it.
			opts = append(opts, xpromo.WithHeader("Idempotency-Key", args.str("idempotency_key")))
		}
		var resp xpromo.Response
		opts = append(opts, xpromo.WithResponse(&resp))
		s.log(ctx, mcp.LoggingLevelDebug, map[string]any{"tool": t.name, "event": "calling the API"})
		out, err := t.call(ctx, c.client, args, opts)
		if err != nil {
			return s.failed(ctx, t, s.forSession(errorBodyOf(err), c)), nil
		}
		if t.name == "register_app" && c.session && s.rememberIssuedKey {
			if reg, ok := out.value.(*xpromo.RegisterAppResponse); ok && reg.APIKey != "" {
				s.setKey(reg.APIKey)
			}
		}
		s.remember(ctx, args, out)
		s.log(ctx, mcp.LoggingLevelInfo, map[string]any{"tool": t.name, "event": "answered", "status": resp.StatusCode, "request_id": resp.RequestID})
		s.changed(ctx, t.name, args, out)
		return out.result()
	}
}

// remember notes the ids the caller just used or got, for completions.
func (s *Server) remember(ctx context.Context, a arguments, out answer) {
	who := s.who(ctx)
	s.ids.add(who, "app_id", a.str("app_id"))
	s.ids.add(who, "campaign_id", a.str("campaign_id"))
	switch v := out.value.(type) {
	case *xpromo.RegisterAppResponse:
		s.ids.add(who, "app_id", v.AppID)
	case *xpromo.Campaign:
		s.ids.add(who, "campaign_id", v.CampaignID)
	}
}

// failed is the tool error for body, logged to the session.
func (s *Server) failed(ctx context.Context, t *tool, body errorBody) *mcp.CallToolResult {
	s.log(ctx, mcp.LoggingLevelWarning, map[string]any{"tool": t.name, "event": "failed", "error": body})
	return newErrorResult(body)
}

// answer is a tool's successful result: value becomes structuredContent;
// text, when set, is the text content instead of value's JSON.
type answer struct {
	value any
	text  string
}

func (a answer) result() (*mcp.CallToolResult, error) {
	text := a.text
	if text == "" {
		b, err := json.Marshal(a.value)
		if err != nil {
			return nil, err
		}
		text = string(b)
	}
	return mcp.NewToolResultStructured(a.value, text), nil
}
