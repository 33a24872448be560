// Command xpromo-mcp serves the xpromo tools to an MCP client over stdio.
//
// Configuration, from the environment:
//
//	XPROMO_BASE_URL  the xpromo server (default http://127.0.0.1:8080)
//	XPROMO_API_KEY   the app's API key (optional: register_app and the
//	                 public tools work without it)
//
// After register_app the session uses the key it issued, so an agent can
// register an app and go on; the key is shown once in register_app's
// answer, so store it in XPROMO_API_KEY for later sessions.
//
// Logs go to stderr; stdout carries the protocol only.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/xpromo/xpromo/mcpserver"
	"github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

const defaultBaseURL = "http://127.0.0.1:8080"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "xpromo-mcp:", err)
		os.Exit(1)
	}
}

func run() error {
	for _, arg := range os.Args[1:] {
		switch arg {
		case "-version", "--version":
			fmt.Println("xpromo-mcp", mcpserver.Version)
			return nil
		case "-h", "-help", "--help":
			fmt.Fprintln(os.Stderr, "usage: xpromo-mcp (an MCP server on stdin/stdout)\n\n"+
				"environment:\n"+
				"  XPROMO_BASE_URL  the xpromo server (default "+defaultBaseURL+")\n"+
				"  XPROMO_API_KEY   the app's API key (optional)\n"+
				"  XPROMO_X402_WALLET_KEY_FILE  a file holding a secp256k1 private key (64 hex digits):\n"+
				"                   top_up with prefer_x402 then pays the x402 challenge in USDC itself (optional)")
			return nil
		default:
			return fmt.Errorf("unknown argument %q (configure with XPROMO_BASE_URL and XPROMO_API_KEY)", arg)
		}
	}
	baseURL := os.Getenv("XPROMO_BASE_URL")
	if baseURL == "" {
		baseURL = defaultBaseURL
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := xpromo.NewClient(baseURL,
		xpromo.WithAPIKey(os.Getenv("XPROMO_API_KEY")),
		xpromo.WithUserAgent("xpromo-mcp/"+mcpserver.Version),
		// A rate limit is the agent's to wait out: answer it at once.
		xpromo.WithMaxRetryAfter(0),
	)
	if f := os.Getenv("XPROMO_X402_WALLET_KEY_FILE"); f != "" {
		w, err := x402.ReadWalletFile(f)
		if err != nil {
			return err
		}
		c = c.With(xpromo.WithX402Wallet(w))
		logger.Info("x402 wallet loaded: top_up with prefer_x402 pays challenges itself", "address", w.Address())
	}
	// Fail early on a malformed URL rather than on every tool call.
	if c.BaseURL() == "" {
		_, err := c.GetRateCard(context.Background())
		return err
	}
	s := mcpserver.New(c, mcpserver.WithIssuedKeyRemembered())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger.Info("serving MCP over stdio", "base_url", c.BaseURL(), "api_key_set", c.APIKey() != "")
	return s.ServeStdio(ctx, os.Stdin, os.Stdout, logger)
}
