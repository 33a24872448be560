package crashtest

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Counts are the operations of one kind.
type Counts struct {
	Issued, UnderKill, Acknowledged, Refused, Unresolved int
}

// StoreReport is the outcome of the run on one store.
type StoreReport struct {
	Store    string
	Database string // PostgreSQL: the run's database
	// DatabaseKept: the database was not dropped (-keep).
	DatabaseKept bool
	WorkDir      string // "" once removed
	ServerLog    string
	Duration     time.Duration
	// Cycles is the number of completed kill-and-restart cycles.
	Cycles int
	Kills  []Kill
	Ops    map[Kind]*Counts
	// Refusals counts the refusals by kind and code ("claim fraud_…").
	Refusals map[string]int
	// ClaimStates counts the acknowledged claims by the chain state they
	// answered (only "installed" ones get a heartbeat and can clear).
	ClaimStates map[string]int
	// Transfers counts, by cycle, the acknowledged payouts that reached a
	// transfer (answered a transfer id): the money path a run must
	// exercise, not only its refusals (below_minimum).
	Transfers  map[int]int
	Unresolved []string // the unresolved operations, with their last failure
	Lines      int      // wallet lines checked
	Findings   Findings
	// PendingPayouts are the apps with a payout still pending at the end.
	PendingPayouts []string
	Verifies       []VerifyRun
	// Webhooks is the receiver's record against the events API; nil when
	// the run stopped before its checks.
	Webhooks *WebhookReport
	// Err is why the run could not be completed (then the checks did not
	// run).
	Err error
}

// Count tallies the operations.
func (r *StoreReport) Count(ops []*Op) {
	r.Ops = map[Kind]*Counts{}
	r.Refusals = map[string]int{}
	r.ClaimStates = map[string]int{}
	r.Transfers = map[int]int{}
	for _, k := range Kinds {
		r.Ops[k] = &Counts{}
	}
	for _, op := range ops {
		c := r.Ops[op.Kind]
		c.Issued++
		if op.Crash {
			c.UnderKill++
		}
		switch op.Outcome {
		case Acknowledged:
			c.Acknowledged++
			if op.Kind == KindClaim {
				r.ClaimStates[string(op.State)]++
			}
			if op.Kind == KindPayout && op.Transfer != "" {
				r.Transfers[op.Cycle]++
			}
		case Refused:
			c.Refused++
			r.Refusals[string(op.Kind)+" "+op.Code]++
		case Unresolved:
			c.Unresolved++
			r.Unresolved = append(r.Unresolved, fmt.Sprintf("%s: unresolved after %d attempts; last: %s", op, op.Attempts, op.Code))
		}
	}
}

// TransfersTotal is the number of payouts that reached a transfer.
func (r *StoreReport) TransfersTotal() int {
	n := 0
	for _, v := range r.Transfers {
		n += v
	}
	return n
}

// FailedVerifies counts the `ledger verify` runs that did not exit 0.
func (r *StoreReport) FailedVerifies() int {
	n := 0
	for _, v := range r.Verifies {
		if !v.OK() {
			n++
		}
	}
	return n
}

// Violations counts everything that must be zero: lost, doubled and
// unexplained effects, unresolved operations, pending payouts, failed
// verifies, webhook events lost, unlisted, tampered or undeliverable, and
// a run that could not finish.
func (r *StoreReport) Violations() int {
	n := sum(r.Findings.Lost) + sum(r.Findings.Doubled) + r.Findings.Unexplained +
		len(r.Unresolved) + len(r.PendingPayouts) + r.FailedVerifies()
	if r.Webhooks != nil {
		n += r.Webhooks.Violations()
	}
	if r.Err != nil {
		n++
	}
	return n
}

// maxProblems is how many problems of each list Print shows unless verbose.
const maxProblems = 15

