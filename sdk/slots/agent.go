package slots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The Event.Path of each kind of queued event, kept in the journal. The
// events are sent by kind (Agent.send), with the client's SDK* methods.
const (
	pathClick     = "/v1/sdk/click"
	pathInstall   = "/v1/sdk/install"
	pathHeartbeat = "/v1/sdk/heartbeat"
)

// Defaults of Config.
const (
	// DefaultHeartbeatEvery is how often Run sends a heartbeat while the
	// app runs and its install chain is `installed`.
	DefaultHeartbeatEvery = time.Hour
	// DefaultSendTimeout bounds the synchronous delivery attempt that
	// Click, ClaimInstall and Heartbeat make before leaving an event to the
	// offline queue.
	DefaultSendTimeout = 10 * time.Second
)

// Config configures an Agent. BaseURL, AppID, Key and DataDir are
// required.
type Config struct {
	// BaseURL is the xpromo server's root, e.g. "https://api.xpromo.example".
	BaseURL string
	// AppID is this app's app_id.
	AppID string
	// Key is this app's SDK key pair (attribution.KeyPairFromPrivate of the
	// private key made by `xpromo keys sdk new`), whose public half is
	// registered with the app. The SDK never holds the REST api_key.
	Key attribution.KeyPair
	// DataDir is a directory private to this app where the SDK keeps its
	// device id, install state and offline queue, e.g.
	// ~/Library/Application Support/<bundle id>/xpromo or
	// %LocalAppData%\<vendor>\<app>\xpromo. Created when missing. Only one
	// process may use it at a time.
	DataDir string
	// Platform is "mac" or "win"; default from the OS the app runs on.
	Platform xpromo.Platform
	// Locale (optional) is a BCP 47 tag sent (and signed) with fills, e.g.
	// "de-CH".
	Locale string

	// InboxDir is the handoff inbox shared by the apps of the user;
	// default DefaultInboxDir(). "-" disables the inbox channel.
	InboxDir string
	// DownloadDirs are searched for the download that installed this app;
	// nil means DefaultDownloadDirs().
	DownloadDirs []string
	// InstalledPath is this app as installed: the .app bundle on macOS, the
	// executable on Windows. Default: from os.Executable().
	InstalledPath string

	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Client talks to the server, through its SDK* methods, which send no
	// credential even when the client holds one. Default:
	// xpromo.NewClient(BaseURL).
	Client *xpromo.Client
	// HeartbeatEvery is Run's heartbeat period; default DefaultHeartbeatEvery.
	HeartbeatEvery time.Duration
	// SendTimeout bounds the synchronous delivery attempts; default
	// DefaultSendTimeout.
	SendTimeout time.Duration
	// Queue tunes the offline queue (Send, Now and OnDone are the Agent's).
	Queue QueueOptions
	// Logger receives what the SDK does not return as an error (a failed
	// inbox write, an event the server refused). Default: discard.
	Logger *slog.Logger
}

// Agent is the xpromo SDK inside an app: the publisher side (fill slots,
// render through the app's Renderer, report clicks, hand the token over)
// and the advertiser side (claim the install on first launch, send
// heartbeats). Reports go through a durable offline queue. Build one per
// app with New and Close it at exit; it is safe for concurrent use.
type Agent struct {
	cfg      Config
	client   *xpromo.Client
	now      func() time.Time
	deviceID string
	handoff  Handoff
	queue    *Queue
	lock     *os.File
	log      *slog.Logger

	closeOnce sync.Once
	closeErr  error

	claimMu sync.Mutex // one ClaimInstall at a time
	hbMu    sync.Mutex // one Heartbeat enqueue at a time
	mu      sync.Mutex // guards install
	install InstallState
}

