package postgres

import "github.com/prometheus/client_golang/prometheus"

// metrics are what an operator watches through a failover: the database
// failures by class (unavailableClass) and the transactions run again, by
// reason. Collectors hands them to the process's registry.
type metrics struct {
	errors  *prometheus.CounterVec
	retries *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xpromo_db_errors_total",
			Help: "Database failures by class: connection, read_only, shutdown, busy, timeout, commit_unknown (PostgreSQL).",
		}, []string{"class"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xpromo_db_retries_total",
			Help: "Transactions run again inside the server, by reason: conflict, missing_accounts, unavailable (PostgreSQL).",
		}, []string{"reason"}),
	}
	// Every label value exists from the start, so a rate() sees the first.
	for _, c := range []string{classConnection, classReadOnly, classShutdown, classBusy, classTimeout, classCommitUnknown} {
		m.errors.WithLabelValues(c)
	}
	for _, r := range []string{"conflict", "canceled", "missing_accounts", "unavailable"} {
		m.retries.WithLabelValues(r)
	}
	return m
}

func (m *metrics) fail(class string)   { m.errors.WithLabelValues(class).Inc() }
func (m *metrics) retry(reason string) { m.retries.WithLabelValues(reason).Inc() }

// Collectors returns the store's metrics, for the process's registry
// (served on /metrics).
func (db *DB) Collectors() []prometheus.Collector {
	return []prometheus.Collector{db.metrics.errors, db.metrics.retries}
}
