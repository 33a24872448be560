package slots

import (
	"bytes"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Files in the SDK's data directory.
const (
	deviceIDFile     = "device_id"
	installStateFile = "install.json"
	journalFile      = "events.journal"
)

// loadDeviceID returns the device id kept in dir, creating it on first use:
// "dev_" followed by 16 random bytes in unpadded base64url. It is opaque
// and local to this app's data directory (no hardware identifier, not
// shared with other apps); it is what the install countersignature and the
// heartbeats sign as "dev".
func loadDeviceID(dir string) (string, error) {
	p := filepath.Join(dir, deviceIDFile)
	b, err := readSmallFile(p, 256)
	if err == nil {
		id := string(bytes.TrimSpace(b))
		if validDeviceID(id) {
			return id, nil
		}
		return "", fmt.Errorf("slots: %s does not hold a device id", p)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("slots: %w", err)
	}
	var r [16]byte
	if _, err := crand.Read(r[:]); err != nil {
		return "", fmt.Errorf("slots: random: %w", err)
	}
	id := "dev_" + base64.RawURLEncoding.EncodeToString(r[:])
	if err := writeFileAtomic(p, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("slots: %w", err)
	}
	return id, nil
}

func validDeviceID(id string) bool {
	if len(id) < 8 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// InstallState is what the advertiser's SDK remembers about this install's
// attribution, in install.json in the data directory.
type InstallState struct {
	// CheckedAt is when the first launch looked for a click token; the SDK
	// looks only once.
	CheckedAt time.Time `json:"checked_at"`
	// Claimed is true when a token was found and countersigned; the fields
	// below are then set.
	Claimed          bool      `json:"claimed"`
	Channel          Channel   `json:"channel,omitempty"`
	Token            string    `json:"token,omitempty"`
	TokenHash        string    `json:"token_hash,omitempty"`
	Countersignature string    `json:"countersignature,omitempty"`
	ClaimedAt        time.Time `json:"claimed_at,omitzero"`
	// Answered is true once the server answered the install claim: with a
	// chain (ChainID, State), or with a refusal (Refusal holds its code).
	Answered bool              `json:"answered"`
	ChainID  string            `json:"chain_id,omitempty"`
	State    xpromo.ChainState `json:"state,omitempty"`
	Refusal  string            `json:"refusal,omitempty"`
	// HeartbeatSeq is the seq of the last heartbeat signed; the next one
	// uses HeartbeatSeq+1, so numbers only grow, across restarts too.
	HeartbeatSeq    int64     `json:"heartbeat_seq"`
	LastHeartbeatAt time.Time `json:"last_heartbeat_at,omitzero"`
}

// Active reports whether the install's chain still wants heartbeats: the
// claim was made and not refused, and the chain is (or may still be)
// `installed`.
func (s InstallState) Active() bool {
	if !s.Claimed || s.Refusal != "" {
		return false
	}
	return !s.Answered || s.State == xpromo.ChainInstalled
}

func loadInstallState(dir string) (InstallState, error) {
	var s InstallState
	b, err := readSmallFile(filepath.Join(dir, installStateFile), 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("slots: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("slots: %s: %w", installStateFile, err)
	}
	return s, nil
}

func saveInstallState(dir string, s InstallState) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, installStateFile), append(b, '\n')); err != nil {
		return fmt.Errorf("slots: %w", err)
	}
	return nil
}
