package apps

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
)

// API key format: prefix + 32 base62 characters from crypto/rand (about 190
// bits). Only the key's SHA-256 is stored; a fast hash is right here because
// the key is random, not a password: nothing can be guessed from the hash.
const (
	LivePrefix = "xp_live_"
	TestPrefix = "xp_test_"
	keyRandLen = 32
	// displayPrefixLen is how much of a key is stored in clear, for
	// operators to tell keys apart: the mode prefix and 4 random characters.
	displayPrefixLen = 12
	// KeyOverlap is how long keys issued before a rotation keep working.
	KeyOverlap = 24 * time.Hour
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// keyPrefix is the prefix of the keys this service issues and accepts: a test
// key never works against a live server, nor the reverse.
func (s *Service) keyPrefix() string {
	if s.Live {
		return LivePrefix
	}
	return TestPrefix
}

func (s *Service) newKey() string {
	b := make([]byte, 0, len(TestPrefix)+keyRandLen)
	b = append(b, s.keyPrefix()...)
	var buf [64]byte
	for len(b) < cap(b) {
		if _, err := rand.Read(buf[:]); err != nil {
			panic(err) // crypto/rand never fails on supported platforms
		}
		for _, c := range buf {
			// 248 = 4×62: rejecting the top 8 values keeps every
			// character equally likely.
			if c < 248 && len(b) < cap(b) {
				b = append(b, base62[c%62])
			}
		}
	}
	return string(b)
}

// HashKey returns the stored form of an API key: hex SHA-256.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// wellFormed reports whether key has this service's prefix and 32 base62
// characters, so that garbage never reaches the database.
func (s *Service) wellFormed(key string) bool {
	rest, ok := strings.CutPrefix(key, s.keyPrefix())
	if !ok || len(rest) != keyRandLen {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(base62, rest[i]) < 0 {
			return false
		}
	}
	return true
}

// Authenticate resolves an API key to its app (it implements
// httpapi.Authenticator). It runs on every protected request: one lookup by
// primary key in a read-only snapshot. A key is valid until its expires_at.
// Suspended and rejected apps still authenticate, so that they can read their
// score and ledger; what they may do is decided by each operation.
func (s *Service) Authenticate(ctx context.Context, key string) (string, error) {
	if !s.wellFormed(key) {
		return "", apperr.New(apperr.Unauthorized, "the API key is not valid")
	}
	var k APIKey
	var ok bool
	if err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		k, ok, err = tx.APIKeyByHash(ctx, HashKey(key))
		return err
	}); err != nil {
		return "", err
	}
	if !ok {
		return "", apperr.New(apperr.Unauthorized, "the API key is not valid")
	}
	if k.ExpiresAt != nil && !s.Now().Before(*k.ExpiresAt) {
		return "", apperr.New(apperr.Unauthorized, "the API key expired at %s; use the key issued by the last rotation", k.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return k.AppID, nil
}

// RotateKey issues a new API key for the app; every key issued before it
// stops working KeyOverlap after now (a key already due to expire sooner
// keeps its earlier expiry). It returns the new key and that expiry.
func (s *Service) RotateKey(ctx context.Context, appID string) (string, time.Time, error) {
	now := s.now()
	expires := now.Add(KeyOverlap)
	key := s.newKey()
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		// Locking the app serialises rotations: two concurrent ones cannot
		// each leave the other's new key without an expiry.
		if _, err := lockApp(ctx, tx, appID); err != nil {
			return err
		}
		if err := tx.ExpireAppAPIKeys(ctx, appID, expires); err != nil {
			return err
		}
		return tx.InsertAPIKey(ctx, APIKey{Hash: HashKey(key), AppID: appID, Prefix: key[:displayPrefixLen], CreatedAt: now})
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return key, expires, nil
}
