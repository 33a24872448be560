// Package wire assembles the reference server from a store and a
// configuration: the domain services, the HTTP API and its middleware. cmd
// and the full-stack tests use it, so tests run exactly what ships.
package wire

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xpromo/xpromo/server/guide"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/storage"
)

// Config is the server's configuration (cmd fills it from flags and env).
type Config struct {
	Mode       string // httpapi.ModeTest or httpapi.ModeLive
	AdminToken string
	// BaseURL is the server's public URL, used in links it hands out
	// (checkout pages). Defaults to http://<listen address>.
	BaseURL string
	// RedisURL, when set, makes rate limits shared through Redis.
	RedisURL string
	// ReadLimit and WriteLimit are the requests allowed per minute per API
	// key (per IP unauthenticated) for reads (GET, HEAD) and writes; 0 means
	// the defaults, 600 and 60.
	ReadLimit, WriteLimit int
	Logger                *slog.Logger
	Now                   func() time.Time
	Registry              *prometheus.Registry
	// X402PayTo is the address x402 top-ups pay to ("" in test mode: the
	// zero address, since settlement is not enabled yet).
	X402PayTo string
	// X402Network is "base" or "base-sepolia"; "" means base-sepolia in
	// test mode, which accepts only the testnet.
	X402Network string
	// X402EURUSD is the EUR→USD quote (a decimal, e.g. "1.08") used to price
	// top-ups in USDC; "" means 1.
	X402EURUSD string
	// CategoriesFile is the operator's categories and floors (JSON, see
	// docs/marketplace.md); "" uses the catalogue shipped with the server.
	CategoriesFile string
}

// New builds the whole HTTP server on store.
func New(cfg Config, store storage.Store) (*httpapi.Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Mode == "" {
		cfg.Mode = httpapi.ModeTest
	}
	srv := httpapi.New(httpapi.Config{Store: store, Logger: cfg.Logger, Now: cfg.Now, Registry: cfg.Registry, Mode: cfg.Mode})
	svc := httpapi.Services{
		AdminToken: cfg.AdminToken,
		Guide:      guide.Markdown,
		BaseURL:    cfg.BaseURL,
		Ledger:     store,
	}
	var err error
	if svc.Apps, svc.Auth, err = appsServices(cfg, store); err != nil {
		return nil, fmt.Errorf("apps: %w", err)
	}
	if svc.Market, err = marketService(cfg, store); err != nil {
		return nil, fmt.Errorf("market: %w", err)
	}
	if svc.Payments, err = paymentsService(cfg, store); err != nil {
		return nil, fmt.Errorf("payments: %w", err)
	}
	if svc.Idempotency, err = idempotencyService(cfg, store); err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	if svc.Limiter, svc.ReadPolicy, svc.WritePolicy, err = rateLimiter(cfg); err != nil {
		return nil, fmt.Errorf("rate limits: %w", err)
	}
	srv.MountAPI(svc)
	mountMCP(cfg, srv)
	return srv, nil
}
