package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/apps"
)

func TestVerdict(t *testing.T) {
	r := Rules{} // the defaults: 20 claims, 0.3; 20 decided, 0.2; 3 complaints
	fraud := Verdict{Suspend: true, Reason: ReasonFraudRate, Actor: apps.ActorFraud}
	churn := Verdict{Suspend: true, Reason: ReasonChurn, Actor: apps.ActorFraud}
	complaints := Verdict{Suspend: true, Reason: ReasonComplaints, Actor: apps.ActorSystem}
	canary := Verdict{Suspend: true, Reason: ReasonCanaryFailed, Actor: apps.ActorFraud}
	for _, c := range []struct {
		s    Signals
		want Verdict
	}{
		{Signals{}, Verdict{}},
		{Signals{Claims: 19, FraudRejected: 19}, Verdict{}},        // below the minimum sample
		{Signals{Claims: 20, FraudRejected: 5}, Verdict{}},         // 0.25
		{Signals{Claims: 20, FraudRejected: 6}, fraud},             // 0.3: at the bar
		{Signals{Claims: 1000, FraudRejected: 299}, Verdict{}},     // just under
		{Signals{Upheld: 2}, Verdict{}},                            //
		{Signals{Upheld: 3}, complaints},                           //
		{Signals{Claims: 20, FraudRejected: 20, Upheld: 9}, fraud}, // fraud first: it claws back
		{Signals{Claims: 20, FraudRejected: 1, Upheld: 3}, complaints},
		{Signals{CanaryClicks: 1}, canary},                                       // one canary click (the default bar)
		{Signals{CanaryClicks: 1, Upheld: 3}, canary},                            // canaries before complaints: they claw back
		{Signals{Claims: 20, FraudRejected: 20, CanaryClicks: 4}, fraud},         // the fraud rate first
		{Signals{Claims: 19, Decided: 19, Retained: 0}, Verdict{}},               // churn: below the minimum sample
		{Signals{Claims: 20, Decided: 20, Retained: 4}, Verdict{}},               // 0.2 retained: at the bar, not below
		{Signals{Claims: 20, Decided: 20, Retained: 3}, churn},                   // 0.15
		{Signals{Claims: 1000, Decided: 1000, Retained: 199}, churn},             // just under
		{Signals{Claims: 20, FraudRejected: 6, Decided: 20, Retained: 0}, fraud}, // the fraud rate is judged first
		{Signals{Claims: 20, Decided: 20, Retained: 0, Upheld: 5}, churn},        // churn claws back: before complaints
		{Signals{Claims: 40, Decided: 20, Retained: 10, Upheld: 0}, Verdict{}},   // undecided installs do not count
	} {
		assert.Equal(t, c.want, r.Verdict(c.s), "%+v", c.s)
	}
	custom := Rules{FraudMinClaims: 2, FraudMaxRate: 1, MaxUpheldComplaints: 1}
	assert.Equal(t, Verdict{}, custom.Verdict(Signals{Claims: 2, FraudRejected: 1}))
	assert.Equal(t, fraud, custom.Verdict(Signals{Claims: 2, FraudRejected: 2}))
	assert.Equal(t, complaints, custom.Verdict(Signals{Upheld: 1}))
	lenient := Rules{CanaryMaxClicks: 3}
	assert.Equal(t, Verdict{}, lenient.Verdict(Signals{CanaryClicks: 2}))
	assert.Equal(t, canary, lenient.Verdict(Signals{CanaryClicks: 3}))
	custom = Rules{ChurnMinDecided: 2, ChurnMinRetention: 1}
	assert.Equal(t, churn, custom.Verdict(Signals{Decided: 2, Retained: 1}))
	assert.Equal(t, Verdict{}, custom.Verdict(Signals{Decided: 2, Retained: 2}))
}

func TestCleared(t *testing.T) {
	assert.True(t, Rules{}.Cleared(2))
	assert.False(t, Rules{}.Cleared(3), "the bar that suspends does not reinstate")
	assert.True(t, Rules{MaxUpheldComplaints: 1}.Cleared(0))
	assert.False(t, Rules{MaxUpheldComplaints: 1}.Cleared(1))
}

func TestClawsBack(t *testing.T) {
	assert.True(t, ClawsBack(ReasonFraudRate))
	assert.True(t, ClawsBack("fraud"))
	assert.True(t, ClawsBack(ReasonCanaryFailed))
	assert.True(t, ClawsBack(ReasonChurn))
	assert.False(t, ClawsBack(ReasonComplaints))
	assert.False(t, ClawsBack(ReasonCleanReview))
	assert.False(t, ClawsBack("Fraud"), "operator reasons are matched exactly")
	assert.False(t, ClawsBack(""))
}

func TestWithDefaults(t *testing.T) {
	d := Rules{}.WithDefaults()
	assert.Equal(t, Rules{
		FraudWindow: DefaultFraudWindow, FraudMinClaims: DefaultFraudMinClaims, FraudMaxRate: DefaultFraudMaxRate,
		ChurnMinDecided: DefaultChurnMinDecided, ChurnMinRetention: DefaultChurnMinRetention,
		MaxUpheldComplaints: DefaultMaxUpheldComplaints, ComplaintsWindow: DefaultComplaintsWindow, ClawbackWindow: DefaultClawbackWindow, ReviewEvery: DefaultReviewEvery,
		LiveMinCleared: DefaultLiveMinCleared, LiveMinRetention: DefaultLiveMinRetention, CanaryMaxClicks: DefaultCanaryMaxClicks,
	}, d)
	assert.Equal(t, d, d.WithDefaults())
	assert.Equal(t, int64(7), Rules{FraudMinClaims: 7}.WithDefaults().FraudMinClaims)
}
