package slots

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/xpromo/xpromo/sdk/attribution"
)

// fakeAttrs holds raw attribute bytes per path, as the OS would return
// them; the parsing under test is the real one.
type fakeAttrs struct {
	where, quar, zone map[string][]byte
}

func newFakeAttrs() *fakeAttrs {
	return &fakeAttrs{where: map[string][]byte{}, quar: map[string][]byte{}, zone: map[string][]byte{}}
}

func get(m map[string][]byte, p string) ([]byte, error) {
	if b, ok := m[p]; ok {
		return b, nil
	}
	return nil, errNoAttr
}

func (f *fakeAttrs) whereFroms(p string) ([]byte, error)     { return get(f.where, p) }
func (f *fakeAttrs) quarantine(p string) ([]byte, error)     { return get(f.quar, p) }
func (f *fakeAttrs) zoneIdentifier(p string) ([]byte, error) { return get(f.zone, p) }

// download creates a file in dir modified at mod and returns its path.
func download(t *testing.T, dir, name string, mod time.Time) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("installer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
	return p
}

func handoffURL(t *testing.T, tok string) string {
	t.Helper()
	u, err := attribution.HandoffURL("https://dl.example.com/Notes.dmg", tok)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func zoneStream(hostURL, referrer string) []byte {
	s := "[ZoneTransfer]\r\nZoneId=3\r\nReferrerUrl=" + referrer + "\r\nHostUrl=" + hostURL + "\r\n"
	b := []byte{0xFF, 0xFE} // as Windows itself writes it: UTF-16LE with a BOM
	for _, c := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, c)
	}
	return b
}

type handoffFixture struct {
	h         Handoff
	attrs     *fakeAttrs
	downloads string
	installed string
	keys      testKeySet
}

func newHandoffFixture(t *testing.T) *handoffFixture {
	base := t.TempDir()
	f := &handoffFixture{
		attrs:     newFakeAttrs(),
		downloads: filepath.Join(base, "Downloads"),
		installed: filepath.Join(base, "Applications", "Notes.app"),
		keys:      testKeys(t),
	}
	os.MkdirAll(f.downloads, 0o755)
	os.MkdirAll(f.installed, 0o755)
	f.h = Handoff{
		AppID:        "app_adv",
		Inbox:        Inbox{Dir: filepath.Join(base, "inbox")},
		DownloadDirs: []string{f.downloads},
		Now:          func() time.Time { return testClickAt.Add(2 * time.Minute) },
		attrs:        f.attrs,
	}
	return f
}

func (f *handoffFixture) find(t *testing.T) Found {
	t.Helper()
	got, err := f.h.Find(context.Background(), f.installed)
	if err != nil {
		t.Fatal(err)
	}
	if got.Click == nil || got.Click.Raw != got.Token || got.Click.Claims.Advertiser != "app_adv" {
		t.Fatalf("Found.Click does not match the token: %+v", got)
	}
	return got
}

func TestHandoffInboxComesFirst(t *testing.T) {
	f := newHandoffFixture(t)
	inboxTok := newTestClick(t, f.keys.publisher, "app_adv")
	dlTok := newTestClick(t, f.keys.publisher, "app_adv")
	if err := f.h.Inbox.Put(inboxTok); err != nil {
		t.Fatal(err)
	}
	dmg := download(t, f.downloads, "Notes.dmg", testClickAt)
	f.attrs.where[dmg] = encodeBplist([]string{handoffURL(t, dlTok), "https://publisher.example/"})

	got := f.find(t)
	if got.Token != inboxTok || got.Channel != ChannelInbox || got.URL != "" {
		t.Fatalf("got %+v, want the inbox token", got)
	}
	// Once claimed, the inbox entry is consumed; the download remains.
	if err := f.h.Inbox.Consume("app_adv", inboxTok); err != nil {
		t.Fatal(err)
	}
	got = f.find(t)
	if got.Token != dlTok || got.Channel != ChannelWhereFroms || got.Path != dmg {
		t.Fatalf("after consuming the inbox: %+v", got)
	}
}

