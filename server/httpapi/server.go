// Package httpapi is the reference server's HTTP layer: the router, the
// middleware every request goes through (request id, access log, metrics,
// panic recovery), the operational endpoints (/healthz, /readyz, /metrics) and
// the JSON error body.
//
// Handlers stay thin: they decode, call a domain component, and encode. The
// domain packages know nothing about HTTP.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Pinger is what readiness needs from the store: a cheap round trip.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Modes the server runs in.
const (
	ModeTest = "test"
	ModeLive = "live"
)

// DefaultReadyTimeout bounds the store ping behind /readyz, so a hung
// database turns into a 503 quickly instead of a probe timeout.
const DefaultReadyTimeout = 2 * time.Second

// Config is what New needs. Only Store is required.
type Config struct {
	Store  Pinger
	Logger *slog.Logger     // nil discards logs
	Now    func() time.Time // the injected clock for handlers; nil means time.Now
	// Registry receives the HTTP metrics and is served on /metrics. nil means
	// a fresh NewRegistry(). Pass the process's registry so other components'
	// metrics appear on the same endpoint.
	Registry *prometheus.Registry
	Mode     string // ModeTest or ModeLive; test mode is announced on every response
	// ReadyTimeout bounds the store ping of /readyz; 0 means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// BodyReaders is how many requests may send a body at once (bodyGate;
	// the rest are answered 503); 0 means DefaultBodyReaders.
	BodyReaders int
	// Gauges, when set, serves the store's backlogs on /metrics
	// (GaugeCollector).
	Gauges *GaugeCollector
}

// Server is the HTTP API. It is an http.Handler.
type Server struct {
	store        Pinger
	log          *slog.Logger
	now          func() time.Time
	registry     *prometheus.Registry
	metrics      *metrics
	mode         string
	readyTimeout time.Duration
	router       *chi.Mux
	services     Services // set by MountAPI
	bodySlots    chan struct{}
}

// New builds the server with its middleware and operational routes.
func New(cfg Config) *Server {
	if cfg.Store == nil {
		panic("httpapi: Config.Store is required")
	}
	s := &Server{
		store:        cfg.Store,
		log:          cfg.Logger,
		now:          cfg.Now,
		registry:     cfg.Registry,
		mode:         cfg.Mode,
		readyTimeout: cfg.ReadyTimeout,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.registry == nil {
		s.registry = NewRegistry()
	}
	if s.mode == "" {
		s.mode = ModeTest
	}
	if s.readyTimeout <= 0 {
		s.readyTimeout = DefaultReadyTimeout
	}
	if cfg.BodyReaders <= 0 {
		cfg.BodyReaders = DefaultBodyReaders
	}
	s.bodySlots = make(chan struct{}, cfg.BodyReaders)
	s.metrics = newMetrics(s.registry)
	if cfg.Gauges != nil {
		register(s.registry, cfg.Gauges) // a second server on the registry shares the first one's
	}

	r := chi.NewRouter()
	// Order matters: the request id must exist before anything logs; the
	// access log and metrics wrap recovery so a recovered panic is counted
	// and logged as the 500 it became. bodyGate bounds the bodies read at
	// once, before any route reads one.
	r.Use(s.requestID, s.observe, s.recoverer, s.announceMode, s.bodyGate, middleware.GetHead)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)

	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{
		Registry:          s.registry, // also counts scrape errors
		EnableOpenMetrics: true,
	}))
	s.router = r
	return s
}

// Router returns the router so other issues' handlers can be mounted, e.g.
// s.Router().Route("/v1", ...). Routes added there go through the same
// middleware and answer unknown paths and methods with the same JSON errors.
// Middleware cannot be added to the root any more (chi forbids Use after the
// first route); use Group or With for per-route middleware.
func (s *Server) Router() chi.Router { return s.router }

// Now returns the injected clock's current time, for handlers.
func (s *Server) Now() time.Time { return s.now() }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.router.ServeHTTP(w, r)
}
