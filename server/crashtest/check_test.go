package crashtest

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The fake run: publisher pub, advertiser adv.
const (
	pub = "app_pub"
	adv = "app_adv"
)

// fake builds a run's operations and the wallets' lines, as the server
// would have written them.
type fake struct {
	ops     []*Op
	ledgers map[string][]xpromo.LedgerLine
	n       int
}

func newFake() *fake { return &fake{ledgers: map[string][]xpromo.LedgerLine{}} }

func (f *fake) op(o Op) *Op {
	f.n++
	o.Seq = f.n
	f.ops = append(f.ops, &o)
	return &o
}

func (f *fake) line(app string, typ xpromo.LineType, amount int64, chain, note string) {
	f.n++
	l := xpromo.LedgerLine{ID: fmt.Sprintf("line%d", f.n), Type: typ, AmountCents: amount}
	if chain != "" {
		l.EventChainID = &chain
	}
	if note != "" {
		l.Note = &note
	}
	f.ledgers[app] = append(f.ledgers[app], l)
}

// clean is a run where everything took effect exactly once: a top-up, an
// adjustment, a refused adjustment, a chain cleared after its heartbeat,
// a chain refunded without one, a payout.
func clean() *fake {
	f := newFake()
	f.op(Op{Kind: KindTopUp, App: adv, Outcome: Acknowledged, Session: "cs_1"})
	f.line(adv, xpromo.LineTopup, 50_000, "", "checkout cs_1")
	f.op(Op{Kind: KindAdjustment, App: pub, Outcome: Acknowledged, Amount: -300, Note: "adj 1"})
	f.line(pub, xpromo.LineAdjustment, -300, "", "adj 1")
	f.op(Op{Kind: KindAdjustment, App: pub, Outcome: Refused, Code: "insufficient_funds", Amount: -90_000, Note: "adj 2"})

	f.op(Op{Kind: KindClaim, App: adv, Publisher: pub, Outcome: Acknowledged, Chain: "ch_1", State: xpromo.ChainInstalled})
	f.line(adv, xpromo.LineEscrowHold, -5000, "ch_1", "")
	f.op(Op{Kind: KindHeartbeat, App: adv, Chain: "ch_1", Outcome: Acknowledged, State: xpromo.ChainActivated48h})
	f.line(adv, xpromo.LineEscrowRelease, 5000, "ch_1", "")
	f.line(adv, xpromo.LineCharge, -5000, "ch_1", "")
	f.line(pub, xpromo.LineEarn, 3500, "ch_1", "")

	f.op(Op{Kind: KindClaim, App: adv, Publisher: pub, Outcome: Acknowledged, Chain: "ch_2", State: xpromo.ChainInstalled})
	f.line(adv, xpromo.LineEscrowHold, -400, "ch_2", "")
	f.line(adv, xpromo.LineEscrowRelease, 400, "ch_2", "")
	f.op(Op{Kind: KindClaim, App: adv, Outcome: Refused, Code: "fraud_device_reused"})

	f.op(Op{Kind: KindSweep, Outcome: Acknowledged})
	f.op(Op{Kind: KindPayout, App: pub, Outcome: Acknowledged, Transfer: "tr_1", Payout: "po_1", Amount: 3200})
	f.line(pub, xpromo.LinePayout, -3200, "", "payout po_1")
	// A payout whose transfer was refused, returned: it nets zero.
	f.line(pub, xpromo.LinePayout, -1000, "", "payout po_refused")
	f.line(pub, xpromo.LinePayout, 1000, "", "payout po_refused returned: the processor refused")
	f.op(Op{Kind: KindPayout, App: pub, Outcome: Refused, Code: "below_minimum"})
	return f
}

func TestCheckCleanRun(t *testing.T) {
	f := clean()
	got := Check(f.ops, f.ledgers)
	if !got.OK() {
		t.Fatalf("a clean run has findings: %+v", got)
	}
}

