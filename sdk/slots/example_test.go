package slots_test

import (
	"context"
	"errors"
	"log"
	"os"
	"path/filepath"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/slots"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// sdkKeyPEM is the app's SDK private key (from `xpromo keys sdk new`),
// shipped inside the app.
var sdkKeyPEM []byte

func openURL(string) error { return nil }

// The app starts the SDK once at launch.
func ExampleNew() {
	priv, err := attribution.ParsePrivateKey(sdkKeyPEM)
	if err != nil {
		log.Fatal(err)
	}
	key, err := attribution.KeyPairFromPrivate(priv)
	if err != nil {
		log.Fatal(err)
	}
	support, _ := os.UserConfigDir() // ~/Library/Application Support, %AppData%
	sdk, err := slots.New(slots.Config{
		BaseURL: "https://api.xpromo.example",
		AppID:   "app_01jd3m5q0000publisher00",
		Key:     key,
		DataDir: filepath.Join(support, "com.example.snip", "xpromo"),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sdk.Close()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go sdk.Run(ctx) // deliver queued events, hourly heartbeats

	// Advertiser side: the first launch claims an attributed install.
	if _, err := sdk.ClaimInstall(ctx); err != nil {
		log.Print(err)
	}
	_ = sdk.Heartbeat(ctx) // at launch, then daily; ErrNoChain when not attributed
}

// The publisher's render hook: the app's own native template.
func ExampleRenderFunc() {
	var sdk *slots.Agent // from slots.New
	render := slots.RenderFunc(func(ctx context.Context, ad slots.Ad) (slots.Outcome, error) {
		// Show ad.Title, the icon at ad.IconURL, ad.Description, a button
		// labelled ad.CTA and ad.SponsoredLabel; wait for the user or ctx.
		return slots.Clicked, nil
	})
	res, err := sdk.Show(context.Background(), slots.SlotOnboardingComplete, render)
	switch {
	case errors.Is(err, slots.ErrNoFill):
		return // nothing to show
	case err != nil:
		log.Print(err)
		return
	}
	if res.Outcome == slots.Clicked {
		_ = openURL(res.DownloadURL) // the browser downloads the app, token included
	}
}

// A slot that stays on screen (the About window): fill, render, and click
// later.
func ExampleAgent_Fill() {
	var sdk *slots.Agent
	p, err := sdk.Fill(context.Background(), xpromo.SlotAboutWindow)
	if err != nil {
		return // errors.Is(err, slots.ErrNoFill): show nothing
	}
	_ = p.Ad // render it; when the user clicks the call to action:
	url, err := p.Click(context.Background())
	if err == nil {
		_ = openURL(url)
	}
}
