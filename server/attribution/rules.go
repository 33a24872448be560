package attribution

import (
	"time"

	token "github.com/xpromo/xpromo/sdk/attribution"
)

// Fraud reason codes: the reason of a rejected chain, the code of the error
// a refused claim answers, and the keys of Stats.fraud_rejected. The first
// four come from sdk/attribution's verification.
const (
	FraudTokenReused         = "fraud_token_reused"
	FraudTokenExpired        = token.CodeTokenExpired
	FraudBadSignature        = token.CodeBadSignature
	FraudBadCountersignature = token.CodeBadCountersignature
	FraudDatacenterASN       = "fraud_datacenter_asn"
	FraudSelfPromotion       = "fraud_self_promotion"
	FraudCTITTooShort        = "fraud_ctit_too_short"
	FraudInstallVelocity     = "fraud_install_velocity"
	FraudDeviceReused        = "fraud_device_reused"
	FraudAppMismatch         = token.CodeAppMismatch
)

// FraudCodes lists every fraud reason code.
var FraudCodes = []string{
	FraudTokenReused, FraudTokenExpired, FraudBadSignature, FraudBadCountersignature,
	FraudDatacenterASN, FraudSelfPromotion, FraudCTITTooShort, FraudInstallVelocity,
	FraudDeviceReused, FraudAppMismatch,
}

// IsFraud reports whether a rejection reason is a fraud code (rejections
// for budget_exhausted or insufficient_funds are not).
func IsFraud(reason string) bool {
	for _, c := range FraudCodes {
		if c == reason {
			return true
		}
	}
	return false
}

// Rules are the fraud rules' thresholds (docs/attribution.md). The zero
// value of a field means its default.
type Rules struct {
	// ClockSkew is the disagreement tolerated between device clocks and the
	// server's (token.DefaultClockSkew, 2 minutes); negative means none.
	ClockSkew time.Duration
	// MinCTIT is the shortest click-to-install time accepted (10 seconds):
	// a faster install is fraud_ctit_too_short.
	MinCTIT time.Duration
	// DeviceInstalls accepted installs (of any app) per device in
	// DeviceWindow (3 in 24 hours); the next is fraud_install_velocity.
	DeviceInstalls int
	DeviceWindow   time.Duration
	// IPInstalls accepted installs per client IP (per /64 for IPv6) in
	// IPWindow (20 in 1 hour); the next is fraud_install_velocity.
	IPInstalls int
	IPWindow   time.Duration
}

// Default thresholds.
const (
	DefaultMinCTIT        = 10 * time.Second
	DefaultDeviceInstalls = 3
	DefaultDeviceWindow   = 24 * time.Hour
	DefaultIPInstalls     = 20
	DefaultIPWindow       = time.Hour
)

// withDefaults returns r with every zero field set to its default.
func (r Rules) withDefaults() Rules {
	switch {
	case r.ClockSkew == 0:
		r.ClockSkew = token.DefaultClockSkew
	case r.ClockSkew < 0:
		r.ClockSkew = 0
	}
	if r.MinCTIT == 0 {
		r.MinCTIT = DefaultMinCTIT
	}
	if r.DeviceInstalls == 0 {
		r.DeviceInstalls = DefaultDeviceInstalls
	}
	if r.DeviceWindow == 0 {
		r.DeviceWindow = DefaultDeviceWindow
	}
	if r.IPInstalls == 0 {
		r.IPInstalls = DefaultIPInstalls
	}
	if r.IPWindow == 0 {
		r.IPWindow = DefaultIPWindow
	}
	return r
}
