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
		// Adjustments are the 3rd and 5th operation: the 5th is in the
		// second half, after which too little load is left to meet the kill.
		if target != ops[2] {
			t.Fatalf("cycle 1 aimed at operation %d, want the adjustment in the first half (2)", target.Seq)
		}
		if k.Delay < 0 || k.Delay >= 15*time.Millisecond {
			t.Fatalf("delay %s: want within 1.5 × the kind's usual 10ms", k.Delay)
		}
	}
	// A kind only in the second half: its first operation.
	if target, _ := aim(ops, 1, map[Kind]bool{KindTopUp: true}, false, typical); target != ops[5] {
		t.Fatalf("top-ups, only the last operation: aimed at %v", target)
	}
	// A kind the cycle has none of: any operation in the first half.
	for range 50 {
		if target, _ := aim(ops, 2, all, false, typical); target == nil || target.Seq >= 3 {
			t.Fatalf("cycle 2 (payouts, none here): aimed at %v, want one of the first 3", target)
		}
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
