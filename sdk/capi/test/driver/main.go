// Command driver plays the server's side of the C ABI's end-to-end tests
// (sdk/capi/test/run.sh starts a fresh test-mode xpromo-server first). For
// each app program given (the C program, the C# program), it registers a
// publisher and an advertiser app, approves and funds them, makes their SDK
// keys, and then plays the story of one paid install with the program
// doing the apps' part through the C ABI, as desktop-app does in Go:
//
//  1. `APP publish` (the publisher app): fills the onboarding_complete
//     slot, renders the ad through its render callback, clicks; the driver
//     checks the download URL carries the click token;
//  2. the server's test clock moves one minute (the download, the install);
//  3. `APP launch` with XPROMO_OFFLINE_CONFIG (the advertiser's first
//     launch, offline): claims the install, which waits in the offline
//     queue; then online again, delivers it and sends a heartbeat;
//  4. the clock moves 48 hours; `APP launch` again: a heartbeat activates
//     the install;
//  5. the driver runs the clearing sweep and wants the chain cleared, the
//     advertiser charged and the publisher paid.
//
// Each --check program (the C error-path tests) runs before the stories,
// with a publisher whose campaign is live, an app id with an unregistered
// key, and a base URL where nothing listens.
//
// The programs get everything through the environment: XPROMO_CONFIG (the
// agent's JSON configuration), XPROMO_OFFLINE_CONFIG, XPROMO_BAD_KEY_CONFIG,
// XPROMO_CLOCK_OFFSET_MS (how far the server's test clock is ahead: the
// device clock of the programs follows it, as a real computer would have
// lived through the 48 hours). Commands are split on spaces.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/slots"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	baseURL := flag.String("base-url", "", "the test-mode server's root URL")
	dir := flag.String("dir", "", "working directory (the apps' data directories, keys, inbox)")
	var apps, checks multiFlag
	flag.Var(&apps, "app", "an app program playing the story (repeatable)")
	flag.Var(&checks, "check", "a test program run against the prepared server (repeatable)")
	flag.Parse()
	token := os.Getenv("XPROMO_ADMIN_TOKEN")
	if *baseURL == "" || *dir == "" || token == "" {
		fmt.Fprintln(os.Stderr, "usage: XPROMO_ADMIN_TOKEN=… driver --base-url URL --dir DIR [--check CMD]... [--app CMD]...")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d := &driver{base: xpromo.NewClient(*baseURL), baseURL: *baseURL, dir: *dir}
	d.op = d.base.With(xpromo.WithAdminToken(token))
	if err := d.run(ctx, apps, checks); err != nil {
		fmt.Fprintln(os.Stderr, "capi e2e: FAIL:", err)
		os.Exit(1)
	}
}

type driver struct {
	base, op *xpromo.Client
	baseURL  string
	dir      string
	// offsetMS is how far the server's test clock is ahead of this
	// machine's.
	offsetMS int64
	n        int // apps registered, for unique names
}

// app is one registered app and its SDK key.
type app struct {
	ID     string
	client *xpromo.Client
	keyPEM string
}

func (d *driver) run(ctx context.Context, apps, checks []string) error {
	if err := d.syncClock(ctx, 0); err != nil {
		return err
	}
	for _, cmd := range checks {
		name := filepath.Base(strings.Fields(cmd)[0])
		pub, adv, campaign, err := d.pair(ctx, "check")
		if err != nil {
			return err
		}
		stray, err := attribution.GenerateKey(nil) // never registered
		if err != nil {
			return err
		}
		strayPEM, err := attribution.MarshalPrivateKey(stray.Private)
		if err != nil {
			return err
		}
		dead, err := deadURL()
		if err != nil {
			return err
		}
		work := filepath.Join(d.dir, "check-"+name)
		env := []string{
			"XPROMO_CONFIG=" + d.config(pub.ID, pub.keyPEM, d.baseURL, filepath.Join(work, "pub"), "-", 0),
			"XPROMO_BAD_KEY_CONFIG=" + d.config(pub.ID, string(strayPEM), d.baseURL, filepath.Join(work, "stray"), "-", 0),
			"XPROMO_OFFLINE_CONFIG=" + d.config(pub.ID, pub.keyPEM, dead, filepath.Join(work, "offline"), "-", 1000),
			"XPROMO_WORK_DIR=" + work,
		}
		fmt.Printf("--- %s\n", cmd)
		if _, err := d.exec(ctx, cmd, env); err != nil {
			return err
		}
		if _, err := adv.client.PauseCampaign(ctx, campaign); err != nil {
			return err
		}
	}
	for _, cmd := range apps {
		fmt.Printf("--- the story of one paid install, the apps being %s\n", cmd)
		if err := d.story(ctx, cmd); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
	}
	return nil
}

