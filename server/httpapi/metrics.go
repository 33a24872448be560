package httpapi

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns a registry with the Go runtime and process collectors,
// for the process's /metrics. A dedicated registry (rather than the global
// default one) keeps tests independent and the exposition deliberate.
//
// The Go collector adds the runtime's scheduler metrics to its defaults:
// go_sched_latencies_seconds (how long goroutines stood runnable before a
// core ran them) and go_sched_pauses_* (the stop-the-world pauses) tell a
// request that waited for a core from one that waited on something the
// server holds (BENCHMARKS.md, "Fills while money moves").
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsScheduler)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// durationBuckets are Prometheus's default buckets (5 ms to 10 s) with 1 and
// 2.5 ms below them: a fill is answered in about a millisecond and its aim
// is 10 ms at p99, which the default's first bucket, 5 ms, cannot resolve.
var durationBuckets = append([]float64{0.001, 0.0025}, prometheus.DefBuckets...)

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	retries  *prometheus.CounterVec
	series   sync.Map // seriesKey → *series
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		requests: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xpromo_http_requests_total",
			Help: "HTTP requests served, by method, chi route pattern and status code.",
		}, []string{"method", "route", "status"})),
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "xpromo_http_request_duration_seconds",
			Help:    "Time to serve HTTP requests, by method and chi route pattern.",
			Buckets: durationBuckets,
		}, []string{"method", "route"})),
		retries: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xpromo_http_request_retries_total",
			Help: "Runs of keyed requests (Idempotency-Key) run again inside the server, by reason: conflict, unavailable. The client saw only the last run's answer.",
		}, []string{"reason"})),
	}
}

// retry counts one run of a keyed request that is run again.
func (m *metrics) retry(reason string) { m.retries.WithLabelValues(reason).Inc() }

// register registers c, or returns the identical collector already registered
// (two servers sharing one registry share the series instead of panicking).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

// observe records one request. method is bounded by net/http's parser
// accepting only tokens, but arbitrary tokens are possible, so unknown
// methods are folded into one label value.
func (m *metrics) observe(method, route string, status int, d time.Duration) {
	key := seriesKey{metricMethod(method), route, status}
	s, ok := m.series.Load(key)
	if !ok {
		// Resolved once per method, route and status (a bounded set: routes
		// are patterns, methods are folded, statuses are the API's), not on
		// each request: WithLabelValues hashes its labels every time.
		s, _ = m.series.LoadOrStore(key, &series{
			requests: m.requests.WithLabelValues(key.method, route, strconv.Itoa(status)),
			duration: m.duration.WithLabelValues(key.method, route),
		})
	}
	s.(*series).requests.Inc()
	s.(*series).duration.Observe(d.Seconds())
}

type seriesKey struct {
	method, route string
	status        int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func metricMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return m
	}
	return "other"
}
