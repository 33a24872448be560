package mcpserver

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// What the server tells a session besides answers: log records
// (notifications/message, at or above the level the client set with
// logging/setLevel; none before it does) and resource updates
// (notifications/resources/updated, for the resources it subscribed to).
// Both go out during the session's own requests (over HTTP, on the
// response stream of the tool call), since the server sends nothing
// outside a request.

// Logger names of the session's log records.
const (
	loggerTools  = "xpromo-mcp"    // the tool calls of this server
	loggerServer = "xpromo-server" // the REST API's own records (ForwardLogs)
)

// log sends a log record to the session of ctx, if it asked for that level.
func (s *Server) log(ctx context.Context, level mcp.LoggingLevel, data any) {
	sendLog(ctx, loggerTools, level, data)
}

func sendLog(ctx context.Context, logger string, level mcp.LoggingLevel, data any) {
	srv := server.ServerFromContext(ctx)
	if srv == nil || server.ClientSessionFromContext(ctx) == nil {
		return
	}
	// An error means the session cannot take log records (not
	// initialized, or no logging): nothing to tell anyone.
	_ = srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(level, logger, data))
}

// ForwardLogs returns a slog handler that passes every record to next and
// also sends it, as a log record of logger "xpromo-server", to the MCP
// session its context belongs to: on a server whose MCP tools call its own
// REST API in-process (the reference server), a session sees the server's
// records of the requests made for it (method, path, status, request id).
func ForwardLogs(next slog.Handler) slog.Handler { return forwardLogs{next: next} }

type forwardLogs struct {
	next  slog.Handler
	attrs []slog.Attr
}

func (h forwardLogs) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l) || server.ClientSessionFromContext(ctx) != nil
}

func (h forwardLogs) Handle(ctx context.Context, r slog.Record) error {
	if server.ClientSessionFromContext(ctx) != nil {
		data := map[string]any{"msg": r.Message}
		add := func(a slog.Attr) bool {
			data[a.Key] = a.Value.Resolve().Any()
			return true
		}
		for _, a := range h.attrs {
			add(a)
		}
		r.Attrs(add)
		sendLog(ctx, loggerServer, mcpLevel(r.Level), data)
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h forwardLogs) WithAttrs(as []slog.Attr) slog.Handler {
	return forwardLogs{next: h.next.WithAttrs(as), attrs: append(slices.Clip(h.attrs), as...)}
}

// WithGroup keeps the group for next only: a session gets flat records.
func (h forwardLogs) WithGroup(name string) slog.Handler {
	return forwardLogs{next: h.next.WithGroup(name), attrs: h.attrs}
}

func mcpLevel(l slog.Level) mcp.LoggingLevel {
	switch {
	case l < slog.LevelInfo:
		return mcp.LoggingLevelDebug
	case l < slog.LevelWarn:
		return mcp.LoggingLevelInfo
	case l < slog.LevelError:
		return mcp.LoggingLevelWarning
	default:
		return mcp.LoggingLevelError
	}
}

// subscriptions are the resources each session subscribed to, by session
// id, dropped after SessionIdleTTL without a subscribe.
type subscriptions struct {
	mu   sync.Mutex
	uris map[string]map[string]bool
	seen map[string]time.Time
}

func newSubscriptions() *subscriptions {
	return &subscriptions{uris: map[string]map[string]bool{}, seen: map[string]time.Time{}}
}

func sessionID(ctx context.Context) string {
	if sess := server.ClientSessionFromContext(ctx); sess != nil {
		return sess.SessionID()
	}
	return ""
}

func (s *subscriptions) subscribe(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
	id := sessionID(ctx)
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for sid, t := range s.seen {
		if now.Sub(t) > SessionIdleTTL {
			delete(s.seen, sid)
			delete(s.uris, sid)
		}
	}
	if s.uris[id] == nil {
		s.uris[id] = map[string]bool{}
	}
	s.uris[id][req.Params.URI] = true
	s.seen[id] = now
}

func (s *subscriptions) unsubscribe(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.uris[sessionID(ctx)], req.Params.URI)
}

// matching returns the URIs the session of ctx subscribed to that are uri
// itself or uri with a query (a ledger read with ?limit=…).
func (s *subscriptions) matching(ctx context.Context, uri string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for u := range s.uris[sessionID(ctx)] {
		if u == uri || strings.HasPrefix(u, uri+"?") {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// changed tells the session of ctx which of its subscribed resources the
// successful call of tool just changed. The server knows of the changes
// made through its own tools only: the ledger after a payout or a paid
// (x402) top-up. Changes made elsewhere (a checkout paid in a browser,
// installs, an operator) reach no subscriber: read the resource again.
func (s *Server) changed(ctx context.Context, tool string, a arguments, out answer) {
	var uris []string
	switch tool {
	case "request_payout":
		uris = append(uris, appURI(a.str("app_id"), "ledger"))
	case "top_up":
		if _, paid := out.value.(*xpromo.LedgerLine); paid {
			uris = append(uris, appURI(a.str("app_id"), "ledger"))
		}
	}
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return
	}
	for _, uri := range uris {
		for _, u := range s.subs.matching(ctx, uri) {
			_ = srv.SendNotificationToClient(ctx, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": u})
		}
	}
}

// known remembers, per caller, the app and campaign ids the API showed
// it (register_app, create_campaign, and any call that succeeded on an
// app_id): completion/complete offers them. The API has no endpoint that
// lists a key's app or campaigns, so these are all the server can offer.
type known struct {
	mu  sync.Mutex
	ids map[[32]byte]map[string][]string // caller → argument name → ids, newest last
}

const maxKnownIDs = 50

func (k *known) add(who [32]byte, name, id string) {
	if id == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ids == nil {
		k.ids = map[[32]byte]map[string][]string{}
	}
	if len(k.ids) > 10_000 {
		clear(k.ids) // a bound on memory; completions are a convenience
	}
	if k.ids[who] == nil {
		k.ids[who] = map[string][]string{}
	}
	ids := slices.DeleteFunc(k.ids[who][name], func(x string) bool { return x == id })
	ids = append(ids, id)
	if len(ids) > maxKnownIDs {
		ids = ids[len(ids)-maxKnownIDs:]
	}
	k.ids[who][name] = ids
}

func (k *known) list(who [32]byte, name string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.ids[who][name])
}

// who identifies the caller of ctx for known: its credentials, hashed.
func (s *Server) who(ctx context.Context) [32]byte {
	if auth, ok := authorizationFrom(ctx); ok {
		return sha256.Sum256([]byte("http\x00" + auth))
	}
	return sha256.Sum256([]byte("session\x00" + s.APIKey()))
}
