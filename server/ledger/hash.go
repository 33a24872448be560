package ledger

import (
	"crypto/sha256"
	"encoding/json"
	"time"
)

// GenesisHash is the previous hash of an account's first line.
var GenesisHash = make([]byte, sha256.Size)

// ComputeHash returns sha256(prev_hash || canonical line), where the canonical
// line is the JSON array of its immutable fields. The encoding is part of the
// ledger's format (docs/ledger.md): changing it breaks every stored chain.
func (l Line) ComputeHash() []byte {
	canonical, err := json.Marshal([]any{
		l.Account, l.Seq, l.ID, l.OperationID, l.Index, string(l.Type), l.Amount, l.BalanceAfter,
		l.Counterparty, l.ChainID, l.Note, string(l.EarnMode), l.CreatedAt.UnixMicro(),
	})
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	h := sha256.New()
	h.Write(l.PrevHash)
	h.Write(canonical)
	return h.Sum(nil)
}

// requestHash fingerprints an operation, to tell a replay of the same
// operation from a different one under a reused key.
func (op Operation) requestHash() []byte {
	var opens *Hold
	if op.Opens != nil {
		h := *op.Opens
		h.CreatedAt, h.Resolution = time.Time{}, ""
		opens = &h
	}
	b, err := json.Marshal(struct {
		Kind     Kind
		Postings []Posting
		Opens    *Hold
		Resolves *Settle
	}{op.Kind, op.Postings, opens, op.Resolves})
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return sum[:]
}