// New opens the SDK's data directory (device id, install state, offline
// queue, replayed) and returns the Agent. It does no network I/O.
func New(cfg Config) (*Agent, error) {
	if cfg.BaseURL == "" && cfg.Client == nil {
		return nil, errors.New("slots: Config.BaseURL is required")
	}
	if cfg.AppID == "" {
		return nil, errors.New("slots: Config.AppID is required")
	}
	if !attribution.ValidIdentifier(cfg.AppID) {
		return nil, fmt.Errorf("slots: Config.AppID %q is not an app id", cfg.AppID)
	}
	if cfg.Locale != "" && !attribution.ValidLocale(cfg.Locale) {
		return nil, fmt.Errorf("slots: Config.Locale %q is not a BCP 47 language tag of at most %d characters", cfg.Locale, attribution.MaxLocaleLen)
	}
	if cfg.DataDir == "" {
		return nil, errors.New("slots: Config.DataDir is required")
	}
	if len(cfg.Key.Private) == 0 {
		return nil, errors.New("slots: Config.Key is required (the app's SDK key)")
	}
	kp, err := attribution.KeyPairFromPrivate(cfg.Key.Private)
	if err != nil {
		return nil, fmt.Errorf("slots: Config.Key: %w", err)
	}
	if cfg.Key.ID != "" && cfg.Key.ID != kp.ID {
		return nil, fmt.Errorf("slots: Config.Key.ID %q is not the id of its private key (%s)", cfg.Key.ID, kp.ID)
	}
	cfg.Key = kp
	if cfg.Platform == "" {
		cfg.Platform = platformOf(runtime.GOOS)
	}
	if !cfg.Platform.Valid() {
		return nil, fmt.Errorf("slots: Config.Platform %q is not mac or win", cfg.Platform)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HeartbeatEvery <= 0 {
		cfg.HeartbeatEvery = DefaultHeartbeatEvery
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = DefaultSendTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client := cfg.Client
	if client == nil {
		client = xpromo.NewClient(cfg.BaseURL, xpromo.WithUserAgent("xpromo-slots"))
	}
	inbox := Inbox{}
	switch cfg.InboxDir {
	case "-":
	case "":
		if d, err := DefaultInboxDir(); err == nil {
			inbox.Dir = d
		} else {
			log.Warn("xpromo: no inbox directory; the inbox handoff channel is off", "error", err)
		}
	default:
		inbox.Dir = cfg.InboxDir
	}
	if cfg.InstalledPath == "" {
		if exe, err := os.Executable(); err == nil {
			cfg.InstalledPath = installedPathOf(exe)
		}
	}

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("slots: data directory: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	a := &Agent{
		cfg: cfg, client: client, now: cfg.Now, lock: lock, log: log,
		handoff: Handoff{AppID: cfg.AppID, Inbox: inbox, DownloadDirs: cfg.DownloadDirs, Now: cfg.Now},
	}
	fail := func(err error) (*Agent, error) {
		if a.queue != nil {
			a.queue.Close()
		}
		lock.Close()
		return nil, err
	}
	if a.deviceID, err = loadDeviceID(cfg.DataDir); err != nil {
		return fail(err)
	}
	if a.install, err = loadInstallState(cfg.DataDir); err != nil {
		return fail(err)
	}
	qo := cfg.Queue
	qo.Send, qo.Now, qo.OnDone = a.send, cfg.Now, a.onDone
	if a.queue, err = OpenQueue(filepath.Join(cfg.DataDir, journalFile), qo); err != nil {
		return fail(err)
	}
	// A claim made before a crash that did not reach the queue is queued
	// again, with the same body and idempotency key.
	if err := a.requeueInstall(); err != nil {
		return fail(err)
	}
	return a, nil
}

func platformOf(goos string) xpromo.Platform {
	switch goos {
	case "darwin":
		return xpromo.PlatformMac
	case "windows":
		return xpromo.PlatformWin
	}
	return ""
}

// installedPathOf is the enclosing .app bundle of a macOS executable
// (…/Notes.app/Contents/MacOS/Notes → …/Notes.app), else exe itself.
func installedPathOf(exe string) string {
	for p := filepath.Dir(exe); p != filepath.Dir(p); p = filepath.Dir(p) {
		if strings.HasSuffix(p, ".app") {
			return p
		}
	}
	return exe
}

// DeviceID returns the SDK's opaque per-install device id.
func (a *Agent) DeviceID() string { return a.deviceID }

// Queue returns the offline queue, e.g. to inspect what is waiting.
func (a *Agent) Queue() *Queue { return a.queue }

// Run works in the background until ctx ends: it delivers queued events as
// soon as the network allows (with backoff), and sends a heartbeat every
// HeartbeatEvery while this install's chain wants them. Run is optional:
// without it, events are sent when the app calls Click, ClaimInstall,
// Heartbeat or Flush.
func (a *Agent) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.queue.Run(ctx, func(err error) { a.log.Debug("xpromo: offline queue", "error", err) })
	}()
	t := time.NewTicker(a.cfg.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			<-done
			return
		case <-t.C:
			if err := a.Heartbeat(ctx); err != nil && !errors.Is(err, ErrNoChain) {
				a.log.Warn("xpromo: heartbeat", "error", err)
			}
		}
	}
}

