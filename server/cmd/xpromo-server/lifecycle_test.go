package main

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/lifecycle"
)

// defaultLifecycle is the lifecycle's settings with none given.
var defaultLifecycle = lifecycle.Rules{}.WithDefaults()

// The lifecycle thresholds are settings (docs/operations.md): read from
// flags and the environment, refused when out of range.
func TestConfigLifecycle(t *testing.T) {
	cfg, err := parseConfig("serve", []string{"--fraud-max-rate", "0.25", "--clawback-window", "240h", "--churn-min-retention", "0.1", "--complaints-window", "720h"},
		envMap(map[string]string{"XPROMO_FRAUD_MIN_CLAIMS": "50", "XPROMO_REVIEW_INTERVAL": "1m", "XPROMO_LIVE_MIN_RETENTION": "0.5", "XPROMO_CHURN_MIN_DECIDED": "40"}), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	want := lifecycle.Rules{}.WithDefaults()
	want.FraudMaxRate, want.ClawbackWindow, want.FraudMinClaims, want.ReviewEvery, want.LiveMinRetention = 0.25, 240*time.Hour, 50, time.Minute, 0.5
	want.ChurnMinRetention, want.ChurnMinDecided, want.ComplaintsWindow = 0.1, 40, 720*time.Hour
	assert.Equal(t, want, cfg.Lifecycle)
	for _, args := range [][]string{
		{"--fraud-max-rate", "0"}, {"--fraud-max-rate", "1.5"}, {"--fraud-min-claims", "0"}, {"--fraud-window", "-1h"},
		{"--suspend-upheld-complaints", "x"}, {"--clawback-window", "30"}, {"--review-interval", "0s"}, {"--live-min-cleared", "-2"},
		{"--live-min-retention", "NaN"}, {"--churn-min-retention", "2"}, {"--churn-min-decided", "0"}, {"--complaints-window", "90d"},
	} {
		_, err := parseConfig("serve", args, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
		var ue *usageError
		assert.True(t, errors.As(err, &ue), "%v: %v", args, err)
	}
}

// The canary check's settings (docs/operations.md): read, 0 disabling
// canaries, and refused when out of range.
func TestConfigCanary(t *testing.T) {
	cfg, err := parseConfig("serve", []string{"--canary-rate", "0", "--canary-min-served", "12", "--canary-max-clicks", "2"},
		envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, 0, cfg.CanaryRate)
	assert.Equal(t, int64(12), cfg.Scoring.CanaryMinServed)
	assert.Equal(t, int64(2), cfg.Lifecycle.CanaryMaxClicks)
	cfg, err = parseConfig("serve", nil, envMap(map[string]string{"XPROMO_CANARY_RATE": "1"}), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, 1, cfg.CanaryRate)
	for _, args := range [][]string{{"--canary-rate", "-1"}, {"--canary-rate", "often"}, {"--canary-min-served", "0"}, {"--canary-max-clicks", "0"}} {
		_, err := parseConfig("serve", args, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
		assert.Error(t, err, "%v", args)
	}
}
