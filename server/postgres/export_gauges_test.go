package postgres

// GaugeQueries are the backlog gauges' queries, for their plan test.
var GaugeQueries = map[string]string{
	"pending payouts":     pendingPayoutsQuery,
	"undispatched events": undispatchedEventsQuery,
	"due deliveries":      dueDeliveriesQuery,
	"runnable jobs":       runnableJobsQuery,
	"due settlements":     dueSettlementsQuery,
}
