package httpapi

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns a registry with the Go runtime and process collectors,
// for the process's /metrics. A dedicated registry (rather than the global
// default one) keeps tests independent and the exposition deliberate.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
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
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"})),
	}
}

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
	method = metricMethod(method)
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(method, route).Observe(d.Seconds())
}

func metricMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return m
	}
	return "other"
}
