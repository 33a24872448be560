package main

import (
	"strconv"
	"time"

	"github.com/xpromo/xpromo/server/lifecycle"
)

// lifecycleRules reads the lifecycle settings: rates in (0, 1], counts of
// at least 1, positive durations.
func lifecycleRules(get func(string) string, source map[string]string) (lifecycle.Rules, error) {
	var r lifecycle.Rules
	for name, dst := range map[string]*float64{"fraud-max-rate": &r.FraudMaxRate, "churn-min-retention": &r.ChurnMinRetention, "live-min-retention": &r.LiveMinRetention} {
		v, err := strconv.ParseFloat(get(name), 64)
		if err != nil || !(v > 0 && v <= 1) {
			return r, usagef("%s: %q is not a rate over 0 and at most 1", source[name], get(name))
		}
		*dst = v
	}
	for name, dst := range map[string]*int64{"fraud-min-claims": &r.FraudMinClaims, "churn-min-decided": &r.ChurnMinDecided, "suspend-upheld-complaints": &r.MaxUpheldComplaints, "live-min-cleared": &r.LiveMinCleared, "canary-max-clicks": &r.CanaryMaxClicks} {
		v, err := strconv.ParseInt(get(name), 10, 64)
		if err != nil || v < 1 {
			return r, usagef("%s: %q is not a positive whole number", source[name], get(name))
		}
		*dst = v
	}
	for name, dst := range map[string]*time.Duration{"fraud-window": &r.FraudWindow, "complaints-window": &r.ComplaintsWindow, "clawback-window": &r.ClawbackWindow, "review-interval": &r.ReviewEvery} {
		v, err := time.ParseDuration(get(name))
		if err != nil || v <= 0 {
			return r, usagef("%s: %q is not a positive duration (e.g. 5m, 720h)", source[name], get(name))
		}
		*dst = v
	}
	return r, nil
}
