package xpromo

import "time"

// Wire types of the operators' test clock and clearing sweep (additive admin
// endpoints, admin token).

// ClockState is the answer of GET /v1/admin/clock and POST
// /v1/admin/clock/advance: the server's clock, which every domain reads.
type ClockState struct {
	Now time.Time `json:"now"`
	// OffsetSeconds is how far the test clock has been advanced.
	OffsetSeconds int64 `json:"offset_seconds"`
	// TestMode says whether the clock can be advanced (test mode only).
	TestMode bool `json:"test_mode"`
}

// AdvanceClockRequest is the body of POST /v1/admin/clock/advance: move the
// server's clock forward by Seconds (1 to 31536000), in the manner of
// Stripe's test clocks. Refused outside test mode (403 test_mode_only).
type AdvanceClockRequest struct {
	Seconds int64 `json:"seconds"`
}

// SweepResult is the answer of POST /v1/admin/attribution/sweep: what the
// clearing sweep settled (activated chains cleared, installed chains whose
// 72-hour window closed refunded).
type SweepResult struct {
	Cleared  int `json:"cleared"`
	Refunded int `json:"refunded"`
	// Failed counts chains the ledger refused to settle; they stay due.
	Failed int `json:"failed"`
}
