package assembly

import (
	"net/http"
	"net/url"

	"github.com/xpromo/xpromo/mcpserver"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/httpapi"
)

// inProcessBaseURL is the base URL of the MCP tools' REST client. It is
// never dialled: InProcessTransport hands every request to the server's own
// router, whatever its host (.invalid cannot resolve, RFC 2606).
const inProcessBaseURL = "http://xpromo.invalid"

// mountMCP serves the MCP tools at /mcp (docs/mcp.md): the mcpserver in
// front of this server's own REST API, reached in-process, each caller's
// Authorization header passed through to the REST call. Besides loopback
// names, /mcp accepts the Host of the base URL and of cfg.MCPAllowedOrigins,
// and browser pages of the base URL's origin and of cfg.MCPAllowedOrigins.
func mountMCP(cfg Config, srv *httpapi.Server) {
	c := xpromo.NewClient(inProcessBaseURL,
		// Not server/outbound: this transport calls the handler directly and
		// never opens a socket, so there is no address to guard.
		xpromo.WithHTTPClient(&http.Client{Transport: srv.InProcessTransport()}),
		xpromo.WithUserAgent("xpromo-mcp/"+mcpserver.Version),
		// An in-process call has no network to fail, and a rate limit is
		// settled at /mcp itself: never wait inside a tool call.
		xpromo.WithMaxRetryAfter(0),
	)
	opts := []mcpserver.HTTPOption{mcpserver.WithHTTPLogger(cfg.Logger), mcpserver.WithAllowedOrigins(cfg.MCPAllowedOrigins...)}
	if u, err := url.Parse(cfg.BaseURL); err == nil && u.Host != "" {
		opts = append(opts, mcpserver.WithAllowedHosts(u.Host), mcpserver.WithAllowedOrigins(u.Scheme+"://"+u.Host))
	}
	srv.MountMCP(mcpserver.New(c).HTTPHandler(opts...))
}
