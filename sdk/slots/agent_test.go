package slots

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// device is one user's machine: a shared inbox and Downloads folder.
type device struct {
	dir       string
	inbox     string
	downloads string
}

func newDevice(t *testing.T) device {
	d := device{dir: t.TempDir()}
	d.inbox = filepath.Join(d.dir, "config", "xpromo", "inbox")
	d.downloads = filepath.Join(d.dir, "Downloads")
	os.MkdirAll(d.downloads, 0o755)
	return d
}

// newAgent starts the SDK of app (app_pub or app_adv) on dev against srv.
// The client retries quickly so that tests of a lost answer stay fast.
func newAgent(t *testing.T, srv *sdkServer, dev device, app string) *Agent {
	t.Helper()
	k := testKeys(t)
	key := k.publisher
	if app == "app_adv" {
		key = k.advertiser
	}
	a, err := New(Config{
		AppID: app, Key: attribution.KeyPair{ID: key.ID, Private: key.Private},
		DataDir:  filepath.Join(dev.dir, "data", app),
		Platform: xpromo.PlatformMac,
		InboxDir: dev.inbox, DownloadDirs: []string{dev.downloads},
		InstalledPath: filepath.Join(dev.dir, "Applications", app+".app"),
		Now:           srv.clock,
		Client:        xpromo.NewClient(srv.srv.URL, xpromo.WithRetries(2), xpromo.WithRetryWait(time.Millisecond, 2*time.Millisecond)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// crash abandons an agent as a dying process would: no clean close, but
// the OS releases its files and lock.
func crash(a *Agent) {
	a.queue.mu.Lock()
	a.queue.j.f.Close()
	a.queue.closed = true
	a.queue.mu.Unlock()
	a.lock.Close()
}

type recordingRenderer struct {
	mu   sync.Mutex
	ads  []Ad
	out  Outcome
	ctxs []context.Context
}

func (r *recordingRenderer) Render(ctx context.Context, ad Ad) (Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ads = append(r.ads, ad)
	r.ctxs = append(r.ctxs, ctx)
	return r.out, nil
}

// newPublisher starts app_pub's SDK on a fresh device against a fresh
// server; the agent is closed when the test ends.
func newPublisher(t *testing.T) (*sdkServer, *Agent) {
	t.Helper()
	srv := newSDKServer(t)
	pub := newAgent(t, srv, newDevice(t), "app_pub")
	t.Cleanup(func() { pub.Close() })
	return srv, pub
}

// mustFill fills slot or fails the test.
func mustFill(t *testing.T, pub *Agent, slot xpromo.Slot) *Placement {
	t.Helper()
	p, err := pub.Fill(context.Background(), slot)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mustShowClicked shows slot to a user who clicks the ad, or fails the test.
func mustShowClicked(t *testing.T, pub *Agent, slot xpromo.Slot) ShowResult {
	t.Helper()
	res, err := pub.Show(context.Background(), slot, &recordingRenderer{out: Clicked})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// clickedDevice is a device whose inbox holds a click on an ad for
// app_adv, and a server whose clock stands a minute after the click.
func clickedDevice(t *testing.T) (*sdkServer, device) {
	t.Helper()
	srv := newSDKServer(t)
	dev := newDevice(t)
	if err := (Inbox{Dir: dev.inbox}).Put(newTestClick(t, testKeys(t).publisher, "app_adv")); err != nil {
		t.Fatal(err)
	}
	srv.set(func(s *sdkServer) { s.now = testClickAt.Add(time.Minute) })
	return srv, dev
}

// claimedAdvertiser starts app_adv's SDK on a clickedDevice and claims the
// install; the agent is closed when the test ends.
func claimedAdvertiser(t *testing.T) (*sdkServer, *Agent) {
	t.Helper()
	srv, dev := clickedDevice(t)
	adv := newAgent(t, srv, dev, "app_adv")
	t.Cleanup(func() { adv.Close() })
	if s, err := adv.ClaimInstall(context.Background()); err != nil || s.State != xpromo.ChainInstalled {
		t.Fatalf("claim: %+v %v", s, err)
	}
	return srv, adv
}

func TestShowAndClick(t *testing.T) {
	srv := newSDKServer(t)
	dev := newDevice(t)
	pub := newAgent(t, srv, dev, "app_pub")
	defer pub.Close()
	r := &recordingRenderer{out: Clicked}

	res, err := pub.Show(context.Background(), SlotOnboardingComplete, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ads) != 1 {
		t.Fatalf("rendered %d ads", len(r.ads))
	}
	ad := r.ads[0]
	want := Ad{Slot: SlotOnboardingComplete, Title: "Notes", IconURL: "https://cdn.example.com/notes.png",
		Description: "Plain-text notes, synced.", CTA: "Download", SponsoredLabel: "Sponsored",
		AdvertiserAppID: "app_adv", ExpiresAt: srv.clock().Add(attribution.OfferTTL)}
	if ad != want {
		t.Fatalf("ad %+v\nwant %+v", ad, want)
	}
	if dl, ok := r.ctxs[0].Deadline(); !ok || dl.IsZero() {
		t.Fatal("the render context has no deadline (the offer's expiry)")
	}
	if res.Outcome != Clicked || res.DownloadURL == "" {
		t.Fatalf("result %+v", res)
	}

	// The download URL is the advertiser's, with the token added.
	u, _ := url.Parse(res.DownloadURL)
	if u.Host != "dl.example.com" || u.Path != "/Notes.dmg" || u.Query().Get("v") != "2" {
		t.Fatalf("download URL %s", res.DownloadURL)
	}
	tok, ok := TokenFromURL(res.DownloadURL)
	if !ok || tok != res.Placement.Token() {
		t.Fatalf("token in URL: %q %v", tok, ok)
	}
	click, _ := attribution.ParseClick(tok)
	if click.Claims.IssuedAt != srv.clock().Unix() || click.Claims.ExpiresTime() != click.Claims.IssuedTime().Add(15*time.Minute) {
		t.Fatalf("iat/exp %d/%d", click.Claims.IssuedAt, click.Claims.ExpiresAt)
	}
	if click.Claims.Offer != res.Placement.Offer() {
		t.Fatal("the click token does not carry the offer unchanged")
	}
	// The server verified and recorded the click (the publisher's signature,
	// the MAC, the times).
	c := srv.chain(click.Claims.Nonce)
	if c == nil || c.state != xpromo.ChainClicked || c.clickCalls != 1 {
		t.Fatalf("server chain %+v", c)
	}
	if pub.Queue().Len() != 0 {
		t.Fatalf("%d events left queued", pub.Queue().Len())
	}
	// The inbox holds the token for the advertised app.
	if got, ok, _ := (Inbox{Dir: dev.inbox}).Get("app_adv"); !ok || got != tok {
		t.Fatalf("inbox: %q %v", got, ok)
	}
	// A second Click on the placement is the same click.
	again, err := res.Placement.Click(context.Background())
	if err != nil || again != res.DownloadURL {
		t.Fatalf("second click: %q %v", again, err)
	}
	if n := len(srv.recorded(pathClick)); n != 1 {
		t.Fatalf("click reported %d times", n)
	}
}

func TestShowDismissedAndNoFill(t *testing.T) {
	srv, pub := newPublisher(t)
	res, err := pub.Show(context.Background(), SlotAboutWindow, &recordingRenderer{out: Dismissed})
	if err != nil || res.Outcome != Dismissed || res.DownloadURL != "" {
		t.Fatalf("dismissed: %+v %v", res, err)
	}
	if n := len(srv.recorded(pathClick)); n != 0 {
		t.Fatalf("%d clicks reported for a dismissed ad", n)
	}

	srv.set(func(s *sdkServer) { s.noFill = true })
	r := &recordingRenderer{out: Clicked}
	_, err = pub.Show(context.Background(), SlotBeforeQuit, r)
	var nf *NoFillError
	if !errors.Is(err, ErrNoFill) || !errors.As(err, &nf) || nf.Reason != xpromo.NoFillNoCampaign {
		t.Fatalf("no fill: %v", err)
	}
	if len(r.ads) != 0 {
		t.Fatal("rendered without a fill")
	}
	if _, err := pub.Fill(context.Background(), "splash_screen"); err == nil {
		t.Fatal("an unknown slot was filled")
	}
}

// Every fill request is signed with the app's SDK key, over the fields it
// sends, at the SDK's clock; the server verified each (sdkServer).
func TestFillIsSigned(t *testing.T) {
	srv, pub := newPublisher(t)
	mustFill(t, pub, SlotAboutWindow)
	srv.advance(time.Minute)
	mustFill(t, pub, SlotBeforeQuit)
	got := srv.fillsSent()
	if len(got) != 2 {
		t.Fatalf("%d signed fills accepted", len(got))
	}
	first := attribution.FillClaims{AppID: "app_pub", Slot: string(SlotAboutWindow), Platform: "mac",
		DeviceID: pub.DeviceID(), IssuedAt: srv.clock().Add(-time.Minute).Unix()}
	if got[0] != first || got[1].Slot != string(SlotBeforeQuit) || got[1].IssuedAt != srv.clock().Unix() {
		t.Fatalf("signed fills %+v, want first %+v", got, first)
	}
	for _, r := range srv.recorded("/v1/sdk/fill") {
		var req xpromo.FillRequest
		if err := json.Unmarshal(r.Body, &req); err != nil || req.Signature == "" {
			t.Fatalf("fill request %s without a signature (%v)", r.Body, err)
		}
	}
}

// A fill signed by a key the server does not hold for the app is refused,
// and the SDK shows nothing.
func TestFillWithAnotherAppsKeyIsRefused(t *testing.T) {
	srv := newSDKServer(t)
	k := testKeys(t)
	a, err := New(Config{AppID: "app_pub", Key: k.advertiser, DataDir: t.TempDir(), Platform: xpromo.PlatformMac,
		InboxDir: "-", Now: srv.clock, Client: xpromo.NewClient(srv.srv.URL, xpromo.WithRetries(0))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r := &recordingRenderer{out: Clicked}
	_, err = a.Show(context.Background(), SlotAboutWindow, r)
	if !xpromo.IsCode(err, string(xpromo.FraudBadSignature)) || len(r.ads) != 0 {
		t.Fatalf("fill signed with app_adv's key: %v (%d ads)", err, len(r.ads))
	}
	if n := len(srv.fillsSent()); n != 0 {
		t.Fatalf("%d fills accepted", n)
	}
}

// The SDK shows nothing whose offer does not match the creative or the app.
func TestFillRefusesMismatchedOffer(t *testing.T) {
	for name, f := range map[string]func(*attribution.Offer){
		"other publisher":  func(o *attribution.Offer) { o.Publisher = "app_else" },
		"other advertiser": func(o *attribution.Offer) { o.Advertiser = "app_else" },
		"other platform":   func(o *attribution.Offer) { o.Platform = "win" },
	} {
		t.Run(name, func(t *testing.T) {
			srv, pub := newPublisher(t)
			srv.set(func(s *sdkServer) { s.offerFor = f })
			r := &recordingRenderer{out: Clicked}
			_, err := pub.Show(context.Background(), SlotSettingsIdle, r)
			if err == nil || len(r.ads) != 0 {
				t.Fatalf("shown: %v", err)
			}
			// Another advertiser than the creative's is what a mismatch
			// canary is: an ordinary no fill, nothing for the app to handle.
			var nf *NoFillError
			if isNoFill := errors.As(err, &nf) && nf.Reason == NoFillOfferMismatch; isNoFill != (name == "other advertiser") {
				t.Fatalf("%s: %v", name, err)
			}
		})
	}
}

// An offer that lapsed before it arrived (what a lapsed canary is) is no
// fill: nothing is rendered, nothing can be clicked.
func TestFillOfLapsedOfferIsNoFill(t *testing.T) {
	srv, pub := newPublisher(t)
	srv.set(func(s *sdkServer) {
		s.offerFor = func(o *attribution.Offer) { o.OfferedAt = s.now.Add(-25 * time.Hour).Unix() }
	})
	r := &recordingRenderer{out: Clicked}
	_, err := pub.Show(context.Background(), SlotSettingsIdle, r)
	var nf *NoFillError
	if !errors.As(err, &nf) || nf.Reason != NoFillOfferLapsed || !errors.Is(err, ErrNoFill) || len(r.ads) != 0 {
		t.Fatalf("lapsed offer: %v, %d ads rendered", err, len(r.ads))
	}
	var clicked int
	srv.set(func(s *sdkServer) { clicked = len(s.chains) })
	if clicked != 0 {
		t.Fatalf("%d clicks reported", clicked)
	}
}

func TestClickAfterOfferLapsed(t *testing.T) {
	srv, pub := newPublisher(t)
	p := mustFill(t, pub, SlotUpdateInstalled)
	srv.advance(attribution.OfferTTL)
	if _, err := p.Click(context.Background()); !errors.Is(err, ErrOfferExpired) {
		t.Fatalf("click after the offer lapsed: %v", err)
	}
}

// Offline at click time: the URL is still returned (the token travels with
// the download), the report waits in the queue across a restart, and is
// delivered once the server is back.
func TestClickReportSurvivesOfflineAndRestart(t *testing.T) {
	srv := newSDKServer(t)
	dev := newDevice(t)
	pub := newAgent(t, srv, dev, "app_pub")
	p := mustFill(t, pub, SlotOnboardingComplete)
	srv.set(func(s *sdkServer) { s.down = true })
	dl, err := p.Click(context.Background())
	if err != nil || dl == "" {
		t.Fatalf("offline click: %q %v", dl, err)
	}
	if pub.Queue().Len() != 1 {
		t.Fatalf("%d events queued", pub.Queue().Len())
	}
	crash(pub)

	srv.set(func(s *sdkServer) { s.down = false })
	srv.advance(time.Minute)
	pub = newAgent(t, srv, dev, "app_pub")
	defer pub.Close()
	if err := pub.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	tok, _ := TokenFromURL(dl)
	click, _ := attribution.ParseClick(tok)
	if c := srv.chain(click.Claims.Nonce); c == nil || c.clickCalls != 1 {
		t.Fatalf("server chain after replay: %+v", c)
	}
}

// The server processes a click but its answer is lost: the retry carries
// the same Idempotency-Key and body, and the server answers from the first
// time instead of acting twice.
func TestLostAnswerIsReplayedNotRepeated(t *testing.T) {
	srv, pub := newPublisher(t)
	p := mustFill(t, pub, SlotOnboardingComplete)
	srv.set(func(s *sdkServer) { s.dropAfter = 1 })
	if _, err := p.Click(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs := srv.recorded(pathClick)
	if len(reqs) < 2 || reqs[0].Key != reqs[1].Key || string(reqs[0].Body) != string(reqs[1].Body) {
		t.Fatalf("click requests %+v", reqs)
	}
	click, _ := attribution.ParseClick(p.Token())
	if c := srv.chain(click.Claims.Nonce); c.clickCalls != 1 {
		t.Fatalf("the server acted %d times", c.clickCalls)
	}
}

// The whole story on one device: the publisher's ad is clicked, the
// advertised app's first launch claims the install through the inbox, and
// heartbeats activate the chain after 48 hours.
func TestInstallClaimAndHeartbeats(t *testing.T) {
	srv := newSDKServer(t)
	dev := newDevice(t)
	pub := newAgent(t, srv, dev, "app_pub")
	defer pub.Close()
	token := mustShowClicked(t, pub, SlotOnboardingComplete).Placement.Token()

	srv.advance(3 * time.Minute) // download and install
	adv := newAgent(t, srv, dev, "app_adv")
	s, err := adv.ClaimInstall(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Claimed || s.Channel != ChannelInbox || s.Token != token || !s.Answered || s.State != xpromo.ChainInstalled || s.ChainID == "" {
		t.Fatalf("install state %+v", s)
	}
	// What the server holds: both signatures, bound to each other.
	click, _ := attribution.ParseClick(token)
	c := srv.chain(click.Claims.Nonce)
	if c.install == nil || c.install.Claims.DeviceID != adv.DeviceID() || c.install.Claims.ClaimedAt != srv.clock().Unix() ||
		c.install.Claims.TokenHash != attribution.TokenHashString(token) || c.install.Header.Kid != testKeys(t).advertiser.ID {
		t.Fatalf("server install %+v", c.install)
	}
	if _, ok, _ := (Inbox{Dir: dev.inbox}).Get("app_adv"); ok {
		t.Fatal("the inbox entry was not consumed")
	}
	// Later launches do not claim again.
	if again, err := adv.ClaimInstall(context.Background()); err != nil || again.Countersignature != s.Countersignature {
		t.Fatalf("second launch: %+v %v", again, err)
	}
	if n := len(srv.recorded(pathInstall)); n != 1 {
		t.Fatalf("%d install claims sent", n)
	}

	// Heartbeats: one at launch, one a day later; then one in the
	// 48-72 h window activates the chain and they stop.
	for _, step := range []time.Duration{time.Minute, 24 * time.Hour, 25 * time.Hour} {
		srv.advance(step)
		if err := adv.Heartbeat(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := adv.Install(); got.State != xpromo.ChainActivated48h || got.HeartbeatSeq != 3 {
		t.Fatalf("after 49 h: %+v", got)
	}
	if err := adv.Heartbeat(context.Background()); !errors.Is(err, ErrNoChain) {
		t.Fatalf("heartbeat after activation: %v", err)
	}
	hbs := srv.heartbeatsSent()
	if len(hbs) != 3 {
		t.Fatalf("%d heartbeats", len(hbs))
	}
	for i, hb := range hbs {
		if hb.Seq != int64(i+1) || hb.DeviceID != adv.DeviceID() || hb.AppID != "app_adv" || hb.TokenHash != s.TokenHash {
			t.Fatalf("heartbeat %d: %+v", i, hb)
		}
	}
	// The state, the device id and the seq survive a restart.
	dev1 := adv.DeviceID()
	adv.Close()
	adv = newAgent(t, srv, dev, "app_adv")
	defer adv.Close()
	if got := adv.Install(); got.State != xpromo.ChainActivated48h || got.HeartbeatSeq != 3 || adv.DeviceID() != dev1 {
		t.Fatalf("after restart: %+v %s", got, adv.DeviceID())
	}
}

// Without an inbox (a sandboxed app, another user), the token comes from
// the download's provenance; here through a Zone.Identifier, as on Windows.
func TestInstallClaimFromDownloadProvenance(t *testing.T) {
	srv := newSDKServer(t)
	dev := newDevice(t)
	pub := newAgent(t, srv, dev, "app_pub")
	defer pub.Close()
	res := mustShowClicked(t, pub, SlotAboutWindow)
	os.RemoveAll(dev.inbox)
	exe := download(t, dev.downloads, "NotesSetup.exe", srv.clock())
	fake := newFakeAttrs()
	fake.zone[exe] = zoneStream(res.DownloadURL, "https://publisher.example/")

	srv.advance(2 * time.Minute)
	adv := newAgent(t, srv, dev, "app_adv")
	defer adv.Close()
	adv.handoff.attrs = fake
	s, err := adv.ClaimInstall(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Claimed || s.Channel != ChannelZoneIdentifier || s.Token != res.Placement.Token() || s.State != xpromo.ChainInstalled {
		t.Fatalf("state %+v", s)
	}
}

// An organic install (no token anywhere) claims nothing, sends nothing,
// and a later launch does not look again.
func TestOrganicInstall(t *testing.T) {
	srv := newSDKServer(t)
	dev := newDevice(t)
	adv := newAgent(t, srv, dev, "app_adv")
	defer adv.Close()
	s, err := adv.ClaimInstall(context.Background())
	if err != nil || s.Claimed || s.CheckedAt.IsZero() {
		t.Fatalf("organic: %+v %v", s, err)
	}
	// A click on an ad for the app after it was installed is not an install.
	if err := (Inbox{Dir: dev.inbox}).Put(newTestClick(t, testKeys(t).publisher, "app_adv")); err != nil {
		t.Fatal(err)
	}
	if s, _ := adv.ClaimInstall(context.Background()); s.Claimed {
		t.Fatal("claimed on a later launch")
	}
	if err := adv.Heartbeat(context.Background()); !errors.Is(err, ErrNoChain) {
		t.Fatalf("heartbeat without a chain: %v", err)
	}
	if n := len(srv.recorded(pathInstall)) + len(srv.recorded(pathHeartbeat)); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// The claim is remembered before it is queued; a crash in between (here:
// the journal is lost) is repaired on the next start with the same
// countersignature, and the server sees one claim.
func TestInstallClaimSurvivesCrash(t *testing.T) {
	srv, dev := clickedDevice(t)
	srv.set(func(s *sdkServer) { s.down = true })
	adv := newAgent(t, srv, dev, "app_adv")
	s, err := adv.ClaimInstall(context.Background())
	if err != nil || !s.Claimed || s.Answered {
		t.Fatalf("offline claim: %+v %v", s, err)
	}
	crash(adv)
	os.Remove(filepath.Join(dev.dir, "data", "app_adv", journalFile))

	srv.set(func(s *sdkServer) { s.down = false })
	adv = newAgent(t, srv, dev, "app_adv")
	defer adv.Close()
	if adv.Queue().Len() != 1 {
		t.Fatalf("%d events queued after restart, want the install claim", adv.Queue().Len())
	}
	if err := adv.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := adv.Install()
	if got.State != xpromo.ChainInstalled || got.Countersignature != s.Countersignature {
		t.Fatalf("after replay: %+v", got)
	}
	var req xpromo.InstallRequest
	reqs := srv.recorded(pathInstall)
	json.Unmarshal(reqs[len(reqs)-1].Body, &req)
	if req.Countersignature != s.Countersignature {
		t.Fatal("a different countersignature was sent after the crash")
	}
}

// A claim that reaches the server too late (offline past the token's
// expiry) is refused; the SDK records it and sends no heartbeats.
func TestInstallClaimRefused(t *testing.T) {
	srv, dev := clickedDevice(t)
	srv.set(func(s *sdkServer) { s.down = true })
	adv := newAgent(t, srv, dev, "app_adv")
	defer adv.Close()
	if _, err := adv.ClaimInstall(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.set(func(s *sdkServer) { s.down = false; s.now = s.now.Add(time.Hour) })
	if err := adv.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := adv.Install()
	if !s.Answered || s.Refusal != attribution.CodeTokenExpired || s.Active() {
		t.Fatalf("state %+v", s)
	}
	if err := adv.Heartbeat(context.Background()); !errors.Is(err, ErrNoChain) {
		t.Fatalf("heartbeat after refusal: %v", err)
	}
}

// A heartbeat queued offline is signed when it is finally sent (the
// server refuses stale ones), and a pending heartbeat is not doubled.
func TestHeartbeatQueuedOfflineIsSignedWhenSent(t *testing.T) {
	srv, adv := claimedAdvertiser(t)
	srv.set(func(s *sdkServer) { s.down = true })
	for range 3 {
		if err := adv.Heartbeat(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if adv.Queue().Len() != 1 {
		t.Fatalf("%d heartbeats queued, want 1", adv.Queue().Len())
	}
	srv.set(func(s *sdkServer) { s.down = false; s.now = s.now.Add(50 * time.Hour) })
	if err := adv.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	hbs := srv.heartbeatsSent()
	if len(hbs) != 1 || hbs[0].SentAt != srv.clock().Unix() {
		t.Fatalf("heartbeats %+v, want one signed at %d", hbs, srv.clock().Unix())
	}
	// Failed attempts used seqs 1-3 (each attempt is signed anew); the
	// one that arrived is above them.
	if hbs[0].Seq <= 1 || adv.Install().State != xpromo.ChainActivated48h {
		t.Fatalf("seq %d, state %s", hbs[0].Seq, adv.Install().State)
	}
}

func TestRunSendsHeartbeats(t *testing.T) {
	srv, adv := claimedAdvertiser(t)
	adv.cfg.HeartbeatEvery = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { adv.Run(ctx); close(done) }()
	for len(srv.heartbeatsSent()) < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}

func TestNewValidatesAndLocks(t *testing.T) {
	srv := newSDKServer(t)
	dev := newDevice(t)
	a := newAgent(t, srv, dev, "app_pub")
	defer a.Close()
	k := testKeys(t)
	_, err := New(Config{BaseURL: srv.srv.URL, AppID: "app_pub", Key: k.publisher, DataDir: filepath.Join(dev.dir, "data", "app_pub"), Platform: xpromo.PlatformMac})
	if !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("second agent on one data directory: %v", err)
	}
	base := Config{BaseURL: srv.srv.URL, AppID: "app_pub", Key: k.publisher, DataDir: t.TempDir(), Platform: xpromo.PlatformMac}
	for name, mut := range map[string]func(*Config){
		"no app id":     func(c *Config) { c.AppID = "" },
		"bad app id":    func(c *Config) { c.AppID = "app pub" },
		"bad locale":    func(c *Config) { c.Locale = "de_CH" },
		"no data dir":   func(c *Config) { c.DataDir = "" },
		"no key":        func(c *Config) { c.Key = attribution.KeyPair{} },
		"wrong kid":     func(c *Config) { c.Key.ID = k.advertiser.ID },
		"bad platform":  func(c *Config) { c.Platform = "linux" },
		"no server URL": func(c *Config) { c.BaseURL = "" },
	} {
		c := base
		mut(&c)
		if a, err := New(c); err == nil {
			a.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestInstalledPathOf(t *testing.T) {
	for exe, want := range map[string]string{
		"/Applications/Notes.app/Contents/MacOS/Notes": "/Applications/Notes.app",
		"/opt/notes/bin/notes":                         "/opt/notes/bin/notes",
	} {
		if got := installedPathOf(filepath.FromSlash(exe)); got != filepath.FromSlash(want) {
			t.Errorf("installedPathOf(%q) = %q", exe, got)
		}
	}
	if !strings.HasPrefix(string(platformOf("darwin")), "mac") || platformOf("windows") != xpromo.PlatformWin || platformOf("linux") != "" {
		t.Error("platformOf")
	}
}

// A server that knows no install of the app on this device for the token
// (404) ends the heartbeats.
func TestHeartbeatNotFoundStops(t *testing.T) {
	srv, adv := claimedAdvertiser(t)
	srv.set(func(s *sdkServer) { s.byHash = map[string]*testChain{} })
	if err := adv.Heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := adv.Install(); s.Refusal != xpromo.CodeNotFound || s.Active() {
		t.Fatalf("state %+v", s)
	}
	if err := adv.Heartbeat(context.Background()); !errors.Is(err, ErrNoChain) {
		t.Fatalf("heartbeat after 404: %v", err)
	}
}