// Print writes the report.
func (r *StoreReport) Print(w io.Writer, verbose bool) {
	fmt.Fprintf(w, "\n== crashtest %s: %d cycles (kill -9, restart) in %s\n", r.Store, r.Cycles, r.Duration.Round(time.Second))
	if r.Err != nil {
		fmt.Fprintf(w, "RUN FAILED: %v\n", r.Err)
	}
	if len(r.Kills) > 0 {
		inFlight := 0
		var restart time.Duration
		for _, k := range r.Kills {
			inFlight += k.InFlight
			restart += k.Restart
		}
		fmt.Fprintf(w, "kills: %d, %.1f operations in flight on average, restart %s on average\n",
			len(r.Kills), float64(inFlight)/float64(len(r.Kills)), (restart / time.Duration(len(r.Kills))).Round(time.Millisecond))
	}
	if r.Ops != nil {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "operation\tissued\tunder kill\tacknowledged\trefused\tunresolved\tlost\tapplied twice\t")
		var tot Counts
		for _, k := range Kinds {
			c := r.Ops[k]
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", k, c.Issued, c.UnderKill, c.Acknowledged, c.Refused, c.Unresolved, r.Findings.Lost[k], r.Findings.Doubled[k])
			tot.Issued += c.Issued
			tot.UnderKill += c.UnderKill
			tot.Acknowledged += c.Acknowledged
			tot.Refused += c.Refused
			tot.Unresolved += c.Unresolved
		}
		fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", tot.Issued, tot.UnderKill, tot.Acknowledged, tot.Refused, tot.Unresolved, sum(r.Findings.Lost), sum(r.Findings.Doubled))
		_ = tw.Flush()
		if len(r.Refusals) > 0 {
			var parts []string
			for _, k := range sortedKeys(r.Refusals) {
				parts = append(parts, fmt.Sprintf("%s ×%d", k, r.Refusals[k]))
			}
			fmt.Fprintf(w, "refusals (definite answers): %s\n", strings.Join(parts, ", "))
		}
		if len(r.ClaimStates) > 0 {
			var parts []string
			for _, k := range sortedKeys(r.ClaimStates) {
				parts = append(parts, fmt.Sprintf("%s ×%d", k, r.ClaimStates[k]))
			}
			fmt.Fprintf(w, "claims acknowledged, by the chain's state: %s\n", strings.Join(parts, ", "))
		}
		fmt.Fprintf(w, "payouts that reached a transfer: %d", r.TransfersTotal())
		if len(r.Transfers) > 0 {
			var parts []string
			for _, c := range slices.Sorted(maps.Keys(r.Transfers)) {
				parts = append(parts, fmt.Sprintf("cycle %d: %d", c, r.Transfers[c]))
			}
			fmt.Fprintf(w, " (%s)", strings.Join(parts, ", "))
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "wallet lines checked: %d; unexplained: %d\n", r.Lines, r.Findings.Unexplained)
		fmt.Fprintf(w, "payouts pending at the end: %d", len(r.PendingPayouts))
		if len(r.PendingPayouts) > 0 {
			fmt.Fprintf(w, " (apps %s)", strings.Join(r.PendingPayouts, ", "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "ledger verify: %d runs, %d failed\n", len(r.Verifies), r.FailedVerifies())
	for _, v := range r.Verifies {
		if !v.OK() {
			fmt.Fprintf(w, "  verify %s: exit %d\n    %s\n", v.When, v.Exit, strings.ReplaceAll(v.Output, "\n", "\n    "))
		}
	}
	if wh := r.Webhooks; wh != nil {
		during := 0
		for _, k := range r.Kills {
			if k.Delivering > 0 {
				during++
			}
		}
		fmt.Fprintf(w, "webhooks: %d endpoints; %d events listed, %d due to the endpoints; %d received (answered 2xx), %d missing, %d unlisted (and %d stamped by a restarted server before its clock was put back, past the API's 30 days)\n",
			wh.Endpoints, wh.Listed, wh.Required, wh.Acked, wh.Missing, wh.Unlisted, wh.StampedAtRestart)
		fmt.Fprintf(w, "  %d requests: %d answered 500 on purpose, %d refused for a stale timestamp (clock moves), %d duplicates, %d bad signatures, %d mismatched; %d endpoints disabled\n",
			wh.Requests, wh.FailedOnPurpose, wh.Stale, wh.Duplicates, wh.BadSignatures, wh.Mismatched, wh.Disabled)
		fmt.Fprintf(w, "  kills during a delivery: %d of the %d aimed at deliveries, %d of the %d aimed at operations; waited %s for deliveries (%s at the end), %d clock moves\n",
			wh.DeliveryKillsHit, wh.DeliveryKills, during, len(r.Kills), wh.DrainTime.Round(time.Millisecond), wh.LastDrain.Round(time.Millisecond), wh.ClockMoves)
		printList(w, "webhook problems", wh.Problems, verbose)
	}
	printList(w, "unresolved operations", r.Unresolved, verbose)
	printList(w, "problems", r.Findings.Problems, verbose)
	if r.WorkDir != "" {
		fmt.Fprintf(w, "work directory kept: %s (server log %s)\n", r.WorkDir, r.ServerLog)
	}
	if r.DatabaseKept {
		fmt.Fprintf(w, "database kept: %s\n", r.Database)
	}
	if n := r.Violations(); n > 0 {
		fmt.Fprintf(w, "RESULT %s: FAIL, %d violation(s)\n", r.Store, n)
	} else {
		fmt.Fprintf(w, "RESULT %s: PASS: every acknowledged operation applied exactly once, nothing unexplained, nothing pending, every verify clean, every event delivered\n", r.Store)
	}
}

func printList(w io.Writer, title string, items []string, verbose bool) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "%s (%d):\n", title, len(items))
	for i, s := range items {
		if i == maxProblems && !verbose {
			fmt.Fprintf(w, "  … and %d more (-v shows all)\n", len(items)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n", s)
	}
}

func sortedKeys(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
