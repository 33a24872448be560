package ledger

import (
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"time"
)

// GenesisHash is the previous hash of an account's first line.
var GenesisHash = make([]byte, sha256.Size)

// ComputeHash returns sha256(prev_hash || canonical line), where the canonical
// line is the JSON array of its immutable fields. The encoding is part of the
// ledger's format (docs/ledger.md): changing it breaks every stored chain.
func (l Line) ComputeHash() []byte {
	var buf [384]byte
	h := sha256.New()
	h.Write(l.PrevHash)
	h.Write(l.canonical(buf[:0]))
	return h.Sum(nil)
}

// canonical appends the line's canonical JSON to b: byte for byte what
// json.Marshal of the array of its fields gives (canonicalJSON in the tests,
// which compare them), written without reflection since every line is
// hashed when posted and again by verify.
func (l Line) canonical(b []byte) []byte {
	b = append(b, '[')
	b = appendJSONString(b, l.Account)
	b = append(b, ',')
	b = strconv.AppendInt(b, l.Seq, 10)
	for _, s := range []string{l.ID, l.OperationID} {
		b = append(b, ',')
		b = appendJSONString(b, s)
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(l.Index), 10)
	b = append(b, ',')
	b = appendJSONString(b, string(l.Type))
	for _, n := range []int64{l.Amount, l.BalanceAfter} {
		b = append(b, ',')
		b = strconv.AppendInt(b, n, 10)
	}
	for _, s := range []string{l.Counterparty, l.ChainID, l.Note, string(l.EarnMode)} {
		b = append(b, ',')
		b = appendJSONString(b, s)
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, l.CreatedAt.UnixMicro(), 10)
	return append(b, ']')
}

// appendJSONString appends s as encoding/json writes it. Printable ASCII
// other than the characters it escapes (quote, backslash, and <, >, & for
// HTML safety) is copied as is; any other string is left to encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil {
				panic(err) // a string always marshals
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
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