// pair registers and approves a publisher and an advertiser, funds the
// advertiser and starts its campaign in the publisher's category, and
// registers both apps' SDK keys. It returns the campaign's id.
func (d *driver) pair(ctx context.Context, label string) (pub, adv *app, campaign string, err error) {
	d.n++
	reg := func(role string, category string) (*app, error) {
		r, err := d.base.RegisterApp(ctx, &xpromo.RegisterAppRequest{
			Name: fmt.Sprintf("capi %s %s %d", label, role, d.n), Platform: xpromo.PlatformMac,
			BundleID: fmt.Sprintf("com.example.capi.%s%d", role, d.n), Domain: "example.com",
			DownloadURL: fmt.Sprintf("https://example.com/%s%d.dmg", role, d.n), ContactEmail: "unverified@example.com",
			// unverified@: the gate sandbox's magic value (docs/gate.md): the
			// challenge is never answered, so the app waits for the operator.
			Category: category,
		})
		if err != nil {
			return nil, fmt.Errorf("registering the %s: %w", role, err)
		}
		a := &app{ID: r.AppID, client: d.base.With(xpromo.WithAPIKey(r.APIKey))}
		if _, err := d.op.AdminApproveApp(ctx, a.ID, "capi e2e"); err != nil {
			return nil, fmt.Errorf("approving the %s: %w", role, err)
		}
		key, err := attribution.GenerateKey(nil)
		if err != nil {
			return nil, err
		}
		if _, err := a.client.RegisterSDKKey(ctx, a.ID, &xpromo.RegisterSDKKeyRequest{PublicKey: attribution.EncodePublicKey(key.Public)}); err != nil {
			return nil, fmt.Errorf("registering the %s's SDK key: %w", role, err)
		}
		pem, err := attribution.MarshalPrivateKey(key.Private)
		if err != nil {
			return nil, err
		}
		a.keyPEM = string(pem)
		return a, nil
	}
	// Each pair pauses its campaign when done, so no other pair's
	// campaign competes for its publisher's slots.
	const category = "productivity"
	if pub, err = reg("publisher", category); err != nil {
		return nil, nil, "", err
	}
	if adv, err = reg("advertiser", ""); err != nil {
		return nil, nil, "", err
	}
	top, err := adv.client.TopUp(ctx, adv.ID, &xpromo.TopUpParams{AmountCents: 20_000})
	if err != nil {
		return nil, nil, "", fmt.Errorf("topping up: %w", err)
	}
	if _, err := d.base.CompleteTestCheckout(ctx, top.CheckoutURL); err != nil {
		return nil, nil, "", fmt.Errorf("paying the test checkout: %w", err)
	}
	c, err := adv.client.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{
		AppID: adv.ID, Categories: []string{category}, DailyBudgetCents: 5_000,
	})
	if err != nil {
		return nil, nil, "", fmt.Errorf("creating the campaign: %w", err)
	}
	return pub, adv, c.CampaignID, nil
}

