package attribution

import "crypto/sha256"

// TokenHash is SHA-256 over the ASCII bytes of a compact token as presented.
// An install countersignature and the heartbeats carry it (as "th") to name
// the click token they belong to.
func TokenHash(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// TokenHashString is TokenHash in unpadded base64url (43 characters), the
// form of the "th" claim.
func TokenHashString(token string) string {
	h := TokenHash(token)
	return b64(h[:])
}
