package x402_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/internal/memtest"
	"github.com/xpromo/xpromo/server/x402"
)

// An X-PAYMENT is at most 8 KiB, so its bombs are small: deep (3,000
// levels), wide (3,000 values, as wide as 8 KiB allows), a 300-byte key and
// a 9 KiB header. Each is 400 invalid_payment_header, and decoding one
// allocates under 256 KiB.
func TestDecodeBombs(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for class, h := range map[string]string{
		"deep":     b64(strings.Repeat("[", 3000) + strings.Repeat("]", 3000)),
		"wide":     b64("[" + strings.Repeat("0,", 3000) + "0]"),
		"long key": b64(`{"` + strings.Repeat("k", 300) + `":1}`),
		"huge":     b64(`{"a":"` + strings.Repeat("x", 7<<10) + `"}`),
	} {
		var err error
		memtest.Under(t, 256<<10, "X-PAYMENT "+class, func() { _, err = x402.Decode(h) })
		assert.Equal(t, apperr.InvalidPaymentHeader, apperr.Code(err), "%s: %v", class, err)
		assert.Equal(t, 400, apperr.HTTPStatus(err), class)
	}
}

// bombServer answers every request with the bomb in *body.
func bombServer(t *testing.T, body *[]byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The facilitator's, the chain's and the rate endpoint's answers: each bomb
// class is that call's failure (ErrUnknown for the facilitator, an error for
// the others), and reading one allocates under 8 × the answer's byte bound, plus 256 KiB
// for a request's own buffers.
func TestAnswerBombs(t *testing.T) {
	var body []byte
	srv := bombServer(t, &body)
	ctx := context.Background()
	q := requirements()
	p := signed(t, q, now)
	f := &x402.Facilitator{URL: srv.URL, HTTP: srv.Client()}
	chain := &x402.Chain{URL: srv.URL, HTTP: srv.Client()}
	rate := &x402.RateSource{URL: srv.URL, HTTP: srv.Client(), Now: time.Now}
	for _, c := range []struct {
		name string
		max  int
		call func() error
	}{
		{"facilitator /settle", x402.MaxFacilitatorAnswerBytes, func() error {
			_, err := f.Settle(ctx, p, q)
			if !errors.Is(err, x402.ErrUnknown) {
				t.Errorf("settle: %v, want ErrUnknown", err)
			}
			return err
		}},
		{"chain eth_call", x402.MaxChainAnswerBytes, func() error {
			_, err := chain.BalanceOf(ctx, q.Asset, q.PayTo)
			return err
		}},
		{"rate endpoint", x402.MaxRateAnswerBytes, func() error {
			_, err := rate.Rate(ctx)
			return err
		}},
	} {
		bombs := memtest.JSONBombs(c.max)
		if c.name == "rate endpoint" {
			bombs = append(bombs, memtest.Bomb{Class: "exponent", Text: []byte(`{"rate":"1e9999999"}`)})
		}
		for _, b := range bombs {
			body = b.Text
			var err error
			memtest.Under(t, uint64(8*c.max+256<<10), c.name+" "+b.Class, func() { err = c.call() })
			assert.Error(t, err, "%s %s", c.name, b.Class)
		}
	}
}
