package conformance

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Top-up: checkout for people, the x402 challenge for machines (seed-api
// "POST /apps/{app_id}/top-up"; decisions §7).
func topUpChecks() []Check {
	return []Check{
		{"a person gets a checkout_url; paying it appends one topup line", checkTopUpCheckout},
		{"amount_cents under 5000 answers 422 below_minimum", checkTopUpMinimum},
		{"Prefer: payment=x402 answers 402 with an x402 v1 challenge", checkX402Challenge},
		{"the x402 descriptor lists the top-up resource", checkX402Descriptor},
		{"a malformed X-PAYMENT answers 400 invalid_payment_header", checkBadPaymentHeader},
	}
}

func checkTopUpCheckout(c *C) {
	a := c.NewApp()
	ctx := c.Ctx()
	res, err := a.Client.TopUp(ctx, a.ID, &xpromo.TopUpParams{AmountCents: 7500})
	c.NoError(err, "top-up of 7500")
	if c.Last().Status != http.StatusOK {
		c.Errorf("top-up: status %d, want 200", c.Last().Status)
	}
	u, perr := url.Parse(res.CheckoutURL)
	if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		c.Fatalf("checkout_url %q is not an absolute http(s) URL", res.CheckoutURL)
	}
	// Nothing is credited before the payment completes.
	if lines := c.Lines(a, nil); len(lines) != 0 {
		c.Errorf("an unpaid checkout credited the wallet: %+v", lines)
	}
	sess, err := c.Public().CompleteTestCheckout(ctx, res.CheckoutURL)
	c.NoError(err, "completing the test checkout")
	if sess.AmountCents != 7500 || sess.AppID != a.ID {
		c.Errorf("the completed checkout says %d cents for %s, want 7500 for %s", sess.AmountCents, sess.AppID, a.ID)
	}
	lines := c.Lines(a, nil)
	if len(lines) != 1 || lines[0].Type != xpromo.LineTopup || lines[0].AmountCents != 7500 || lines[0].BalanceAfter != 7500 {
		c.Fatalf("after one paid top-up of 7500 the ledger is %+v, want one topup line of 7500, balance 7500", lines)
	}
	// Paying the same checkout again credits nothing more.
	_, err = c.Public().CompleteTestCheckout(ctx, res.CheckoutURL)
	c.NoError(err, "completing it again")
	if again := c.Lines(a, nil); len(again) != 1 {
		c.Errorf("completing a checkout twice credited twice: %+v", again)
	}
}

func checkTopUpMinimum(c *C) {
	a := c.NewApp()
	for _, amt := range []int64{4999, 1, 0, -5000} {
		_, err := a.Client.TopUp(c.Ctx(), a.ID, &xpromo.TopUpParams{AmountCents: amt})
		e := c.APIError(err, "top-up of "+strconv.FormatInt(amt, 10))
		if e.Status != 422 || (amt == 4999 && e.Code != "below_minimum") {
			c.Errorf("top-up of %d: %d %q, want 422 below_minimum", amt, e.Status, e.Code)
		}
	}
	res, err := a.Client.TopUp(c.Ctx(), a.ID, &xpromo.TopUpParams{AmountCents: 5000})
	c.NoError(err, "top-up of exactly 5000")
	if res.CheckoutURL == "" {
		c.Errorf("top-up of 5000: no checkout_url")
	}
}

var (
	evmAddress = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	atomicUnit = regexp.MustCompile(`^[1-9][0-9]*$`)
)

