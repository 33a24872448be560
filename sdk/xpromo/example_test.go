package xpromo_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// These examples need a running server (`make run`), so they are compiled
// but not run by `go test`.

func Example() {
	ctx := context.Background()
	c := xpromo.NewClient("http://127.0.0.1:8080", xpromo.WithUserAgent("example/1.0"))

	reg, err := c.RegisterApp(ctx, &xpromo.RegisterAppRequest{
		Name: "Clipboard Pro", Platform: xpromo.PlatformMac,
		BundleID: "com.example.clipboardpro", Domain: "example.com",
		DownloadURL:  "https://example.com/ClipboardPro.dmg",
		ContactEmail: "team@example.com",
	})
	if err != nil {
		log.Fatal(err)
	}
	// The API key is shown only once: keep it.
	app := c.With(xpromo.WithAPIKey(reg.APIKey))

	score, err := app.GetScore(ctx, reg.AppID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(score.Status) // pending
}

func ExampleClient_TopUp() {
	ctx := context.Background()
	app := xpromo.NewClient("http://127.0.0.1:8080", xpromo.WithAPIKey("xp_test_…"))

	top, err := app.TopUp(ctx, "app_…", &xpromo.TopUpParams{AmountCents: 5000})
	if err != nil {
		log.Fatal(err)
	}
	switch {
	case top.PaymentRequired(): // asked for with PreferX402
		fmt.Println("pay", top.Challenge.Accepts[0].MaxAmountRequired, "to", top.Challenge.Accepts[0].PayTo)
	default:
		fmt.Println("open", top.CheckoutURL)
		// In test mode the checkout can be completed without a browser:
		if _, err := app.CompleteTestCheckout(ctx, top.CheckoutURL); err != nil {
			log.Fatal(err)
		}
	}
}

func ExampleClient_LedgerLines() {
	ctx := context.Background()
	app := xpromo.NewClient("http://127.0.0.1:8080", xpromo.WithAPIKey("xp_test_…"))

	// Every line of November 2026, fetched 500 a page.
	params := &xpromo.LedgerParams{From: "2026-11-01", To: "2026-11-30", Limit: 500}
	for line, err := range app.LedgerLines(ctx, "app_…", params) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(line.Ts, line.Type, line.AmountCents, line.BalanceAfter)
	}
}

func ExampleIsCode() {
	ctx := context.Background()
	app := xpromo.NewClient("http://127.0.0.1:8080", xpromo.WithAPIKey("xp_test_…"))

	_, err := app.RequestPayout(ctx, "app_…")
	var e *xpromo.Error
	switch {
	case err == nil:
		fmt.Println("paid out")
	case xpromo.IsCode(err, xpromo.CodeBelowMinimum):
		fmt.Println("less than EUR 50 to withdraw")
	case errors.As(err, &e):
		fmt.Println(e.Status, e.Code, e.Message, "request", e.RequestID)
	default:
		fmt.Println("no answer:", err) // connection refused, context cancelled…
	}
}
