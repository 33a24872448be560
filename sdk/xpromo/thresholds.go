package xpromo

import (
	"context"
	"net/http"
	"time"
)

// Thresholds is the answer of GET /v1/apps/{app_id}/thresholds (additive):
// how close the app is, at AsOf, to each published lifecycle threshold
// (docs/apps.md "Lifecycle"): the go-live bar it must reach and the
// suspension bars it must stay clear of. Each figure is computed by the
// same rule the market's clearing and the lifecycle review apply.
type Thresholds struct {
	AppID      string      `json:"app_id"`
	Status     AppStatus   `json:"status"`
	AsOf       time.Time   `json:"as_of"`
	Thresholds []Threshold `json:"thresholds"`
}

// ThresholdName names one lifecycle threshold.
type ThresholdName string

// The thresholds, in the order the answer lists them: the go-live bar's two
// halves, then the suspension bars in the order the review judges them.
const (
	// ThresholdLiveCleared: charged installs the app bought (escrow holds
	// opened for it as advertiser) in the last 30 days; at least the bar.
	ThresholdLiveCleared ThresholdName = "live_cleared"
	// ThresholdLiveRetention: the 48-hour retention of those holds
	// (charged ÷ resolved); at least the bar.
	ThresholdLiveRetention ThresholdName = "live_retention"
	// ThresholdFraudRate: the app's verified install claims as publisher
	// rejected with a fraud_ code ÷ those claims; suspended at or above.
	ThresholdFraudRate ThresholdName = "fraud_rate"
	// ThresholdChurnRetention: the retained share of the installs the app
	// sent as publisher whose activation window closed; suspended below.
	ThresholdChurnRetention ThresholdName = "churn_retention"
	// ThresholdCanaryClicks: canaries the app's SDK key signed clicks for
	// since its last reinstatement; suspended at or above.
	ThresholdCanaryClicks ThresholdName = "canary_clicks"
	// ThresholdUpheldComplaints: upheld complaints about the app resolved
	// in the complaints window; suspended at or above.
	ThresholdUpheldComplaints ThresholdName = "upheld_complaints"
)

// ThresholdKind says what crossing a threshold does.
type ThresholdKind string

// Threshold kinds.
const (
	ThresholdKindLive       ThresholdKind = "live"       // a bar to reach: throttled → live
	ThresholdKindSuspension ThresholdKind = "suspension" // a bar to stay clear of: → suspended
)

// ThresholdState is where the app's value stands against the bar.
type ThresholdState string

// Threshold states.
const (
	ThresholdMet      ThresholdState = "met"      // a live bar the value reaches
	ThresholdNotMet   ThresholdState = "not_met"  // a live bar the value does not reach yet
	ThresholdWithin   ThresholdState = "within"   // a suspension bar the value stays clear of
	ThresholdBreached ThresholdState = "breached" // a suspension bar the value crosses
	// ThresholdTooFew: the sample is below MinSample, so the rule does not
	// judge yet (it is neither breached nor clear).
	ThresholdTooFew ThresholdState = "too_few"
)

// Threshold is one published bar against the app's current value.
type Threshold struct {
	Name ThresholdName `json:"name"`
	Kind ThresholdKind `json:"kind"`
	// Comparison is how Value crosses Bar: "at_least" (value ≥ bar) or
	// "below" (value < bar).
	Comparison string `json:"comparison"`
	// Bar is the published threshold (a server setting; docs/apps.md).
	Bar float64 `json:"bar"`
	// Value is the app's current figure: a count, or a ratio in [0, 1]
	// (0 while the sample is empty).
	Value float64 `json:"value"`
	// Sample is what a ratio is computed on (claims, decided installs,
	// resolved holds), and MinSample the smallest sample the rule judges;
	// both are absent for counts.
	Sample    *int64 `json:"sample,omitempty"`
	MinSample *int64 `json:"min_sample,omitempty"`
	// WindowHours is the rule's look-back window; null when it counts
	// since the app's last reinstatement with no window (canary clicks).
	WindowHours *int64 `json:"window_hours"`
	// Since is where the count starts: the window's start, or the app's
	// last reinstatement when that is later (a clean slate); null: ever.
	Since *time.Time     `json:"since"`
	State ThresholdState `json:"state"`
	// Reason is the reason code the move records when the threshold is
	// crossed (cleared_with_good_retention, fraud_rate_exceeded, …).
	Reason string `json:"reason"`
}

// GetThresholds reads how close the app is to each lifecycle threshold
// (GET /v1/apps/{app_id}/thresholds). Another app's id answers 404
// not_found, like a missing one.
func (c *Client) GetThresholds(ctx context.Context, appID string, opts ...CallOption) (*Thresholds, error) {
	out := new(Thresholds)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/thresholds", appID)}, out, opts)
	return result(out, err)
}
