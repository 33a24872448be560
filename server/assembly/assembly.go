// Package assembly assembles the reference server from a store and a
// configuration: the domain services, the HTTP API and its middleware. cmd
// and the full-stack tests use it, so tests run exactly what ships.
package assembly

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xpromo/xpromo/mcpserver"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/dashboard"
	"github.com/xpromo/xpromo/server/dashboard/session"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/guide"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/lifecycle"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/payments/stripe"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/webhooks"
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
	// X402Facilitator is the x402 facilitator's base URL ("": x402 payments
	// are refused; live mode requires one). X402RPC is the chain's JSON-RPC
	// URL for the reconciliation pass ("": unanswered settlements stay
	// pending). In test mode both may be on loopback (x402-devchain).
	X402Facilitator, X402RPC string
	// X402RateURL, when set, is the rate endpoint quoting each x402
	// challenge (server/x402.RateSource) instead of X402EURUSD.
	X402RateURL string
	// X402PayTo is the address x402 top-ups pay to ("" in test mode: the
	// zero address, which cannot be paid: x402 payments are then refused).
	X402PayTo string
	// X402Network is "base" or "base-sepolia"; "" means base-sepolia in
	// test mode, which accepts only the testnet.
	X402Network string
	// X402EURUSD is the EUR→USD quote (a decimal, e.g. "1.08") used to price
	// top-ups in USDC; "" means 1.
	X402EURUSD string
	// Stripe (live mode; docs/payments.md, docs/operations.md). Test mode
	// ignores them: its provider moves no money.

	// StripeSecretKey is the platform's secret key (sk_live_…); a test key
	// only with StripeAPIURL pointing elsewhere than Stripe (CheckStripe).
	StripeSecretKey string
	// StripeWebhookSecrets verify POST /v1/stripe/webhook (several while
	// one is rolled).
	StripeWebhookSecrets []string
	// StripeAPIURL is Stripe's API base URL ("" is https://api.stripe.com).
	StripeAPIURL string
	// StripeConnectCountry is the country of the apps' Express accounts.
	StripeConnectCountry string
	// StripeSuccessURL and StripeCancelURL are where Checkout sends the
	// payer back ("" is the base URL); StripeConnectReturnURL where the
	// Connect onboarding does ("" is the base URL).
	StripeSuccessURL, StripeCancelURL, StripeConnectReturnURL string
	// StripeHTTPClient overrides the outbound client Stripe is called
	// through (tests: one that may reach stripe-mock on loopback).
	StripeHTTPClient *http.Client
	// StripeMaxNetworkRetries overrides stripe-go's retries (nil: 2).
	StripeMaxNetworkRetries *int64
	// CheckoutReconcileAge is how old an open session is before the
	// reconciliation pass asks Stripe about it (0: 15 minutes).
	CheckoutReconcileAge time.Duration

	// MCPAllowedOrigins are the browser origins (scheme://host[:port], or
	// "*") allowed to call /mcp besides loopback ones and the base URL's;
	// their hosts are accepted in the Host header too (docs/mcp.md).
	MCPAllowedOrigins []string
	// BodyReaders: requests that may send a body at once
	// (httpapi.Config.BodyReaders); 0: httpapi.DefaultBodyReaders.
	BodyReaders int
	// CategoriesFile is the operator's categories and floors (JSON, see
	// docs/marketplace.md); "" uses the catalogue shipped with the server.
	CategoriesFile string

	// Attribution (docs/attribution.md).

	// OfferSecret is the MAC secret that seals offers (at least 32 bytes),
	// shared by every instance; "" draws a random one in test mode and is
	// refused in live mode. PreviousOfferSecrets still verify offers sealed
	// before a rotation (keep them for 30 minutes).
	OfferSecret          string
	PreviousOfferSecrets []string
	// IPToASNFile is an iptoasn.com TSV table (optionally gzipped);
	// DatacentersFile replaces the shipped datacenter list (AS numbers and
	// prefixes, one per line).
	IPToASNFile, DatacentersFile string
	// TrustedProxies are the proxies whose X-Forwarded-For the SDK
	// endpoints believe for the client's address; none by default.
	TrustedProxies []netip.Prefix
	// FraudRules are the fraud rules' thresholds (zero fields: defaults).
	FraudRules attribution.Rules
	// CanaryRate makes one fill in CanaryRate, on average, a canary
	// (docs/apps.md "Canary check"); 0 serves none (the server's flag
	// defaults to 200).
	CanaryRate int
	// SweepInterval is how often RunBackground sweeps; 0 means
	// DefaultSweepInterval.
	SweepInterval time.Duration

	// Lifecycle are the lifecycle review's thresholds and the go-live bar
	// (docs/apps.md "Lifecycle"; zero fields: defaults). RunBackground
	// runs the review every Lifecycle.ReviewEvery.
	Lifecycle lifecycle.Rules

	// WebhooksAllowLoopback lets webhook endpoints be on 127.0.0.1 and ::1
	// (any port), for a receiver on the developer's machine (make demo).
	// Test mode only: Build refuses it in live mode.
	WebhooksAllowLoopback bool

	// Instance is this process's instance id, held in the store by
	// HoldInstance: recorded on idempotency claims, so that another process
	// takes over the claims of a dead one at once. "" records none (claims
	// of a dead process wait out their 60 s lease).
	Instance string

	// JobConcurrency is how many background jobs RunJobs runs at once (0:
	// jobs.DefaultConcurrency); JobInterval how often it looks for due ones
	// (0: jobs.DefaultInterval).
	JobConcurrency int
	JobInterval    time.Duration

	// Gate configures the vetting gate's checks (docs/gate.md).
	Gate GateConfig
	// Scoring configures the reputation signals (docs/reputation.md).
	Scoring ScoringConfig
}

