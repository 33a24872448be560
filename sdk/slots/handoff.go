package slots

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
)

// Channel names the handoff channel a click token was found through.
type Channel string

// Handoff channels, in the order Handoff.Find tries them.
const (
	// ChannelInbox: the per-user local inbox the publisher's SDK wrote.
	ChannelInbox Channel = "inbox"
	// ChannelWhereFroms: the download URL macOS records in the
	// com.apple.metadata:kMDItemWhereFroms extended attribute.
	ChannelWhereFroms Channel = "where_froms"
	// ChannelZoneIdentifier: the HostUrl (or ReferrerUrl) of the Windows
	// Zone.Identifier alternate data stream.
	ChannelZoneIdentifier Channel = "zone_identifier"
)

// ErrNoHandoff is returned by Handoff.Find when no channel holds a usable
// click token for the app: the install was not sent by an xpromo slot (or
// the token has expired), and nothing is claimed.
var ErrNoHandoff = errors.New("slots: no click token found for this install")

// Found is a click token found by Handoff.Find, and where.
type Found struct {
	Token   string
	Click   *attribution.Click // Token, parsed
	Channel Channel
	// Path is the file whose provenance carried the token (the inbox file
	// for ChannelInbox).
	Path string
	// URL is the download URL that carried the token ("" for the inbox).
	URL string
}

// Handoff finds, on the advertised app's first launch, the click token the
// publisher's SDK handed over. Deterministic channels only, in order:
//
//  1. the local inbox (Inbox) entry for AppID;
//  2. the download provenance of the installed app itself (installedPath):
//     macOS kMDItemWhereFroms, Windows Zone.Identifier — present when the
//     app was unpacked from a download that kept it;
//  3. the download provenance of the files in DownloadDirs (the user's
//     Downloads folder by default), newest first. On macOS a download that
//     shares the installed app's quarantine event id (the disk image or
//     archive the app came out of) is tried before the others.
//
// A token counts only if it parses as a click token, advertises AppID (its
// aud), and has not expired by Now (exp plus attribution.DefaultClockSkew):
// an old download of the same app, say before a reinstall, is skipped
// rather than claimed and rejected. Nothing is guessed: no fingerprint, no
// time-window matching.
type Handoff struct {
	// AppID is this (the advertised) app's id.
	AppID string
	// Inbox is the local inbox; an empty Dir skips the channel.
	Inbox Inbox
	// DownloadDirs are searched for downloads carrying a token. nil means
	// DefaultDownloadDirs(); an empty non-nil slice searches none.
	DownloadDirs []string
	// MaxScan bounds the files examined per directory, newest first.
	// Default 200.
	MaxScan int
	// Now is the clock. Default time.Now.
	Now func() time.Time

	// attrs reads the provenance attributes; nil means the OS's.
	attrs attrReader
}

// attrReader reads the raw provenance attributes of a file. Each method
// returns errNoAttr when the file has no such attribute (or the OS has no
// such thing). The per-OS files implement it for the real file system;
// parsing happens here, in OS-independent code.
type attrReader interface {
	// whereFroms is macOS com.apple.metadata:kMDItemWhereFroms (a binary plist).
	whereFroms(path string) ([]byte, error)
	// quarantine is macOS com.apple.quarantine.
	quarantine(path string) ([]byte, error)
	// zoneIdentifier is the Windows <path>:Zone.Identifier stream.
	zoneIdentifier(path string) ([]byte, error)
}

var errNoAttr = errors.New("slots: no such attribute")

// maxAttrSize bounds every attribute read.
const maxAttrSize = 64 << 10

