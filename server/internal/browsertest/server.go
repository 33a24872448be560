package browsertest

import (
	"context"
	"crypto/rand"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/storage"
)

// AdminToken is the operators' token of the servers Serve starts.
const AdminToken = "browsertest-admin-token"

// Server is a test-mode xpromo server on a real store, and the SDK clients
// that make its data: everything a browser test shows was made through the
// public API, as an app team and an operator would.
type Server struct {
	t      testing.TB
	URL    string
	Wire   *assembly.Server
	Admin  *xpromo.Client // with the admin token
	Public *xpromo.Client // no credential (the SDK endpoints)
}

// Serve starts a test-mode server on store (its clock is the real one,
// moved by Advance through the test clock's API).
func Serve(t testing.TB, store storage.Store) *Server {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	srv, err := assembly.Build(assembly.Config{Mode: httpapi.ModeTest, AdminToken: AdminToken, BaseURL: base,
		ReadLimit: 1_000_000, WriteLimit: 1_000_000}, store)
	if err != nil {
		t.Fatalf("building the server: %v", err)
	}
	hs.Config.Handler = srv.HTTP
	hs.Start()
	t.Cleanup(hs.Close)
	return &Server{t: t, URL: base, Wire: srv,
		Admin:  xpromo.NewClient(base, xpromo.WithAdminToken(AdminToken)),
		Public: xpromo.NewClient(base)}
}

// App is a registered app with its key and SDK key pair.
type App struct {
	ID, Key, Name string
	Client        *xpromo.Client
	SDK           token.KeyPair
}

func (s *Server) ctx() context.Context { return context.Background() }

func (s *Server) must(err error, what string) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

// PendingApp registers an app (reserved example.com names; the vetting
// gate does not run, so it waits in the review queue) with an SDK key.
func (s *Server) PendingApp(name, category string) *App {
	s.t.Helper()
	slug := strings.ToLower(strings.ReplaceAll(name, " ", ""))
	reg, err := s.Public.RegisterApp(s.ctx(), &xpromo.RegisterAppRequest{Name: name, Platform: xpromo.PlatformMac,
		BundleID: "com.example." + slug, Domain: "example.com", DownloadURL: "https://example.com/" + slug + ".zip",
		ContactEmail: "team@example.com", Category: category})
	s.must(err, "registering "+name)
	a := &App{ID: reg.AppID, Key: reg.APIKey, Name: name, Client: xpromo.NewClient(s.URL, xpromo.WithAPIKey(reg.APIKey))}
	a.SDK, err = token.GenerateKey(rand.Reader)
	s.must(err, "an SDK key")
	_, err = a.Client.RegisterSDKKey(s.ctx(), a.ID, &xpromo.RegisterSDKKeyRequest{PublicKey: token.EncodePublicKey(a.SDK.Public)})
	s.must(err, "registering the SDK key of "+name)
	return a
}

// ApprovedApp is PendingApp approved by an operator.
func (s *Server) ApprovedApp(name, category string) *App {
	s.t.Helper()
	a := s.PendingApp(name, category)
	_, err := s.Admin.AdminApproveApp(s.ctx(), a.ID, "browser test")
	s.must(err, "approving "+name)
	return a
}

// TopUp funds the app through the test checkout.
func (s *Server) TopUp(a *App, cents int64) {
	s.t.Helper()
	res, err := a.Client.TopUp(s.ctx(), a.ID, &xpromo.TopUpParams{AmountCents: cents})
	s.must(err, "a top-up")
	_, err = s.Public.CompleteTestCheckout(s.ctx(), res.CheckoutURL)
	s.must(err, "completing the test checkout")
}

// Campaign creates a campaign of a buying category at the floor.
func (s *Server) Campaign(a *App, category string, dailyBudgetCents int64) *xpromo.Campaign {
	s.t.Helper()
	c, err := a.Client.CreateCampaign(s.ctx(), &xpromo.CreateCampaignRequest{AppID: a.ID, Categories: []string{category}, DailyBudgetCents: dailyBudgetCents})
	s.must(err, "creating a campaign")
	return c
}

// Now is the server's clock.
func (s *Server) Now() time.Time {
	s.t.Helper()
	st, err := s.Admin.AdminGetClock(s.ctx())
	s.must(err, "reading the test clock")
	return st.Now
}

// Advance moves the server's test clock.
func (s *Server) Advance(d time.Duration) {
	s.t.Helper()
	_, err := s.Admin.AdminAdvanceClock(s.ctx(), d)
	s.must(err, "advancing the test clock")
}

// Sweep runs the clearing sweep.
func (s *Server) Sweep() xpromo.SweepResult {
	s.t.Helper()
	r, err := s.Admin.AdminSweep(s.ctx())
	s.must(err, "the sweep")
	return *r
}

// Install is one install as the SDKs make it.
type Install struct {
	ChainID, Token, Device string
	PriceCents             int64
}

// Install plays an install of adv through pub's slot, as the two SDKs do:
// a signed fill (passing over offers an honest SDK does not show:
// canaries, other advertisers), the click, 30 seconds, the countersigned
// claim.
func (s *Server) Install(pub, adv *App, device string) Install {
	s.t.Helper()
	var offer *token.Offer
	for range 20 {
		req := &xpromo.FillRequest{AppID: pub.ID, Slot: xpromo.SlotOnboardingComplete, Platform: xpromo.PlatformMac, DeviceID: device}
		s.must(req.Sign(pub.SDK, s.Now()), "signing a fill")
		fill, err := s.Public.SDKFill(s.ctx(), req)
		s.must(err, "a fill")
		if fill.Filled && fill.Offer != nil && fill.Creative != nil && fill.Offer.Advertiser == adv.ID && fill.Creative.AdvertiserAppID == adv.ID {
			offer = fill.Offer
			break
		}
	}
	if offer == nil {
		s.t.Fatalf("no fill of %s's slot offered %s", pub.Name, adv.Name)
	}
	tok, err := token.SignClick(pub.SDK.Private, pub.SDK.ID, token.NewClickClaims(*offer, s.Now()))
	s.must(err, "signing the click")
	clk, err := s.Public.SDKClick(s.ctx(), &xpromo.ClickRequest{Token: tok})
	s.must(err, "the click")
	s.Advance(30 * time.Second)
	cs, err := token.Countersign(adv.SDK.Private, adv.SDK.ID, tok, device, s.Now(), adv.ID)
	s.must(err, "countersigning")
	_, err = s.Public.SDKInstall(s.ctx(), &xpromo.InstallRequest{Token: tok, Countersignature: cs})
	s.must(err, "the install claim")
	return Install{ChainID: clk.ChainID, Token: tok, Device: device, PriceCents: offer.PriceCents}
}

// Heartbeat sends the advertiser's SDK's heartbeat for the install (the
// app was used): once past 48 hours, the sweep clears it.
func (s *Server) Heartbeat(adv *App, in Install) {
	s.t.Helper()
	hb, err := token.SignHeartbeat(adv.SDK.Private, adv.SDK.ID, token.HeartbeatClaims{
		AppID: adv.ID, DeviceID: in.Device, TokenHash: token.TokenHashString(in.Token), Seq: 1, SentAt: s.Now().Unix()})
	s.must(err, "signing a heartbeat")
	_, err = s.Public.SDKHeartbeat(s.ctx(), &xpromo.HeartbeatRequest{Heartbeat: hb})
	s.must(err, "a heartbeat")
}