// Flush tries to deliver every queued event now; it returns the first
// error that stopped it (the events stay queued).
func (a *Agent) Flush(ctx context.Context) error { return a.queue.Flush(ctx) }

// Close closes the offline queue and releases the data directory. Queued
// events are sent after the next New.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() {
		a.closeErr = a.queue.Close()
		if err := a.lock.Close(); a.closeErr == nil {
			a.closeErr = err
		}
	})
	return a.closeErr
}

// flushSoon makes one bounded delivery attempt; failures leave the events
// queued for Run or the next call.
func (a *Agent) flushSoon(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.SendTimeout)
	defer cancel()
	if err := a.queue.Flush(ctx); err != nil {
		a.log.Debug("xpromo: events stay queued", "error", err)
	}
}

// send delivers one queued event (the queue's Sender) with the event's
// idempotency key, and returns the server's answer for onDone.
func (a *Agent) send(ctx context.Context, e Event) (json.RawMessage, error) {
	var meta xpromo.Response
	opts := func(key string) []xpromo.CallOption {
		return []xpromo.CallOption{xpromo.WithIdempotencyKey(key), xpromo.WithResponse(&meta)}
	}
	var (
		out any
		err error
	)
	switch e.Kind {
	case EventClick:
		var req xpromo.ClickRequest
		if err := decodeEvent(e, &req); err != nil {
			return nil, err
		}
		out, err = a.client.SDKClick(ctx, &req, opts(e.IdempotencyKey)...)
	case EventInstall:
		var req xpromo.InstallRequest
		if err := decodeEvent(e, &req); err != nil {
			return nil, err
		}
		out, err = a.client.SDKInstall(ctx, &req, opts(e.IdempotencyKey)...)
	case EventHeartbeat:
		req, key, serr := a.signHeartbeat(e)
		if serr != nil {
			return nil, serr
		}
		out, err = a.client.SDKHeartbeat(ctx, &req, opts(key)...)
	default:
		return nil, Permanent(fmt.Errorf("slots: event %d has unknown kind %q", e.Seq, e.Kind))
	}
	if err != nil {
		if meta.StatusCode >= 200 && meta.StatusCode < 300 {
			// The server accepted the event but its answer does not
			// decode: the event is delivered (resending it would only
			// replay the same answer), and onDone finds no answer.
			a.log.Warn("xpromo: unreadable answer to a delivered event", "kind", e.Kind, "error", err)
			return nil, nil
		}
		return nil, err
	}
	resp, err := json.Marshal(out)
	if err != nil {
		return nil, Permanent(err)
	}
	return resp, nil
}

// decodeEvent reads a queued event's body; one that does not decode can
// never be sent, and leaves the queue.
func decodeEvent(e Event, v any) error {
	if err := json.Unmarshal(e.Body, v); err != nil {
		return Permanent(fmt.Errorf("slots: %s event %d: %w", e.Kind, e.Seq, err))
	}
	return nil
}

// onDone records the server's answer to an event (the queue's OnDone).
func (a *Agent) onDone(e Event, resp json.RawMessage, err error) {
	switch e.Kind {
	case EventClick:
		if err != nil {
			a.log.Warn("xpromo: click refused", "code", xpromo.ErrorCode(err), "error", err)
		}
	case EventInstall:
		a.recordInstallAnswer(e, resp, err)
	case EventHeartbeat:
		a.recordHeartbeatAnswer(resp, err)
	}
}