func checkX402Challenge(c *C) {
	a := c.NewApp()
	var resp xpromo.Response
	res, err := a.Client.TopUp(c.Ctx(), a.ID, &xpromo.TopUpParams{AmountCents: 10000, PreferX402: true}, xpromo.WithResponse(&resp))
	c.NoError(err, "top-up with Prefer: payment=x402")
	ex := c.Last()
	if ex.Status != http.StatusPaymentRequired || !res.PaymentRequired() {
		c.Fatalf("top-up with Prefer: payment=x402: %s, want 402 with the challenge", ex)
	}
	body := ex.JSON(c)
	if _, isErr := body["error"].(map[string]any); isErr {
		c.Errorf("the 402 carries an Error body; it is an X402Challenge")
	}
	requireKeys(c, "X402Challenge", body, "x402Version", "accepts", "resource")
	ch := res.Challenge
	if ch.X402Version != 1 {
		c.Errorf("x402Version %d, want 1", ch.X402Version)
	}
	if ru, err := url.Parse(ch.Resource); err != nil || !ru.IsAbs() {
		c.Errorf("resource %q is not an absolute URI", ch.Resource)
	}
	if len(ch.Accepts) == 0 {
		c.Fatalf("accepts is empty")
	}
	raws, _ := body["accepts"].([]any)
	for i, acc := range ch.Accepts {
		if i < len(raws) {
			if m, ok := raws[i].(map[string]any); ok {
				requireKeys(c, "accepts[]", m, "scheme", "network", "maxAmountRequired", "resource", "description", "mimeType", "payTo", "maxTimeoutSeconds", "asset", "extra")
			}
		}
		if acc.Scheme != "exact" {
			c.Errorf("accepts[%d].scheme %q, want exact", i, acc.Scheme)
		}
		if acc.Network != "base" && acc.Network != "base-sepolia" {
			c.Errorf("accepts[%d].network %q, want base or base-sepolia", i, acc.Network)
		}
		if !atomicUnit.MatchString(acc.MaxAmountRequired) {
			c.Errorf("accepts[%d].maxAmountRequired %q is not a positive integer of atomic units", i, acc.MaxAmountRequired)
		}
		if !evmAddress.MatchString(acc.PayTo) || !evmAddress.MatchString(acc.Asset) {
			c.Errorf("accepts[%d]: payTo %q and asset %q must be 0x addresses", i, acc.PayTo, acc.Asset)
		}
		if acc.MaxTimeoutSeconds <= 0 {
			c.Errorf("accepts[%d].maxTimeoutSeconds %d, want > 0", i, acc.MaxTimeoutSeconds)
		}
		if acc.Resource == "" || acc.MimeType == "" || acc.Description == "" {
			c.Errorf("accepts[%d]: resource %q, mimeType %q, description %q; want all", i, acc.Resource, acc.MimeType, acc.Description)
		}
		if acc.Extra.Name == "" || acc.Extra.Version == "" {
			c.Errorf("accepts[%d].extra %+v: the token's EIP-712 name and version", i, acc.Extra)
		}
	}
	// Nothing is credited by a challenge.
	if lines := c.Lines(a, nil); len(lines) != 0 {
		c.Errorf("a 402 challenge credited the wallet: %+v", lines)
	}
}

func checkX402Descriptor(c *C) {
	d, err := c.Public().GetX402Descriptor(c.Ctx())
	c.NoError(err, "GET /.well-known/x402")
	if d.X402Version != 1 {
		c.Errorf("x402Version %d, want 1", d.X402Version)
	}
	found := false
	for _, r := range d.ResourceTemplates {
		found = found || strings.HasSuffix(r, "/v1/apps/{app_id}/top-up")
	}
	if !found {
		c.Errorf("resourceTemplates %v, want the top-up resource's URI template", d.ResourceTemplates)
	}
	checkURIs := func(rs []string) {
		for _, r := range rs {
			if u, err := url.Parse(r); err != nil || !u.IsAbs() || strings.ContainsAny(r, "{}") {
				c.Errorf("resources lists %q, which is not an absolute URI", r)
			}
		}
	}
	checkURIs(d.Resources)
	// With a key: the caller's own top-up URL.
	a := c.NewApp()
	d, err = a.Client.GetX402Descriptor(c.Ctx())
	c.NoError(err, "GET /.well-known/x402 with an API key")
	checkURIs(d.Resources)
	if len(d.Resources) != 1 || !strings.HasSuffix(d.Resources[0], "/v1/apps/"+a.ID+"/top-up") {
		c.Errorf("with app %s's key, resources lists %v, want its own top-up URL", a.ID, d.Resources)
	}
}

func checkBadPaymentHeader(c *C) {
	a := c.NewApp()
	for what, header := range map[string]string{
		"not base64":           "!!! not base64 !!!",
		"base64 of not JSON":   base64.StdEncoding.EncodeToString([]byte("hello")),
		"base64 of a JSON int": base64.StdEncoding.EncodeToString([]byte("42")),
	} {
		_, err := a.Client.TopUp(c.Ctx(), a.ID, &xpromo.TopUpParams{AmountCents: 5000, Payment: header})
		c.ExpectError(err, http.StatusBadRequest, "invalid_payment_header", "X-PAYMENT "+what)
	}
	if lines := c.Lines(a, nil); len(lines) != 0 {
		c.Errorf("refused payments credited the wallet: %+v", lines)
	}
}
