package failovertest

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/xpromo/xpromo/server/crashtest"
)

// Print writes the run's figures: per fault, the recovery times and what
// clients saw; per kind, the averages; then the verdict.
func Print(w io.Writer, res *Result) {
	if res == nil {
		return
	}
	if res.Cost != nil {
		res.Cost.Print(w)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "\n== failovertest: SKIPPED: %s\n", s)
	}
	if len(res.Notes) > 0 {
		fmt.Fprintf(w, "\n== failovertest: notes on the cluster itself (%d)\n", len(res.Notes))
		for _, n := range res.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	for _, r := range res.Runs {
		title := string(r.Route)
		if r.Control {
			title = "negative control"
		}
		fmt.Fprintf(w, "\n== failovertest %s\n", title)
		if r.Err != nil {
			fmt.Fprintf(w, "RUN FAILED: %v\n", r.Err)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "cycle\tfault\tprimary → new\tsync standby before\twrites back\tfirst write per instance\tall nodes replicating\treplica lag at the digest check\tclients saw (besides 2xx)")
		for _, f := range r.Faults {
			var fw []string
			for _, d := range f.FirstWrite {
				fw = append(fw, firstWrite(d))
			}
			fmt.Fprintf(tw, "%d\t%s\t%s → %s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Cycle, f.Kind, f.OldLeader, f.NewLeader, orNone(f.SyncBefore),
				seconds(f.WritesBack), strings.Join(fw, " / "), seconds(f.Rejoined), lagsString(f.Lag), strings.Join(r.Seen[f.Cycle], ", "))
		}
		_ = tw.Flush()
		printKinds(w, r.Faults)
		fmt.Fprintf(w, "answers against the contract (a 5xx other than 503, 503 or a retrying 409 without Retry-After, no answer): %d\n", len(r.Breaches))
		for i, b := range r.Breaches {
			if i == 15 {
				fmt.Fprintf(w, "  … and %d more\n", len(r.Breaches)-i)
				break
			}
			fmt.Fprintf(w, "  %s\n", b)
		}
		if r.Store != nil && r.Store.Ops != nil {
			fmt.Fprintf(w, "payouts that reached a transfer: %d of %d asked for", r.Store.TransfersTotal(), r.Store.Ops[crashtest.KindPayout].Issued)
			if r.NoTransfers() {
				fmt.Fprintf(w, ": FAIL, no payout reached a transfer in %d cycles (the payout path was never exercised)", r.Store.Cycles)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "nodes disagreeing on the ledger after a cycle: %d\n", len(r.Disagreements))
		for _, d := range r.Disagreements {
			fmt.Fprintf(w, "  %s\n", d)
		}
		if r.Control {
			if n := r.ControlCaught(); n > 0 {
				fmt.Fprintf(w, "RESULT negative control: PASS: the checks caught %d acknowledged operation(s) lost by a failover to a standby held back\n", n)
			} else {
				fmt.Fprintf(w, "RESULT negative control: FAIL: a failover to a standby held back lost nothing the checks could see: the harness proves nothing\n")
			}
			continue
		}
		if n := r.Failures(); n > 0 {
			fmt.Fprintf(w, "RESULT %s: FAIL, %d violation(s)\n", title, n)
		} else {
			fmt.Fprintf(w, "RESULT %s: PASS: %d faults, nothing acknowledged lost or applied twice, nothing unexplained or pending, every verify clean, every node agreeing, every client error a 503 or a retried 409 with Retry-After\n", title, len(r.Faults))
		}
	}
}

// printKinds averages the recovery per fault kind.
func printKinds(w io.Writer, faults []*FaultReport) {
	by := map[FaultKind][]*FaultReport{}
	for _, f := range faults {
		by[f.Kind] = append(by[f.Kind], f)
	}
	kinds := make([]string, 0, len(by))
	for k := range by {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fs := by[FaultKind(k)]
		var back, first, rejoin, worst time.Duration
		n := 0
		for _, f := range fs {
			back += f.WritesBack
			rejoin += f.Rejoined
			for _, d := range f.FirstWrite {
				if d == 0 {
					continue // no write went to that instance after the fault
				}
				first += d
				worst = max(worst, d)
				n++
			}
		}
		avgFirst := time.Duration(0)
		if n > 0 {
			avgFirst = first / time.Duration(n)
		}
		fmt.Fprintf(w, "%s: %d faults; writes back after %s on average; first answered write per instance %s on average, %s at worst; all nodes replicating after %s on average\n",
			k, len(fs), seconds(back/time.Duration(len(fs))), seconds(avgFirst), seconds(worst), seconds(rejoin/time.Duration(len(fs))))
	}
}

// firstWrite is an instance's first answered write after a fault, "none"
// when no write was sent to it after the fault.
func firstWrite(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return seconds(d)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
