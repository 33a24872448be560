package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/xpromo/xpromo/server/ledger"
)

// verify runs ledger.Verify over the configured store and prints a summary
// and every violation. Violations are exit status 1.
func (p *program) verify(ctx context.Context, args []string) error {
	cfg, err := parseConfig("ledger verify", args, p.env, p.stdout, p.stderr)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, true)
	if err != nil {
		if errors.Is(err, errNoDatabase) {
			return &usageError{msg: err.Error()}
		}
		return err
	}
	defer st.Close()

	// One snapshot, so writes of a running server cannot look like violations.
	var rep ledger.Report
	err = st.Snapshot(ctx, func(r ledger.Reader) error {
		rep, err = ledger.Verify(ctx, r)
		return err
	})
	if err != nil {
		return fmt.Errorf("verifying the ledger in %s %s: %w", st.kind, st.location, err)
	}
	w := p.stdout
	fmt.Fprintf(w, "store:      %s %s\n", st.kind, st.location)
	fmt.Fprintf(w, "accounts:   %d\n", rep.Accounts)
	fmt.Fprintf(w, "lines:      %d\n", rep.Lines)
	fmt.Fprintf(w, "operations: %d\n", rep.Operations)
	fmt.Fprintf(w, "holds:      %d\n", rep.Holds)
	fmt.Fprintf(w, "violations: %d\n", len(rep.Violations))
	for _, v := range rep.Violations {
		fmt.Fprintf(w, "VIOLATION %s\n", v)
	}
	// Lines written before migration 00034 may go back in time: not a
	// violation, but a dated ledger page of such an account may omit lines
	// (docs/ledger.md, "Lines written before the time order").
	if len(rep.BackInTime) > 0 {
		fmt.Fprintf(w, "accounts with lines back in time: %d\n", len(rep.BackInTime))
		for _, b := range rep.BackInTime {
			fmt.Fprintf(w, "BACK_IN_TIME %s\n", b)
		}
	}
	if !rep.OK() {
		fmt.Fprintln(w, "FAIL: the ledger's invariants do not hold")
		return exitCode(exitFail)
	}
	fmt.Fprintln(w, "OK: every invariant holds")
	return nil
}
