package assembly

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	gatesandbox "github.com/xpromo/xpromo/server/gate/sandbox"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/reputation/aivis"
	"github.com/xpromo/xpromo/server/reputation/appcast"
	"github.com/xpromo/xpromo/server/reputation/sandbox"
	"github.com/xpromo/xpromo/server/reputation/storeratings"
	"github.com/xpromo/xpromo/server/scoring"
	"github.com/xpromo/xpromo/server/storage"
)

// ScoringConfig configures the reputation signals' counterparts
// (docs/reputation.md, "The scoring job"). The zero value is test mode's:
// no model endpoint (AI visibility is unavailable, except for reserved
// names, which the sandbox answers), Apple's lookup for the US storefront.
type ScoringConfig struct {
	// An OpenAI-compatible chat-completions endpoint: base URL (…/v1),
	// model and API key (empty: none sent). NoJSONMode leaves out
	// response_format for servers that refuse it.
	ModelBaseURL, Model, ModelAPIKey string
	ModelNoJSONMode                  bool
	// StoreBaseURL is the iTunes Search API ("" is https://itunes.apple.com)
	// and StoreCountry its storefront ("" is us).
	StoreBaseURL, StoreCountry string
	// Period is how often an app is re-scored (0: scoring.DefaultPeriod).
	Period time.Duration
	// CanaryMinServed is how many canaries an app must have been served,
	// none clicked, for its behaviour's canary to be true (0:
	// scoring.DefaultCanaryMinServed).
	CanaryMinServed int64
	// AllowLoopback lets the model, the store and appcasts be on 127.0.0.1
	// and ::1 (tests). Test mode only.
	AllowLoopback bool
}

var errScoringLoopbackInLive = errors.New("scoring: the loopback setting lets appcast URLs reach the server's own machine; it is refused in live mode")

// scoringService builds the scoring job's service on the apps service.
func scoringService(cfg Config, store storage.Store, appsSvc *apps.Service) (*scoring.Service, error) {
	c := cfg.Scoring
	live := cfg.Mode != httpapi.ModeTest
	if live && c.AllowLoopback {
		return nil, errScoringLoopbackInLive
	}
	opts := outbound.Options{RequireHTTPS: live, TestOnlyAllowLoopback: c.AllowLoopback}
	svc := &scoring.Service{
		Apps:   appsSvc,
		Update: storage.Updater[scoring.Tx](store),
		View:   storage.Viewer[scoring.Tx](store),
		Period: c.Period,
		Now:    cfg.Now,
		Log:    cfg.Logger.With("component", "scoring"),
	}
	svc.CanaryMinServed = c.CanaryMinServed
	aiHTTP := outbound.New(withTimeout(opts, 60*time.Second))
	if c.ModelBaseURL != "" || c.Model != "" {
		ai, err := aivis.New(aivis.Config{BaseURL: c.ModelBaseURL, Model: c.Model, APIKey: c.ModelAPIKey, NoJSONMode: c.ModelNoJSONMode, HTTP: aiHTTP})
		if err != nil {
			return nil, fmt.Errorf("scoring: %w", err)
		}
		svc.Sources.AI = ai
	}
	feedHTTP := outbound.New(outbound.Options{RequireHTTPS: live, TestOnlyAllowLoopback: c.AllowLoopback, Timeout: 30 * time.Second, MaxResponseBytes: appcast.MaxFeedBytes})
	svc.Sources.Cadence = appcast.New(appcast.Config{HTTP: feedHTTP, Now: cfg.Now})
	storeHTTP := outbound.New(withTimeout(opts, 20*time.Second))
	reviews, err := storeratings.New(storeratings.Config{BaseURL: c.StoreBaseURL, Country: c.StoreCountry, HTTP: storeHTTP})
	if err != nil {
		return nil, fmt.Errorf("scoring: %w", err)
	}
	svc.Sources.Reviews = reviews

	// Test mode: apps with reserved domains (RFC 2606) are scored against
	// the built-in counterparts (a model, a store lookup, appcasts), through
	// the same clients; every other app against the sources above.
	if !live {
		sb := sandbox.New(cfg.Now)
		svc.Sandbox = &scoring.Sources{AI: sb.AI(aiHTTP), Cadence: sb.Cadence(feedHTTP), Reviews: sb.Reviews(storeHTTP)}
		svc.Reserved = gatesandbox.Reserved
		// A reserved app's appcast on a real host is still fetched for real.
	}
	return svc, nil
}

func withTimeout(o outbound.Options, d time.Duration) outbound.Options {
	o.Timeout = d
	return o
}

// DefaultScoringBudget is a scoring job's time budget: the model's minute,
// with room for the others (read at once).
const DefaultScoringBudget = 2 * time.Minute

// registerScoring makes the job runner run scoring jobs with svc.
func registerScoring(runner *jobs.Runner[storage.Tx], svc *scoring.Service) {
	runner.Handle(xpromo.JobScoring, DefaultScoringBudget, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
		out, err := svc.Run(ctx, j)
		res := jobs.Outcome[storage.Tx]{Result: out.Result}
		if out.Apply != nil {
			res.Apply = func(ctx context.Context, tx storage.Tx) error { return out.Apply(ctx, tx) }
		}
		return res, err
	})
}