// config is an agent's JSON configuration.
func (d *driver) config(appID, keyPEM, baseURL, dataDir, inbox string, sendTimeoutMS int64) string {
	b, _ := json.Marshal(map[string]any{
		"base_url": baseURL, "app_id": appID, "sdk_key_pem": keyPEM, "data_dir": dataDir,
		"platform": "mac", "inbox_dir": inbox, "download_dirs": []string{},
		"installed_path": filepath.Join(dataDir, "..", "Installed.app"), "send_timeout_ms": sendTimeoutMS,
	})
	return string(b)
}

func (d *driver) story(ctx context.Context, cmd string) error {
	pub, adv, campaign, err := d.pair(ctx, "story")
	if err != nil {
		return err
	}
	defer adv.client.PauseCampaign(context.WithoutCancel(ctx), campaign)
	work := filepath.Join(d.dir, fmt.Sprintf("story-%d", d.n))
	inbox := filepath.Join(work, "inbox")
	pubConfig := d.config(pub.ID, pub.keyPEM, d.baseURL, filepath.Join(work, "publisher", "xpromo"), inbox, 0)
	advConfig := d.config(adv.ID, adv.keyPEM, d.baseURL, filepath.Join(work, "advertiser", "xpromo"), inbox, 0)
	dead, err := deadURL()
	if err != nil {
		return err
	}
	offline := d.config(adv.ID, adv.keyPEM, dead, filepath.Join(work, "advertiser", "xpromo"), inbox, 1000)

	// 1. The publisher app shows the slot; the user clicks.
	out, err := d.exec(ctx, cmd+" publish", []string{"XPROMO_CONFIG=" + pubConfig})
	if err != nil {
		return err
	}
	var shown struct {
		Filled      bool   `json:"filled"`
		Outcome     string `json:"outcome"`
		DownloadURL string `json:"download_url"`
		Ad          struct {
			AdvertiserAppID string `json:"advertiser_app_id"`
			SponsoredLabel  string `json:"sponsored_label"`
		} `json:"ad"`
	}
	if err := lastJSON(out, &shown); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	tok, ok := slots.TokenFromURL(shown.DownloadURL)
	switch {
	case !shown.Filled || shown.Outcome != "clicked":
		return fmt.Errorf("publish: filled %v, outcome %q; want a clicked fill", shown.Filled, shown.Outcome)
	case shown.Ad.AdvertiserAppID != adv.ID || shown.Ad.SponsoredLabel != "Sponsored":
		return fmt.Errorf("publish: the ad is %+v, want the advertiser %s's, labelled Sponsored", shown.Ad, adv.ID)
	case !ok:
		return fmt.Errorf("publish: the download URL %q carries no click token", shown.DownloadURL)
	}
	click, err := attribution.ParseClick(tok)
	if err != nil || click.Claims.Advertiser != adv.ID || click.Claims.Publisher != pub.ID {
		return fmt.Errorf("publish: the click token is not the publisher's for the advertiser (%v)", err)
	}
	fmt.Printf("publisher: clicked; the browser opens %.80s…\n", shown.DownloadURL)

	// 2. The download and the install.
	if err := d.syncClock(ctx, time.Minute); err != nil {
		return err
	}

	// 3. First launch, offline then online.
	out, err = d.exec(ctx, cmd+" launch", []string{"XPROMO_CONFIG=" + advConfig, "XPROMO_OFFLINE_CONFIG=" + offline})
	if err != nil {
		return err
	}
	var st struct {
		Claimed      bool   `json:"claimed"`
		Channel      string `json:"channel"`
		Answered     bool   `json:"answered"`
		ChainID      string `json:"chain_id"`
		State        string `json:"state"`
		Refusal      string `json:"refusal"`
		HeartbeatSeq int64  `json:"heartbeat_seq"`
	}
	if err := lastJSON(out, &st); err != nil {
		return fmt.Errorf("first launch: %w", err)
	}
	if !st.Claimed || st.Channel != "inbox" || !st.Answered || st.Refusal != "" || st.State != "installed" || st.HeartbeatSeq != 1 {
		return fmt.Errorf("first launch: install state %+v; want claimed through the inbox, installed, one heartbeat", st)
	}
	fmt.Printf("advertiser: install claimed (offline first, then delivered): chain %s is %s\n", st.ChainID, st.State)

	// 4. Two days later.
	if err := d.syncClock(ctx, 48*time.Hour); err != nil {
		return err
	}
	if out, err = d.exec(ctx, cmd+" launch", []string{"XPROMO_CONFIG=" + advConfig}); err != nil {
		return err
	}
	if err := lastJSON(out, &st); err != nil {
		return fmt.Errorf("second launch: %w", err)
	}
	if st.State != "activated_48h" || st.HeartbeatSeq != 2 {
		return fmt.Errorf("second launch: install state %+v; want activated_48h after heartbeat 2", st)
	}
	fmt.Printf("advertiser: 48 hours later a heartbeat: chain %s is %s\n", st.ChainID, st.State)

	// 5. The clearing.
	return d.cleared(ctx, pub, adv, st.ChainID, click.Claims.PriceCents)
}

