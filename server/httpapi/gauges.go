package httpapi

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xpromo/xpromo/server/gauges"
)

// Defaults of GaugeCollector.
const (
	DefaultGaugeEvery   = 15 * time.Second
	DefaultGaugeTimeout = 2 * time.Second
)

// GaugeCollector serves the backlogs of package gauges on /metrics
// (docs/operations.md, "Metrics to watch"). The figures are read at scrape
// time, but at most once per Every, each read bounded by Timeout: scrapes
// in between (several Prometheus servers, several dashboards) answer the
// cached figures, and the database sees one read per Every whatever the
// scrape rate. A failed read never fails the scrape: the last figures read
// are served again, with xpromo_gauges_up at 0 and
// xpromo_gauges_stale_seconds telling how old they are; before any read
// succeeded, only those two series are served.
type GaugeCollector struct {
	// Read reads the figures at now (gauges.Read on the store).
	Read func(ctx context.Context, now time.Time) (gauges.Figures, error)
	// Now is the domain clock (the test clock in test mode): the figures'
	// ages are measured on it, like the times they are made of.
	Now func() time.Time
	// Wall is the clock of the cache and of staleness; nil means Now.
	Wall    func() time.Time
	Every   time.Duration // 0 means DefaultGaugeEvery
	Timeout time.Duration // 0 means DefaultGaugeTimeout
	Log     *slog.Logger  // nil discards

	mu    sync.Mutex
	tried time.Time // wall time of the last read, successful or not
	read  time.Time // wall time of the last successful read; zero before
	ok    bool      // whether the last read succeeded
	last  gauges.Figures
}

var (
	descPayouts        = prometheus.NewDesc("xpromo_payouts_pending", "Payouts not yet in a final state (sent or failed).", nil, nil)
	descPayoutsOldest  = prometheus.NewDesc("xpromo_payouts_pending_oldest_seconds", "Age of the oldest pending payout (0 when none).", nil, nil)
	descWebhooks       = prometheus.NewDesc("xpromo_webhook_backlog", "Webhook work waiting, by stage: undispatched (outbox events not yet fanned out to deliveries), due (deliveries whose attempt time passed).", []string{"stage"}, nil)
	descWebhooksOldest = prometheus.NewDesc("xpromo_webhook_backlog_oldest_seconds", "How long the oldest item of the stage has waited (0 when none): since its event was written (undispatched), since its attempt became due (due).", []string{"stage"}, nil)
	descJobs           = prometheus.NewDesc("xpromo_jobs_queue_depth", "Jobs a runner could claim now, by kind: queued and due, or running with a lease that ran out.", []string{"kind"}, nil)
	descJobsOldest     = prometheus.NewDesc("xpromo_jobs_oldest_runnable_seconds", "How long the oldest claimable job of the kind has been claimable (0 when none).", []string{"kind"}, nil)
	descSweepDue       = prometheus.NewDesc("xpromo_sweep_due", "Chains due for the clearing sweep and not yet settled: activated ones, and installed ones whose 72 h window closed.", nil, nil)
	descSweepLag       = prometheus.NewDesc("xpromo_sweep_lag_seconds", "How long the oldest chain due for the clearing sweep has been due (0 when none).", nil, nil)
	descGaugesUp       = prometheus.NewDesc("xpromo_gauges_up", "1 when the last read of the backlog gauges succeeded, 0 when it failed (the gauges then repeat the last figures read).", nil, nil)
	descGaugesStale    = prometheus.NewDesc("xpromo_gauges_stale_seconds", "Age of the backlog figures served: since the last successful read (-1 before any).", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *GaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPayouts, descPayoutsOldest, descWebhooks, descWebhooksOldest,
		descJobs, descJobsOldest, descSweepDue, descSweepLag, descGaugesUp, descGaugesStale} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads the figures if the
// last read is Every old, then serves them.
func (c *GaugeCollector) Collect(ch chan<- prometheus.Metric) {
	f, read, ok, wall := c.figures()
	up, stale := 0.0, -1.0
	if ok {
		up = 1
	}
	if !read.IsZero() {
		stale = max(wall.Sub(read).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(descGaugesUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(descGaugesStale, prometheus.GaugeValue, stale)
	if read.IsZero() {
		return // nothing read yet: no figure rather than a false 0
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	age := func(b gauges.Backlog) float64 { return b.Age(f.At).Seconds() }
	gauge(descPayouts, float64(f.PendingPayouts.Count))
	gauge(descPayoutsOldest, age(f.PendingPayouts))
	gauge(descWebhooks, float64(f.UndispatchedEvents.Count), "undispatched")
	gauge(descWebhooksOldest, age(f.UndispatchedEvents), "undispatched")
	gauge(descWebhooks, float64(f.DueWebhookDeliveries.Count), "due")
	gauge(descWebhooksOldest, age(f.DueWebhookDeliveries), "due")
	for _, k := range gauges.JobKinds {
		gauge(descJobs, float64(f.RunnableJobs[k].Count), string(k))
		gauge(descJobsOldest, age(f.RunnableJobs[k]), string(k))
	}
	gauge(descSweepDue, float64(f.DueSettlements.Count))
	gauge(descSweepLag, age(f.DueSettlements))
}

// figures returns the figures to serve, reading them first when the last
// read (successful or not) is Every old: a database that is down is asked
// once per Every, not on every scrape.
func (c *GaugeCollector) figures() (f gauges.Figures, read time.Time, ok bool, wall time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wallNow := c.Wall
	if wallNow == nil {
		wallNow = c.Now
	}
	wall = wallNow()
	every, timeout := c.Every, c.Timeout
	if every <= 0 {
		every = DefaultGaugeEvery
	}
	if timeout <= 0 {
		timeout = DefaultGaugeTimeout
	}
	if c.tried.IsZero() || wall.Sub(c.tried) >= every || wall.Before(c.tried) {
		c.tried = wall
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		got, err := c.Read(ctx, c.Now())
		cancel()
		c.ok = err == nil
		if err == nil {
			c.last, c.read = got, wall
		} else if c.Log != nil {
			c.Log.Warn("reading the backlog gauges", slog.String("error", err.Error()))
		}
	}
	return c.last, c.read, c.ok, wall
}
