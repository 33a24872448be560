// Package xpromo is the Go client of the xpromo REST API v1, and the wire
// types the server and every client share.
//
// Build one Client per server and share it; it is safe for concurrent use:
//
//	c := xpromo.NewClient("http://127.0.0.1:8080") // the client adds /v1
//
//	reg, err := c.RegisterApp(ctx, &xpromo.RegisterAppRequest{
//		Name: "Clipboard Pro", Platform: xpromo.PlatformMac,
//		BundleID: "com.example.clipboardpro", Domain: "example.com",
//		DownloadURL:  "https://example.com/ClipboardPro.dmg",
//		ContactEmail: "team@example.com",
//	})
//	if err != nil {
//		return err
//	}
//	app := c.With(xpromo.WithAPIKey(reg.APIKey)) // the key is shown only once
//
//	score, err := app.GetScore(ctx, reg.AppID) // status "pending"
//
//	top, err := app.TopUp(ctx, reg.AppID, &xpromo.TopUpParams{AmountCents: 5000})
//	// top.CheckoutURL: a person pays there (test mode: CompleteTestCheckout).
//	// With PreferX402, top.Challenge holds the 402 x402 challenge instead;
//	// a client made WithX402Wallet pays it itself and top.Line is the
//	// settled topup line.
//
//	for line, err := range app.LedgerLines(ctx, reg.AppID, nil) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(line.Type, line.AmountCents, line.BalanceAfter)
//	}
//
// # Errors
//
// Every non-2xx answer is an *Error carrying the HTTP status, the stable
// Code (build on it, never on Message), RetryAfter and the server's
// RequestID. Test for a code with IsCode, or take the whole error with
// errors.As:
//
//	_, err := app.RequestPayout(ctx, appID)
//	switch {
//	case xpromo.IsCode(err, xpromo.CodeBelowMinimum):
//		// nothing to withdraw yet
//	case err != nil:
//		var e *xpromo.Error
//		if errors.As(err, &e) && e.Status == 404 { … }
//	}
//
// The one exception is TopUp's 402 x402 challenge: it is an answer
// (TopUpResult.Challenge), not an error.
//
// # Retries and idempotency
//
// Connection errors, 429 and 5xx (other than 501) are retried, by default
// DefaultRetries times, with exponential backoff and jitter
// (WithRetries, WithRetryWait); a Retry-After of the server is honoured, up
// to WithMaxRetryAfter. Other 4xx are never retried. Every POST but
// SDKFill carries an Idempotency-Key, random per call and the same on each
// of its retries, so a retried POST runs once on the server (a fill stores
// nothing, and a retried one simply fills again); pass your own with
// WithIdempotencyKey to make a call safe to repeat across processes. A 409
// idempotency_key_in_use means the first attempt of that key is still
// running on the server: retry later with the same key.
// Cancelling the context stops a call, including a wait between retries.
//
// # Credentials
//
// App endpoints send the API key of WithAPIKey as `Authorization: Bearer`;
// the Admin* methods send the operators' token of WithAdminToken instead.
// Client.With derives a client with other credentials sharing the same
// connections.
//
// # Attribution
//
// An app team registers its SDK keys (RegisterSDKKey, ListSDKKeys,
// RevokeSDKKey) and reads the event chains its ledger lines name (GetChain)
// with its API key. The SDK inside the app speaks the protocol of
// docs/protocol.md with SDKFill, SDKClick, SDKInstall and SDKHeartbeat:
// these never send a credential, even from a client that holds one, since
// what they assert is signed with the app's SDK key (package attribution).
// sdk/slots is the SDK built on them. Operators and black-box tests move a
// test-mode server's clock and settle what is due with AdminGetClock,
// AdminAdvanceClock and AdminSweep:
//
//	req := &xpromo.FillRequest{AppID: pubID, Slot: xpromo.SlotAboutWindow, Platform: xpromo.PlatformMac}
//	err := req.Sign(key, now) // the publisher's SDK key signs every fill
//	fill, err := c.SDKFill(ctx, req)
//	// fill.Filled false is no fill (fill.NoFillReason), not an error.
//	tok, err := attribution.SignClick(key.Private, key.ID, attribution.NewClickClaims(*fill.Offer, now))
//	click, err := c.SDKClick(ctx, &xpromo.ClickRequest{Token: tok})
//	…
//	_, err = admin.AdminAdvanceClock(ctx, 48*time.Hour)
//	swept, err := admin.AdminSweep(ctx)
//
// # Webhooks and events
//
// An app registers the URLs its events are delivered to
// (CreateWebhookEndpoint: the answer's Secret is shown once; then
// ListWebhookEndpoints, GetWebhookEndpoint, UpdateWebhookEndpoint,
// DeleteWebhookEndpoint, RotateWebhookSecret), reads each endpoint's
// delivery attempts (ListWebhookAttempts) and sends an event again
// (Redeliver). Its events of the last 30 days are one page at a time
// (ListEvents, with Wait a long poll for the next one), all of them
// (Events, an iterator) or one (GetEvent):
//
//	for ev, err := range app.Events(ctx, appID, &xpromo.EventParams{Types: []xpromo.EventType{xpromo.EventChainCleared}}) {
//		if err != nil {
//			return err
//		}
//		var d xpromo.ChainEventData
//		_ = json.Unmarshal(ev.Data, &d) // the data's type follows ev.Type
//	}
//
// Package webhook (sdk/webhook) verifies the deliveries; docs/webhooks.md
// documents each event type.
//
// # Wire types
//
// The package also holds the wire types of the API (types.go, enums.go,
// errors.go, sdkwire.go), shared with the server, the MCP server, the CLI
// and the conformance suite. Client.Do calls an endpoint this version of
// the client does not wrap yet, with the same credentials, retries and
// errors.
package xpromo