// cleared runs the sweep until the chain clears, then checks both ledgers.
func (d *driver) cleared(ctx context.Context, pub, adv *app, chainID string, price int64) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := d.op.AdminSweep(ctx); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		c, err := pub.client.GetChain(ctx, chainID)
		if err != nil {
			return fmt.Errorf("reading chain %s: %w", chainID, err)
		}
		if c.State == xpromo.ChainCleared {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chain %s is %s, not cleared", chainID, c.State)
		}
		time.Sleep(200 * time.Millisecond)
	}
	sum := func(a *app, t xpromo.LineType) (int64, error) {
		var total int64
		for l, err := range a.client.LedgerLines(ctx, a.ID, nil) {
			if err != nil {
				return 0, err
			}
			if l.Type == t && l.EventChainID != nil && *l.EventChainID == chainID {
				total += l.AmountCents
			}
		}
		return total, nil
	}
	charged, err := sum(adv, xpromo.LineCharge)
	if err != nil {
		return err
	}
	earned, err := sum(pub, xpromo.LineEarn)
	if err != nil {
		return err
	}
	if charged != -price || earned <= 0 || earned > price {
		return fmt.Errorf("ledgers: the advertiser was charged %d and the publisher earned %d for an install at %d", charged, earned, price)
	}
	fmt.Printf("server: chain %s cleared: the advertiser charged %d cents, the publisher paid %d\n", chainID, -charged, earned)
	return nil
}

// syncClock moves the server's test clock by d (when d > 0) and sets the
// programs' clock offset to the server's lead.
func (d *driver) syncClock(ctx context.Context, by time.Duration) error {
	var (
		s   *xpromo.ClockState
		err error
	)
	if by > 0 {
		s, err = d.op.AdminAdvanceClock(ctx, by)
	} else {
		s, err = d.op.AdminGetClock(ctx)
	}
	if err != nil {
		return fmt.Errorf("the test clock: %w", err)
	}
	if !s.TestMode {
		return errors.New("the server is not in test mode")
	}
	d.offsetMS = s.Now.Sub(time.Now()).Milliseconds()
	return nil
}

// exec runs cmd with env added and returns its standard output; its
// standard error goes to ours.
func (d *driver) exec(ctx context.Context, cmd string, env []string) ([]byte, error) {
	args := strings.Fields(cmd)
	c := exec.CommandContext(ctx, args[0], args[1:]...)
	c.Env = append(os.Environ(), env...)
	c.Env = append(c.Env, fmt.Sprintf("XPROMO_CLOCK_OFFSET_MS=%d", d.offsetMS))
	var out bytes.Buffer
	c.Stdout = &out
	c.Stderr = os.Stderr
	if err := c.Run(); err != nil {
		os.Stdout.Write(out.Bytes())
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	os.Stdout.Write(out.Bytes())
	return out.Bytes(), nil
}

// lastJSON decodes the last line of out.
func lastJSON(out []byte, v any) error {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		return fmt.Errorf("the program's last line is not its JSON answer: %v", err)
	}
	return nil
}

// deadURL is a loopback URL where nothing listens: the network is down.
func deadURL() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr, nil
}