// Server is the assembled server: the HTTP API and what its background
// work (RunBackground) needs.
type Server struct {
	HTTP        *httpapi.Server
	Apps        *apps.Service
	Attribution *attribution.Service
	Market      *market.Service
	Payments    *payments.Service
	Webhooks    *webhooks.Service
	// Gate runs the vetting gate's jobs and backs its endpoints.
	Gate *gate.Service
	// Jobs runs the background jobs (RunJobs); handlers are registered on
	// it before RunJobs starts.
	Jobs *jobs.Runner[storage.Tx]
	// Clock is the clock of every domain: cfg.Now plus the test clock's
	// offset (moved by POST /v1/admin/clock/advance in test mode).
	Clock *Clock
	// Lifecycle is the review that suspends apps and claws back fraud
	// (RunBackground runs it; tests call Review directly).
	Lifecycle *lifecycle.Service
	cfg       Config
}

// startupTimeout bounds the store reads Build makes.
const startupTimeout = 30 * time.Second

// New builds the whole HTTP server on store.
func New(cfg Config, store storage.Store) (*httpapi.Server, error) {
	s, err := Build(cfg, store)
	if err != nil {
		return nil, err
	}
	return s.HTTP, nil
}

// Build assembles the server on store: the domain services, all on one
// clock (cfg.Now wrapped in the test clock), and the HTTP API. Every service
// runs its transactions through storage.Units, so that a request sent with
// an Idempotency-Key commits as one unit with its stored answer.
func Build(cfg Config, store storage.Store) (*Server, error) {
	store = storage.Units(store)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Mode == "" {
		cfg.Mode = httpapi.ModeTest
	}
	// What test mode keeps in the store (server/testmode) is read once, at
	// start: the test clock's offset here, the offer secret below.
	startup, cancel := context.WithTimeout(context.Background(), startupTimeout)
	defer cancel()
	wall := cfg.Now // the dashboard's sessions expire on it, not on the test clock
	clock := NewClock(cfg.Now, cfg.Mode == httpapi.ModeTest)
	if err := clock.keepIn(startup, store); err != nil {
		return nil, err
	}
	cfg.Now = clock.Now
	// The REST API's records of requests made by an MCP tool call also go
	// to that MCP session (logging/setLevel, docs/mcp.md).
	apiLog := slog.New(mcpserver.ForwardLogs(cfg.Logger.Handler()))
	srv := httpapi.New(httpapi.Config{Store: store, Logger: apiLog, Now: cfg.Now, Registry: cfg.Registry, Mode: cfg.Mode,
		BodyReaders: cfg.BodyReaders, Gauges: gaugeCollector(cfg, store, wall)})
	svc := httpapi.Services{
		AdminToken:     cfg.AdminToken,
		Guide:          guide.Markdown,
		GuideProtocol:  guide.Protocol,
		GuideVectors:   guide.Vectors,
		BaseURL:        cfg.BaseURL,
		Ledger:         store,
		Clock:          clock,
		TrustedProxies: cfg.TrustedProxies,
	}
	var err error
	if svc.Webhooks, err = webhooksService(cfg, store); err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	if svc.Apps, svc.Auth, err = appsServices(cfg, store); err != nil {
		return nil, fmt.Errorf("apps: %w", err)
	}
	if svc.Market, err = marketService(cfg, store); err != nil {
		return nil, fmt.Errorf("market: %w", err)
	}
	var hook *stripe.Webhook
	if svc.Payments, hook, err = paymentsService(cfg, store); err != nil {
		return nil, fmt.Errorf("payments: %w", err)
	}
	if hook != nil {
		svc.StripeWebhook = hook
	}
	if svc.Attribution, err = attributionService(startup, cfg, store, svc.Market); err != nil {
		return nil, fmt.Errorf("attribution: %w", err)
	}
	if svc.Idempotency, err = idempotencyService(cfg, store); err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	svc.Apps.StatusChanged = statusChanged(svc.Market, svc.Attribution)
	svc.Complaints = complaintsService(cfg, store)
	life, err := lifecycleService(cfg, store, svc.Market, svc.Attribution)
	if err != nil {
		return nil, fmt.Errorf("lifecycle: %w", err)
	}
	svc.Lifecycle = life
	if svc.Limiter, svc.ReadPolicy, svc.WritePolicy, err = rateLimiter(cfg); err != nil {
		return nil, fmt.Errorf("rate limits: %w", err)
	}
	if svc.Gate, err = gateService(cfg, store, svc.Apps); err != nil {
		return nil, err
	}
	scorer, err := scoringService(cfg, store, svc.Apps)
	if err != nil {
		return nil, err
	}
	runner := jobRunner(cfg, store)
	registerGate(cfg, runner, svc.Gate)
	registerScoring(runner, scorer)
	// Sessions and sign-in links live on the wall clock: advancing the test
	// clock 48 hours must not sign the operator out who did it.
	sessions := &session.Service{Update: session.Txer(storage.Updater[session.Tx](store)), Now: wall}
	svc.SignInLinks = sessions
	srv.MountAPI(svc)
	mountMCP(cfg, srv)
	dashboard.Mount(dashboard.Config{API: srv, Services: svc, Sessions: sessions, Mode: cfg.Mode, Logger: cfg.Logger})
	return &Server{HTTP: srv, Apps: svc.Apps, Attribution: svc.Attribution, Market: svc.Market, Payments: svc.Payments, Webhooks: svc.Webhooks, Gate: svc.Gate, Lifecycle: life, Jobs: runner, Clock: clock, cfg: cfg}, nil
}