func TestHandoffSkipsExpiredAndForeignTokens(t *testing.T) {
	f := newHandoffFixture(t)
	// The inbox holds a token that expires; another app's token sits in a
	// newer download; an older download holds ours.
	if err := f.h.Inbox.Put(newTestClick(t, f.keys.publisher, "app_adv")); err != nil {
		t.Fatal(err)
	}
	foreign := download(t, f.downloads, "Other.dmg", testClickAt.Add(time.Minute))
	f.attrs.where[foreign] = encodeBplist([]string{handoffURL(t, newTestClick(t, f.keys.publisher, "app_other"))})
	ours := newTestClick(t, f.keys.publisher, "app_adv")
	dmg := download(t, f.downloads, "Notes.dmg", testClickAt)
	f.attrs.where[dmg] = encodeBplist([]string{"https://cdn.example.com/no-token", handoffURL(t, ours)})

	if got := f.find(t); got.Channel != ChannelInbox {
		t.Fatalf("before expiry: %+v", got)
	}
	// 15 minutes after the click plus the tolerated skew, every token here
	// has expired: nothing is claimed.
	f.h.Now = func() time.Time { return testClickAt.Add(attribution.ClickTTL + attribution.DefaultClockSkew) }
	if got, err := f.h.Find(context.Background(), f.installed); !errors.Is(err, ErrNoHandoff) {
		t.Fatalf("after expiry: %+v, %v", got, err)
	}
	// Back in time, without the inbox: the foreign download is passed over.
	f.h.Now = func() time.Time { return testClickAt.Add(time.Minute) }
	f.h.Inbox = Inbox{}
	got := f.find(t)
	if got.Token != ours || got.Path != dmg || got.URL != handoffURL(t, ours) {
		t.Fatalf("got %+v, want the token of Notes.dmg", got)
	}
}

// An app unpacked from a zip keeps the download's attributes: the
// installed app itself is tried before the Downloads folder.
func TestHandoffInstalledAppProvenance(t *testing.T) {
	f := newHandoffFixture(t)
	tok := newTestClick(t, f.keys.publisher, "app_adv")
	f.attrs.where[f.installed] = encodeBplist([]string{handoffURL(t, tok)})
	other := download(t, f.downloads, "Notes.zip", testClickAt.Add(time.Minute))
	f.attrs.where[other] = encodeBplist([]string{handoffURL(t, newTestClick(t, f.keys.publisher, "app_adv"))})
	if got := f.find(t); got.Token != tok || got.Path != f.installed {
		t.Fatalf("got %+v, want the installed app's own token", got)
	}
}

// An app dragged out of a disk image carries the image's quarantine event
// id: that image is tried first, even when a newer download exists.
func TestHandoffQuarantineEventPicksTheDiskImage(t *testing.T) {
	f := newHandoffFixture(t)
	const event = "3C5E0F6B-2E7A-4C2B-9C49-5E1A2C7D8B90"
	f.attrs.quar[f.installed] = []byte("0081;65f1c2a0;Safari;" + event)

	older := newTestClick(t, f.keys.publisher, "app_adv")
	dmg := download(t, f.downloads, "Notes.dmg", testClickAt)
	f.attrs.where[dmg] = encodeBplist([]string{handoffURL(t, older)})
	f.attrs.quar[dmg] = []byte("0083;65f1c2a0;Safari;" + event)

	newer := download(t, f.downloads, "Notes-2.dmg", testClickAt.Add(time.Minute))
	f.attrs.where[newer] = encodeBplist([]string{handoffURL(t, newTestClick(t, f.keys.publisher, "app_adv"))})
	f.attrs.quar[newer] = []byte("0083;65f1c2a0;Safari;00000000-0000-0000-0000-000000000000")

	if got := f.find(t); got.Token != older || got.Path != dmg {
		t.Fatalf("got %s, want the disk image the app came from", got.Path)
	}
	// Without the link, the newest download wins.
	delete(f.attrs.quar, f.installed)
	if got := f.find(t); got.Path != newer {
		t.Fatalf("got %s, want the newest download", got.Path)
	}
}

func TestHandoffZoneIdentifier(t *testing.T) {
	f := newHandoffFixture(t)
	tok := newTestClick(t, f.keys.publisher, "app_adv")
	exe := download(t, f.downloads, "NotesSetup.exe", testClickAt)
	f.attrs.zone[exe] = zoneStream(handoffURL(t, tok), "https://publisher.example/")
	got := f.find(t)
	if got.Token != tok || got.Channel != ChannelZoneIdentifier || got.Path != exe {
		t.Fatalf("got %+v", got)
	}
	// Some browsers record only the referring page with the token.
	f.attrs.zone[exe] = zoneStream("https://cdn.example.com/NotesSetup.exe", handoffURL(t, tok))
	if got := f.find(t); got.Token != tok || got.URL != handoffURL(t, tok) {
		t.Fatalf("from ReferrerUrl: %+v", got)
	}
}

