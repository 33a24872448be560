package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// SessionIdleTTL is how long an HTTP session's state (its log level and
// resource subscriptions) is kept after its last request, when the client
// never ends it with DELETE.
const SessionIdleTTL = 30 * time.Minute

// HTTPOption configures HTTPHandler.
type HTTPOption func(*httpConfig)

type httpConfig struct {
	logger  *slog.Logger
	origins []string // allowed origins besides loopback ones, "*" for any
	hosts   []string // allowed Host names besides loopback ones
}

// WithHTTPLogger sets the logger of transport errors (nil discards them).
func WithHTTPLogger(l *slog.Logger) HTTPOption {
	return func(c *httpConfig) { c.logger = l }
}

// WithAllowedOrigins allows browser pages of these origins
// ("https://app.example.com", scheme://host[:port]) to call the endpoint,
// besides loopback origins (http://localhost:…, http://127.0.0.1:…,
// http://[::1]:…), which are always allowed. "*" allows every origin. The
// host of each origin is also accepted in the Host header.
func WithAllowedOrigins(origins ...string) HTTPOption {
	return func(c *httpConfig) {
		for _, o := range origins {
			o = strings.TrimSuffix(strings.TrimSpace(o), "/")
			if o == "" {
				continue
			}
			c.origins = append(c.origins, strings.ToLower(o))
			if u, err := url.Parse(o); err == nil && u.Hostname() != "" {
				c.hosts = append(c.hosts, strings.ToLower(u.Hostname()))
			}
		}
	}
}

// WithAllowedHosts accepts requests whose Host header names one of these
// hosts (a name or address, with or without a port: the port is not
// compared), besides loopback hosts, which are always accepted. A server
// reached under a public name must list it (the reference server lists the
// host of its base URL).
func WithAllowedHosts(hosts ...string) HTTPOption {
	return func(c *httpConfig) {
		for _, h := range hosts {
			if h = hostname(strings.TrimSpace(h)); h != "" {
				c.hosts = append(c.hosts, h)
			}
		}
	}
}

// HTTPHandler serves the server over the Streamable HTTP transport.
//
//   - Sessions: initialize answers an Mcp-Session-Id, which the client sends
//     with its later requests; the session's log level (logging/setLevel)
//     and resource subscriptions are kept under it, in this process, until
//     DELETE or SessionIdleTTL of silence. The id itself is not checked
//     against a list, so any instance accepts any session (only the log
//     level and subscriptions are per instance). Clients of protocol
//     2026-07-28 use no sessions at all.
//   - POST carries the requests; a tool call that sends notifications (log
//     messages, resource updates) answers as an SSE stream, otherwise as
//     JSON. GET answers 405: the server sends nothing outside a request.
//   - Credentials: each request's Authorization header is passed through to
//     the REST calls of its tools (ContextWithAuthorization); the session's
//     key is never used and register_app's key is never remembered.
//   - DNS rebinding: a request whose Host is not a loopback name nor one of
//     WithAllowedHosts, or whose Origin (when sent: browsers send it) is not
//     a loopback origin nor one of WithAllowedOrigins, is answered 403
//     before anything else, as the MCP specification requires of Streamable
//     HTTP servers.
//   - Bodies: mcp-go reads a POST's body whole and decodes it with
//     encoding/json, so whoever mounts the handler bounds the body first
//     (the reference server's httpapi.MountMCP: 1 MiB, jsonbound's structure
//     limits, one message rather than a batch).
func (s *Server) HTTPHandler(opts ...HTTPOption) http.Handler {
	cfg := httpConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	h := server.NewStreamableHTTPServer(s.mcp,
		server.WithDisableStreaming(true),
		server.WithSessionIdleTTL(SessionIdleTTL),
		// The guard below does the same job, with an allow-list, for every
		// connection (mcp-go's only for loopback ones).
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(cfg.logger),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			return ContextWithAuthorization(ctx, r.Header.Get("Authorization"))
		}),
	)
	return &originGuard{next: h, origins: cfg.origins, hosts: cfg.hosts}
}

// originGuard refuses requests a browser may have been tricked into sending:
// DNS rebinding (a hostile page whose name resolves to this server, so Host
// is the page's name) and cross-origin calls (Origin is the page's).
type originGuard struct {
	next    http.Handler
	origins []string
	hosts   []string
}

func (g *originGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.hostAllowed(r.Host) {
		forbid(w, fmt.Sprintf("Host %q is not allowed on this MCP endpoint (list it in the server's allowed hosts or origins)", r.Host))
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin) {
		forbid(w, fmt.Sprintf("Origin %q is not allowed on this MCP endpoint (list it in the server's allowed origins)", origin))
		return
	}
	g.next.ServeHTTP(w, r)
}

func (g *originGuard) hostAllowed(host string) bool {
	name := hostname(host)
	return isLoopback(name) || slices.Contains(g.hosts, name)
}

func (g *originGuard) originAllowed(origin string) bool {
	origin = strings.ToLower(strings.TrimSuffix(origin, "/"))
	if slices.Contains(g.origins, "*") || slices.Contains(g.origins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false // including the opaque "null" origin
	}
	return isLoopback(u.Hostname())
}

// hostname is the lower-case host of a Host header value or host[:port],
// without brackets or port.
func hostname(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}

func isLoopback(name string) bool {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.IsLoopback()
}

// forbid answers 403 with a JSON-RPC error without id, as the MCP
// specification suggests for a refused Origin.
func forbid(w http.ResponseWriter, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	json.NewEncoder(w).Encode(mcp.JSONRPCError{
		JSONRPC: mcp.JSONRPC_VERSION,
		Error:   mcp.NewJSONRPCErrorDetails(mcp.INVALID_REQUEST, message, nil),
	})
}
