package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// canonicalJSON is the canonical line as the ledger's format defines it:
// json.Marshal of the array of the line's immutable fields.
func canonicalJSON(l Line) []byte {
	b, err := json.Marshal([]any{
		l.Account, l.Seq, l.ID, l.OperationID, l.Index, string(l.Type), l.Amount, l.BalanceAfter,
		l.Counterparty, l.ChainID, l.Note, string(l.EarnMode), l.CreatedAt.UnixMicro(),
	})
	if err != nil {
		panic(err)
	}
	return b
}

// Stored hash chains were computed with json.Marshal: the hand encoder must
// give the same bytes for any line, whatever its strings hold.
func TestCanonicalMatchesEncodingJSON(t *testing.T) {
	pieces := []string{"", "a", "wallet:app_01", "op_06h.3", " ", "\"", "\\", "<", ">", "&", "\n", "\t", "\x00", "\x1f", "\x7f",
		"é", "日本", "\u2028", "\u2029", "\xff", "\xe2\x82", "🙂", "note with spaces", "50% off", "a/b", "'"}
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		var s string
		for range rng.IntN(4) {
			s += pieces[rng.IntN(len(pieces))]
		}
		return s
	}
	num := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return -rng.Int64()
		default:
			return rng.Int64N(1_000_000)
		}
	}
	for i := range 20000 {
		l := Line{
			Account: str(), Seq: num(), ID: str(), OperationID: str(), Index: int(num() % 1000), Type: LineType(str()),
			Amount: num(), BalanceAfter: num(), Counterparty: str(), ChainID: str(), Note: str(), EarnMode: EarnMode(str()),
			CreatedAt: time.UnixMicro(num()), PrevHash: GenesisHash,
		}
		want := canonicalJSON(l)
		if got := l.canonical(nil); !bytes.Equal(got, want) {
			t.Fatalf("line %d: canonical %q, encoding/json %q", i, got, want)
		}
		sum := sha256.Sum256(append(append([]byte{}, l.PrevHash...), want...))
		if !bytes.Equal(l.ComputeHash(), sum[:]) {
			t.Fatalf("line %d: hash differs from sha256(prev || json)", i)
		}
	}
}