func TestHandoffNothingFound(t *testing.T) {
	f := newHandoffFixture(t)
	download(t, f.downloads, "photo.jpg", testClickAt)
	dmg := download(t, f.downloads, "Notes.dmg", testClickAt)
	f.attrs.where[dmg] = []byte("garbage")
	f.attrs.zone[dmg] = []byte("garbage")
	if _, err := f.h.Find(context.Background(), f.installed); !errors.Is(err, ErrNoHandoff) {
		t.Fatalf("got %v, want ErrNoHandoff", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.h.Find(ctx, f.installed); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// MaxScan bounds the files examined, newest first.
func TestHandoffMaxScan(t *testing.T) {
	f := newHandoffFixture(t)
	tok := newTestClick(t, f.keys.publisher, "app_adv")
	dmg := download(t, f.downloads, "Notes.dmg", testClickAt)
	f.attrs.where[dmg] = encodeBplist([]string{handoffURL(t, tok)})
	for i := range 3 {
		download(t, f.downloads, "newer"+itoa(i), testClickAt.Add(time.Duration(i+1)*time.Minute))
	}
	f.h.MaxScan = 3
	if _, err := f.h.Find(context.Background(), f.installed); !errors.Is(err, ErrNoHandoff) {
		t.Fatalf("with MaxScan 3: %v", err)
	}
	f.h.MaxScan = 4
	if got := f.find(t); got.Path != dmg {
		t.Fatalf("with MaxScan 4: %+v", got)
	}
}

func TestInbox(t *testing.T) {
	keys := testKeys(t)
	in := Inbox{Dir: filepath.Join(t.TempDir(), "xpromo", "inbox")}
	if _, ok, err := in.Get("app_adv"); ok || err != nil {
		t.Fatalf("empty inbox: %v %v", ok, err)
	}
	first := newTestClick(t, keys.publisher, "app_adv")
	second := newTestClick(t, keys.publisher, "app_adv")
	if err := in.Put(first); err != nil {
		t.Fatal(err)
	}
	if err := in.Put(second); err != nil { // a newer click replaces the older
		t.Fatal(err)
	}
	got, ok, err := in.Get("app_adv")
	if err != nil || !ok || got != second {
		t.Fatalf("Get = %q %v %v", got, ok, err)
	}
	p := filepath.Join(in.Dir, "app_adv.token")
	if runtime.GOOS != "windows" {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("inbox file: %v %v", st.Mode(), err)
		}
		dst, _ := os.Stat(in.Dir)
		if dst.Mode().Perm() != 0o700 {
			t.Fatalf("inbox dir mode %v", dst.Mode())
		}
	}
	if m, _ := filepath.Glob(filepath.Join(in.Dir, ".*")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
	// Consuming an older token leaves the newer one.
	if err := in.Consume("app_adv", first); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := in.Get("app_adv"); !ok {
		t.Fatal("Consume of an older token removed the newer one")
	}
	if err := in.Consume("app_adv", second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("consumed token still there: %v", err)
	}
	// Only click tokens go in, and a file holding another app's token is
	// not handed out.
	if err := in.Put(testJWS); err == nil {
		t.Fatal("Put accepted a token that is not a click token")
	}
	os.WriteFile(p, []byte(newTestClick(t, keys.publisher, "app_other")), 0o600)
	if _, ok, _ := in.Get("app_adv"); ok {
		t.Fatal("Get returned another app's token")
	}
	os.WriteFile(p, make([]byte, 10000), 0o600)
	if _, _, err := in.Get("app_adv"); err == nil {
		t.Fatal("Get read an oversized file")
	}
}

func TestInboxFileNames(t *testing.T) {
	for id, want := range map[string]string{
		"app_3fK9x-2": "app_3fK9x-2.token",
		"..":          "b64-Li4.token",
		"com.ex:app":  "b64-Y29tLmV4OmFwcA.token",
	} {
		if got := inboxFileName(id); got != want {
			t.Errorf("inboxFileName(%q) = %q, want %q", id, got, want)
		}
	}
	in := Inbox{Dir: t.TempDir()}
	if _, _, err := in.Get(""); err == nil {
		t.Error("Get(\"\") accepted")
	}
	if _, _, err := (Inbox{}).Get("app_adv"); err == nil {
		t.Error("an inbox without a directory accepted")
	}
}

func TestDefaultInboxDir(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/home/u/.config")
	t.Setenv("HOME", "/home/u")
	d, err := DefaultInboxDir()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.UserConfigDir()
	if d != filepath.Join(cfg, "xpromo", "inbox") {
		t.Fatalf("DefaultInboxDir = %q", d)
	}
}
