package conformance

// Area is a group of checks about one part of the API. Its ID is stable:
// reports and XPROMO_CONFORMANCE_AREAS use it.
type Area struct {
	ID    string
	Title string
	// Checks lists the area's checks; nil when the suite does not cover the
	// area yet, NotCovered saying why.
	Checks     func() []Check
	NotCovered string
}

// Areas returns the suite's areas in the order they run and are reported.
func Areas() []Area {
	return []Area{
		{ID: "auth", Title: "auth and scope", Checks: authChecks},
		{ID: "errors", Title: "errors and codes", Checks: errorChecks},
		{ID: "rate-limits", Title: "rate-limit headers", Checks: rateLimitChecks},
		{ID: "idempotency", Title: "idempotency", Checks: idempotencyChecks},
		{ID: "apps", Title: "apps and score", Checks: appChecks},
		{ID: "rate-card", Title: "rate card", Checks: rateCardChecks},
		{ID: "campaigns", Title: "campaigns", Checks: campaignChecks},
		{ID: "ledger", Title: "ledger semantics and pagination", Checks: ledgerChecks},
		{ID: "stats", Title: "stats", Checks: statsChecks},
		{ID: "top-up", Title: "top-up", Checks: topUpChecks},
		{ID: "payout", Title: "payout", Checks: payoutChecks},
		{ID: "attribution", Title: "attribution protocol and fraud codes", Checks: attributionChecks},
		{ID: "lists", Title: "balance, chains and key lists (additive)", Checks: listChecks},
		{ID: "mcp", Title: "MCP tool parity", Checks: mcpChecks},
	}
}

// AreaByID returns the area with this id, or nil.
func AreaByID(id string) *Area {
	for _, a := range Areas() {
		if a.ID == id {
			return &a
		}
	}
	return nil
}

// AreaIDs lists the ids of every area.
func AreaIDs() []string {
	var ids []string
	for _, a := range Areas() {
		ids = append(ids, a.ID)
	}
	return ids
}