func TestCheckFindsWhatWentWrong(t *testing.T) {
	cases := []struct {
		name string
		// spoil changes the clean run; the findings must be want.
		spoil           func(f *fake)
		lost, doubled   map[Kind]int
		unexplained     int
		problemMentions string
	}{{
		name: "an adjustment posted twice (its answer lost, retried after the lease)",
		spoil: func(f *fake) {
			f.line(pub, xpromo.LineAdjustment, -300, "", "adj 1")
		},
		doubled:         map[Kind]int{KindAdjustment: 1},
		problemMentions: "in the ledger 2 times",
	}, {
		name: "an acknowledged top-up never credited",
		spoil: func(f *fake) {
			f.op(Op{Kind: KindTopUp, App: adv, Outcome: Acknowledged, Session: "cs_9"})
		},
		lost:            map[Kind]int{KindTopUp: 1},
		problemMentions: "acknowledged, but no topup line",
	}, {
		name: "a refused adjustment that posted anyway",
		spoil: func(f *fake) {
			f.line(pub, xpromo.LineAdjustment, -90_000, "", "adj 2")
		},
		unexplained:     1,
		problemMentions: "refused (insufficient_funds)",
	}, {
		name: "an adjustment of another amount than asked",
		spoil: func(f *fake) {
			f.ledgers[pub][0].AmountCents = -3000
		},
		unexplained:     1,
		problemMentions: "not the -300 of the operation",
	}, {
		name: "a heartbeat answered fraud_token_reused whose first attempt activated the chain",
		spoil: func(f *fake) {
			f.op(Op{Kind: KindHeartbeat, App: adv, Chain: "ch_2", Outcome: Refused, Code: "fraud_token_reused"})
			f.line(adv, xpromo.LineCharge, -400, "ch_2", "")
			f.line(pub, xpromo.LineEarn, 280, "ch_2", "")
		},
		unexplained:     2,
		problemMentions: "refused (fraud_token_reused), yet 1 charge line",
	}, {
		name: "an activated chain never cleared",
		spoil: func(f *fake) {
			drop(f, adv, xpromo.LineCharge, "ch_1")
			drop(f, pub, xpromo.LineEarn, "ch_1")
		},
		lost:            map[Kind]int{KindHeartbeat: 1},
		problemMentions: "no charge line of ch_1",
	}, {
		name: "a chain cleared twice",
		spoil: func(f *fake) {
			f.line(pub, xpromo.LineEarn, 3500, "ch_1", "")
		},
		doubled: map[Kind]int{KindSweep: 1},
	}, {
		name: "a chain never settled",
		spoil: func(f *fake) {
			drop(f, adv, xpromo.LineEscrowRelease, "ch_2")
		},
		lost: map[Kind]int{KindSweep: 1},
	}, {
		name: "an install claim holding twice",
		spoil: func(f *fake) {
			f.line(adv, xpromo.LineEscrowHold, -400, "ch_2", "")
		},
		doubled: map[Kind]int{KindClaim: 1},
	}, {
		name: "escrow on a chain no acknowledged claim opened",
		spoil: func(f *fake) {
			f.line(adv, xpromo.LineEscrowHold, -400, "ch_unknown", "")
		},
		unexplained: 1,
	}, {
		name: "earnings on the wrong wallet",
		spoil: func(f *fake) {
			drop(f, pub, xpromo.LineEarn, "ch_1")
			f.line(adv, xpromo.LineEarn, 3500, "ch_1", "")
		},
		lost:        map[Kind]int{KindHeartbeat: 1},
		unexplained: 1,
	}, {
		name: "a payout whose answer was lost, retried into below_minimum",
		spoil: func(f *fake) {
			f.line(pub, xpromo.LinePayout, -6000, "", "payout po_lost")
		},
		unexplained:     1,
		problemMentions: "no operation of the run explains it",
	}, {
		name: "an acknowledged payout without its line",
		spoil: func(f *fake) {
			drop(f, pub, xpromo.LinePayout, "")
		},
		lost: map[Kind]int{KindPayout: 1},
	}, {
		name: "an acknowledged payout returned as well",
		spoil: func(f *fake) {
			f.line(pub, xpromo.LinePayout, 3200, "", "payout po_1 returned: the processor refused")
		},
		unexplained: 1,
	}, {
		name: "a line of a type the run never causes",
		spoil: func(f *fake) {
			f.line(pub, xpromo.LineClawback, -3500, "ch_1", "fraud")
		},
		unexplained: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := clean()
			tc.spoil(f)
			got := Check(f.ops, f.ledgers)
			for _, k := range Kinds {
				if got.Lost[k] != tc.lost[k] {
					t.Errorf("lost %s: %d, want %d", k, got.Lost[k], tc.lost[k])
				}
				if got.Doubled[k] != tc.doubled[k] {
					t.Errorf("doubled %s: %d, want %d", k, got.Doubled[k], tc.doubled[k])
				}
			}
			if got.Unexplained != tc.unexplained {
				t.Errorf("unexplained: %d, want %d", got.Unexplained, tc.unexplained)
			}
			if got.OK() || len(got.Problems) == 0 {
				t.Errorf("no problem reported")
			}
			if !strings.Contains(strings.Join(got.Problems, "\n"), tc.problemMentions) {
				t.Errorf("no problem mentions %q:\n%s", tc.problemMentions, strings.Join(got.Problems, "\n"))
			}
		})
	}
}

