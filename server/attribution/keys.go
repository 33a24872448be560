package attribution

import (
	"context"
	"errors"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/txunit"
)

// MaxSDKKeys is how many keys that are not revoked an app may hold: enough
// to rotate (a new key ships in a release while the old one is still in
// installed copies), few enough to keep the lookup table small.
const MaxSDKKeys = 10

// RegisterSDKKey registers an Ed25519 public key (unpadded base64url, as
// sdk/attribution.EncodePublicKey writes it) to the app. Its id is derived
// from the key (token.KeyID), so the SDK knows its kid without asking.
// Registering a key the app already holds returns it unchanged (created is
// false); a key of another app is sdk_key_in_use, a revoked one
// sdk_key_revoked.
func (s *Service) RegisterSDKKey(ctx context.Context, appID, publicKey string) (k SDKKey, created bool, err error) {
	pub, perr := token.ParsePublicKey(publicKey)
	if perr != nil {
		e := apperr.New(apperr.InvalidPublicKey, "public_key must be the 32-byte Ed25519 public key in unpadded base64url (43 characters), as `xpromo keys sdk new` prints it")
		e.Field = "public_key"
		return SDKKey{}, false, e
	}
	now := s.now()
	kid := token.KeyID(pub)
	err = s.Update(ctx, func(ctx context.Context, tx Tx) error {
		created = false
		// Locking the app serialises registrations, so the limit holds.
		if _, ok, err := tx.GetApp(ctx, appID, true); err != nil {
			return err
		} else if !ok {
			return apperr.New(apperr.NotFound, "app not found")
		}
		existing, found, err := tx.SDKKey(ctx, kid)
		if err != nil {
			return err
		}
		if found {
			switch {
			case existing.AppID != appID:
				return apperr.New(apperr.SDKKeyInUse, "this public key is registered to another app; generate a key of your own")
			case !existing.RevokedAt.IsZero():
				return apperr.New(apperr.SDKKeyRevoked, "SDK key %s was revoked at %s and cannot be registered again; generate a new key", kid, existing.RevokedAt.Format("2006-01-02T15:04:05Z07:00"))
			}
			k = existing
			return nil
		}
		keys, err := tx.AppSDKKeys(ctx, appID)
		if err != nil {
			return err
		}
		active := 0
		for _, x := range keys {
			if x.RevokedAt.IsZero() {
				active++
			}
		}
		if active >= MaxSDKKeys {
			return apperr.New(apperr.TooManySDKKeys, "the app already has %d SDK keys that are not revoked; revoke one first", active)
		}
		k = SDKKey{ID: kid, AppID: appID, PublicKey: pub, CreatedAt: now}
		if err := tx.InsertSDKKey(ctx, k); err != nil {
			return err
		}
		created = true
		return nil
	})
	if errors.Is(err, ledger.ErrConflict) {
		// Lost a race on the kid to another app's registration after the
		// retries: report it as what it is.
		return SDKKey{}, false, apperr.New(apperr.SDKKeyInUse, "this public key is registered to another app")
	}
	return k, created, err
}

// SDKKeys lists an app's SDK keys, oldest first, revoked ones included.
func (s *Service) SDKKeys(ctx context.Context, appID string) ([]SDKKey, error) {
	var out []SDKKey
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		out, err = tx.AppSDKKeys(ctx, appID)
		return err
	})
	return out, err
}

// RevokeSDKKey revokes one of the app's keys: from now on nothing it signs
// verifies (clicks, countersignatures, heartbeats). Chains it signed before
// keep their signatures. Revoking a revoked key changes nothing; another
// app's key is not_found.
func (s *Service) RevokeSDKKey(ctx context.Context, appID, kid string) (SDKKey, error) {
	now := s.now()
	var out SDKKey
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		k, found, err := tx.SDKKey(ctx, kid)
		if err != nil {
			return err
		}
		if !found || k.AppID != appID {
			return apperr.New(apperr.NotFound, "no SDK key %q for this app", kid)
		}
		if k.RevokedAt.IsZero() {
			if err := tx.RevokeSDKKey(ctx, kid, now); err != nil {
				return err
			}
			k.RevokedAt = now
		}
		out = k
		return nil
	})
	if err == nil {
		// Once committed: forgotten earlier, the old key could be read
		// back into the cache before the revocation commits.
		txunit.AfterCommit(ctx, func() { s.cache.keys.forget(kid) })
	}
	return out, err
}