// Find returns the first usable click token, trying the channels in order,
// or ErrNoHandoff. installedPath is the installed app (the .app bundle on
// macOS, the executable on Windows); "" skips that step. Unreadable files
// are skipped; only a cancelled ctx or an unusable inbox is an error.
func (h Handoff) Find(ctx context.Context, installedPath string) (Found, error) {
	if h.AppID == "" {
		return Found{}, errors.New("slots: Handoff.AppID is required")
	}
	if h.Inbox.Dir != "" {
		tok, ok, err := h.Inbox.Get(h.AppID)
		if err != nil {
			return Found{}, err
		}
		if ok {
			if click, usable := h.usable(tok); usable {
				p, _ := h.Inbox.path(h.AppID)
				return Found{Token: tok, Click: click, Channel: ChannelInbox, Path: p}, nil
			}
		}
	}
	attrs := h.attrs
	if attrs == nil {
		attrs = osAttrs{}
	}
	var event string // the installed app's quarantine event id (macOS)
	if installedPath != "" {
		if f, ok := h.fromFile(attrs, installedPath); ok {
			return f, nil
		}
		if b, err := attrs.quarantine(installedPath); err == nil {
			if q, err := ParseQuarantine(b); err == nil {
				event = q.EventID
			}
		}
	}
	dirs := h.DownloadDirs
	if dirs == nil {
		dirs = DefaultDownloadDirs()
	}
	for _, dir := range dirs {
		files := h.recentFiles(dir, installedPath)
		if event != "" {
			// The download the installed app came out of goes first.
			slices.SortStableFunc(files, func(a, b string) int {
				return cmp.Compare(boolRank(sameEvent(attrs, b, event)), boolRank(sameEvent(attrs, a, event)))
			})
		}
		for _, p := range files {
			if err := ctx.Err(); err != nil {
				return Found{}, err
			}
			if f, ok := h.fromFile(attrs, p); ok {
				return f, nil
			}
		}
	}
	return Found{}, ErrNoHandoff
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sameEvent(attrs attrReader, path, event string) bool {
	b, err := attrs.quarantine(path)
	if err != nil {
		return false
	}
	q, err := ParseQuarantine(b)
	return err == nil && q.EventID == event
}

// fromFile looks for a usable token in the download URLs recorded with
// path: kMDItemWhereFroms entries in order, then the Zone.Identifier
// HostUrl and ReferrerUrl.
func (h Handoff) fromFile(attrs attrReader, path string) (Found, bool) {
	if b, err := attrs.whereFroms(path); err == nil {
		if urls, err := ParseWhereFroms(b); err == nil {
			if f, ok := h.fromURLs(urls); ok {
				f.Channel, f.Path = ChannelWhereFroms, path
				return f, true
			}
		}
	}
	if b, err := attrs.zoneIdentifier(path); err == nil {
		if z, err := ParseZoneIdentifier(b); err == nil {
			if f, ok := h.fromURLs([]string{z.HostURL, z.ReferrerURL}); ok {
				f.Channel, f.Path = ChannelZoneIdentifier, path
				return f, true
			}
		}
	}
	return Found{}, false
}

func (h Handoff) fromURLs(urls []string) (Found, bool) {
	for _, u := range urls {
		for _, tok := range clickTokensInURL(u) {
			if click, ok := h.usable(tok); ok {
				return Found{Token: tok, Click: click, URL: u}, true
			}
		}
	}
	return Found{}, false
}

// usable reports whether tok is a click token for this app that has not
// expired.
func (h Handoff) usable(tok string) (*attribution.Click, bool) {
	click, err := attribution.ParseClick(tok)
	if err != nil || click.Claims.Advertiser != h.AppID {
		return nil, false
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	if !now().Before(click.Claims.ExpiresTime().Add(attribution.DefaultClockSkew)) {
		return nil, false
	}
	return click, true
}

// recentFiles lists dir's entries (files, and directories such as .app
// bundles), newest modification first, at most MaxScan, leaving out skip.
func (h Handoff) recentFiles(dir, skip string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	type file struct {
		path string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		if e.Type()&(fs.ModeSymlink|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice) != 0 {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if p == skip {
			continue
		}
		files = append(files, file{p, info.ModTime()})
	}
	slices.SortStableFunc(files, func(a, b file) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return cmp.Compare(a.path, b.path)
	})
	n := h.MaxScan
	if n <= 0 {
		n = 200
	}
	out := make([]string, 0, min(n, len(files)))
	for _, f := range files[:min(n, len(files))] {
		out = append(out, f.path)
	}
	return out
}

// readAttrFile reads a small file (an alternate data stream on Windows),
// mapping "does not exist" to errNoAttr.
func readAttrFile(path string) ([]byte, error) {
	b, err := readSmallFile(path, maxAttrSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoAttr
	}
	if err != nil {
		return nil, fmt.Errorf("slots: %w", err)
	}
	return b, nil
}
