package crashtest

import (
	"testing"
	"time"
)

// TestAim: a cycle's kill falls in an operation of its aimed kind, no
// later than one and a half times the kind's usual duration after it went
// out; FaultEarly's falls as the first operation goes out, whatever the
// kinds, so the whole phase's load meets the fault (the failover test's
// negative control counts the writes answered under it).
func TestAim(t *testing.T) {
	var ops []*Op
	for i, kind := range []Kind{KindClaim, KindSweep, KindAdjustment, KindClaim, KindAdjustment, KindTopUp} {
		ops = append(ops, &Op{Kind: kind, Seq: i})
	}
	all := map[Kind]bool{}
	for _, k := range Kinds {
		all[k] = true
	}
	typical := func(Kind) time.Duration { return 10 * time.Millisecond }

	for range 50 {
		target, k := aim(ops, 1, all, false, typical)
		if k.Aim != killOrder[0] || target.Kind != k.Aim || k.Target != k.Aim {
			t.Fatalf("cycle 1 aims at %s: got aim %s, target %s (%s)", killOrder[0], k.Aim, target.Kind, k.Target)
		}
		if k.Delay < 0 || k.Delay >= 15*time.Millisecond {
			t.Fatalf("delay %s: want within 1.5 × the kind's usual 10ms", k.Delay)
		}
	}
	// A kind the cycle has none of: any operation.
	if target, _ := aim(ops, 2, all, false, typical); target == nil {
		t.Fatal("cycle 2 (payouts, none here) found no operation to aim at")
	}
	for cycle := 1; cycle <= len(killOrder); cycle++ {
		target, k := aim(ops, cycle, all, true, typical)
		if target != ops[0] || k.Delay != 0 || k.Target != ops[0].Kind {
			t.Fatalf("early, cycle %d: got op %d after %s, want the first at once", cycle, target.Seq, k.Delay)
		}
	}
	if target, k := aim(nil, 1, all, true, typical); target != nil || k.Target != "" {
		t.Fatalf("no operations: got %v, %+v", target, k)
	}
}
