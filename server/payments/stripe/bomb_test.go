package stripe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/internal/memtest"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/payments/stripe"
)

// A signed webhook body beyond jsonbound.Request is 400 with the API's code
// for it, and reading it allocates under 1 MiB. (A body over 1 MiB is the
// edge's 413 body_too_large before Receive runs.)
func TestWebhookBombs(t *testing.T) {
	w := &stripe.Webhook{Secrets: []string{"whsec_x"}, Payments: &recordingPayments{}, Now: func() time.Time { return now }}
	for _, c := range []struct {
		class, obj, code string
	}{
		{"deep", strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000), apperr.JSONTooDeep},
		{"wide", "[" + strings.Repeat("0,", 20_000) + "0]", apperr.JSONTooWide},
		{"long key", `{"` + strings.Repeat("k", 300) + `":1}`, apperr.JSONKeyTooLong},
	} {
		body := []byte(`{"id":"evt_1","object":"event","type":"charge.refunded","livemode":false,"data":{"object":` + c.obj + `}}`)
		header := signed(body, "whsec_x", now)
		var err error
		memtest.Under(t, 1<<20, "webhook "+c.class, func() { err = w.Receive(context.Background(), body, header) })
		assert.Equal(t, c.code, apperr.Code(err), "%s: %v", c.class, err)
		assert.Equal(t, 400, apperr.HTTPStatus(err), c.class)
	}
}

// An answer of Stripe's API beyond MaxAnswerBytes or jsonbound.Answer fails
// the operation as an unreachable Stripe does (no partial object), and
// allocates under 8 × MaxAnswerBytes.
func TestAnswerBombs(t *testing.T) {
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	p := provider(srv.URL)
	for _, b := range memtest.JSONBombs(stripe.MaxAnswerBytes) {
		body = b.Text
		var err error
		memtest.Under(t, 8*stripe.MaxAnswerBytes, "answer "+b.Class, func() {
			_, err = p.CreateCheckout(context.Background(), payments.CheckoutRequest{SessionID: "cs_1", AppID: "app_1", AmountCents: 5000, Currency: "EUR"})
		})
		assert.ErrorContains(t, err, "beyond the bounds of an answer", b.Class)
	}
}
