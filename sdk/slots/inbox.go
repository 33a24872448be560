package slots

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/xpromo/xpromo/sdk/attribution"
)

// Inbox is the first handoff channel: a per-user directory on the device
// where the publisher's SDK drops the signed click token for the advertised
// app, and where that app's SDK looks on first launch. One file per
// advertiser app id, "<app_id>.token" (see inboxFileName), holding the
// compact token; a newer
// click for the same app replaces the older token. Both apps run as the
// same user, so the directory is the user's own (mode 0700, files 0600).
//
// The default directory is os.UserConfigDir()/xpromo/inbox:
// ~/Library/Application Support/xpromo/inbox on macOS and
// %AppData%\xpromo\inbox on Windows. Sandboxed macOS apps see a private
// container instead of the user's Library; they fall back to the download
// channels unless both apps share an app group directory given as Dir.
type Inbox struct {
	// Dir is the inbox directory. DefaultInboxDir gives the standard one.
	Dir string
}

// InboxFileSuffix ends every inbox file name.
const InboxFileSuffix = ".token"

// DefaultInboxDir returns os.UserConfigDir()/xpromo/inbox.
func DefaultInboxDir() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("slots: no user config directory for the inbox: %w", err)
	}
	return filepath.Join(d, "xpromo", "inbox"), nil
}

// Put stores a click token as the pending handoff for the app it
// advertises (its aud), atomically (temporary file, fsync, rename). The
// token must parse as a click token.
func (in Inbox) Put(token string) error {
	click, err := attribution.ParseClick(token)
	if err != nil {
		return fmt.Errorf("slots: inbox: %w", err)
	}
	p, err := in.path(click.Claims.Advertiser)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(in.Dir, 0o700); err != nil {
		return fmt.Errorf("slots: inbox: %w", err)
	}
	if err := writeFileAtomic(p, []byte(token+"\n")); err != nil {
		return fmt.Errorf("slots: inbox: %w", err)
	}
	return nil
}

// Get returns the pending click token for appID, and false when there is
// none, or the file does not hold a click token advertising appID.
func (in Inbox) Get(appID string) (string, bool, error) {
	p, err := in.path(appID)
	if err != nil {
		return "", false, err
	}
	b, err := readSmallFile(p, attribution.MaxTokenSize+2)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("slots: inbox: %w", err)
	}
	tok := string(bytes.TrimSpace(b))
	if click, err := attribution.ParseClick(tok); err != nil || click.Claims.Advertiser != appID {
		return "", false, nil
	}
	return tok, true, nil
}

// Consume removes appID's inbox file if it still holds token, once the
// install claim that used it has been recorded; a token written meanwhile
// by a newer click is left in place.
func (in Inbox) Consume(appID, token string) error {
	cur, ok, err := in.Get(appID)
	if err != nil || !ok || cur != token {
		return err
	}
	p, _ := in.path(appID)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("slots: inbox: %w", err)
	}
	return nil
}

func (in Inbox) path(appID string) (string, error) {
	if in.Dir == "" {
		return "", errors.New("slots: inbox: no directory")
	}
	if appID == "" || len(appID) > attribution.MaxIDLen {
		return "", fmt.Errorf("slots: inbox: app id %q cannot name a file", appID)
	}
	return filepath.Join(in.Dir, inboxFileName(appID)), nil
}

// inboxFileName is "<app_id>.token" when the id is made of [A-Za-z0-9_-]
// only (as the reference server's "app_…" ids are); other ids, which may
// hold characters some file systems refuse (':' on Windows) or give them
// meaning ("."), are spelled "b64-<unpadded base64url of the id>.token".
func inboxFileName(appID string) string {
	for i := 0; i < len(appID); i++ {
		c := appID[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "b64-" + base64.RawURLEncoding.EncodeToString([]byte(appID)) + InboxFileSuffix
		}
	}
	return appID + InboxFileSuffix
}

// readSmallFile reads at most limit bytes of path and fails when the file
// is longer: handoff files are tiny, and anything else is not ours.
func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, limit+1)
	n, err := io.ReadFull(f, b)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	if int64(n) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b[:n], nil
}
