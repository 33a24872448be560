package ledger

import (
	"context"
	"slices"
	"testing"
)

func queued(t *testing.T, ops ...Operation) []*posting {
	t.Helper()
	var q []*posting
	for _, op := range ops {
		q = append(q, &posting{ctx: context.Background(), op: op, done: make(chan struct{})})
	}
	return q
}

func keysOf(ps []*posting) []string {
	var keys []string
	for _, p := range ps {
		keys = append(keys, p.op.Key)
	}
	return keys
}

func hold(t *testing.T, key, adv string) Operation {
	t.Helper()
	op, err := EscrowHold(key, Hold{ID: key, Advertiser: adv, Amount: 1})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// A batch leaves out posts on accounts a batch in flight holds, and every
// later post on their accounts, so that each account's posts keep their
// arrival order; the rest go ahead. The batch's accounts become busy.
func TestTakeBatchSkipsBusyAccounts(t *testing.T) {
	busy := map[string]int{Wallet("a"): 1}
	q := queued(t,
		hold(t, "h1", "a"), // busy: waits
		hold(t, "h2", "b"),
		hold(t, "h3", "a"), // behind h1: waits
		hold(t, "h2", "b"), // the same key again: waits
		hold(t, "h4", "c"),
	)
	batch, rest := takeBatch(q, busy)
	if got, want := keysOf(batch), []string{"h2", "h4"}; !slices.Equal(got, want) {
		t.Fatalf("batch %v, want %v", got, want)
	}
	if got, want := keysOf(rest), []string{"h1", "h3", "h2"}; !slices.Equal(got, want) {
		t.Fatalf("rest %v, want %v", got, want)
	}
	for _, acc := range []string{Wallet("b"), Escrow("b"), Wallet("c"), Escrow("c")} {
		if busy[acc] != 1 {
			t.Fatalf("%s busy %d times, want 1", acc, busy[acc])
		}
	}
	// Once the batch holding a has ended, its posts go; the repeat of h2
	// still waits for the batch holding b.
	delete(busy, Wallet("a"))
	batch, _ = takeBatch(rest, busy)
	if got, want := keysOf(batch), []string{"h1", "h3"}; !slices.Equal(got, want) {
		t.Fatalf("next batch %v, want %v", got, want)
	}
}