// An unresolved operation may have taken effect once (it is reported as
// unresolved already), never twice.
func TestCheckUnresolvedOperations(t *testing.T) {
	f := clean()
	f.op(Op{Kind: KindAdjustment, App: adv, Outcome: Unresolved, Amount: 100, Note: "adj 3"})
	f.line(adv, xpromo.LineAdjustment, 100, "", "adj 3")
	f.op(Op{Kind: KindPayout, App: pub, Outcome: Unresolved, Code: "payout_in_progress"})
	f.line(pub, xpromo.LinePayout, -5000, "", "payout po_unresolved")
	if got := Check(f.ops, f.ledgers); !got.OK() {
		t.Fatalf("an unresolved operation applied once is a finding: %+v", got)
	}
	f.line(adv, xpromo.LineAdjustment, 100, "", "adj 3")
	f.line(pub, xpromo.LinePayout, -5000, "", "payout po_second")
	got := Check(f.ops, f.ledgers)
	if got.Doubled[KindAdjustment] != 1 || got.Unexplained != 1 {
		t.Fatalf("unresolved operations applied twice: %+v", got)
	}
}

func drop(f *fake, app string, typ xpromo.LineType, chain string) {
	ls := f.ledgers[app]
	for i, l := range ls {
		if l.Type == typ && deref(l.EventChainID) == chain {
			f.ledgers[app] = append(ls[:i:i], ls[i+1:]...)
			return
		}
	}
	panic(fmt.Sprintf("no %s line of %s on %s", typ, chain, app))
}

func TestClassify(t *testing.T) {
	apiErr := func(status int, code string) error {
		return xpromo.NewError(status, xpromo.ErrorBody{Code: code, Message: "m"}, "req")
	}
	cases := []struct {
		err  error
		want verdict
	}{
		{nil, answered},
		{apiErr(http.StatusConflict, "idempotency_key_in_use"), retry},
		{apiErr(http.StatusConflict, "payout_in_progress"), retry},
		{apiErr(http.StatusTooManyRequests, "rate_limited"), retry},
		{apiErr(http.StatusInternalServerError, "internal"), retry},
		{apiErr(http.StatusServiceUnavailable, "unavailable"), retry},
		{fmt.Errorf("xpromo: POST /v1/sdk/install: %w", errors.New("connection refused")), retry},
		{apiErr(http.StatusConflict, "below_minimum"), refused},
		{apiErr(http.StatusConflict, "insufficient_funds"), refused},
		{apiErr(http.StatusForbidden, "fraud_token_reused"), refused},
		{apiErr(http.StatusUnprocessableEntity, "idempotency_key_reused"), refused},
		{errors.Join(errLocal, errors.New("signing")), refused},
	}
	for _, tc := range cases {
		if got, code := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %d (%s), want %d", tc.err, got, code, tc.want)
		}
	}
}

func TestParseKinds(t *testing.T) {
	all, err := ParseKinds("all")
	if err != nil || len(all) != len(Kinds) {
		t.Fatalf("all: %v, %v", all, err)
	}
	some, err := ParseKinds("adjustment, payout")
	if err != nil || len(some) != 2 || !some[KindAdjustment] || !some[KindPayout] {
		t.Fatalf("adjustment,payout: %v, %v", some, err)
	}
	for _, bad := range []string{"", "adjustments", "all,refund"} {
		if _, err := ParseKinds(bad); err == nil {
			t.Errorf("ParseKinds(%q) accepted", bad)
		}
	}
}

// The report counts acknowledged claims by their chain's state and the
// payouts that reached a transfer, by cycle.
func TestCountClaimStatesAndTransfers(t *testing.T) {
	var r StoreReport
	r.Count([]*Op{
		{Kind: KindClaim, Cycle: 1, Outcome: Acknowledged, State: xpromo.ChainInstalled},
		{Kind: KindClaim, Cycle: 1, Outcome: Acknowledged, State: xpromo.ChainInstalled},
		{Kind: KindClaim, Cycle: 2, Outcome: Refused, Code: "fraud_token_expired"},
		{Kind: KindPayout, Cycle: 1, Outcome: Refused, Code: "below_minimum"},
		{Kind: KindPayout, Cycle: 2, Outcome: Acknowledged, Transfer: "tr_1"},
		{Kind: KindPayout, Cycle: 2, Outcome: Unresolved},
	})
	assert.Equal(t, map[string]int{string(xpromo.ChainInstalled): 2}, r.ClaimStates)
	assert.Equal(t, map[int]int{2: 1}, r.Transfers)
	assert.Equal(t, 1, r.TransfersTotal())
	assert.Equal(t, 1, r.Refusals["claim fraud_token_expired"])
}
