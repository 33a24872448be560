package refserver

import (
	"crypto/rand"
	"encoding/hex"
)

// randomToken is 32 random hex characters.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
