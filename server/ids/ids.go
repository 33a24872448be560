// Package ids makes the opaque identifiers the API hands out.
package ids

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"time"
)

var enc = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// New returns prefix + "_" + 26 characters: 48 bits of wall-clock
// milliseconds then 80 random bits, so ids sort roughly by creation (good for
// B-tree locality) and cannot be guessed. Clients must treat them as opaque.
func New(prefix string) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + "_" + enc.EncodeToString(b[:])
}

// Derived returns prefix + "_" + 26 characters encoding the first 16 bytes
// of seed: the id of something that must be the same every time it is made
// from the same seed (an effect keyed on a request's Idempotency-Key), in
// the same shape as New's.
func Derived(prefix string, seed []byte) string {
	var b [16]byte
	copy(b[:], seed)
	return prefix + "_" + enc.EncodeToString(b[:])
}
