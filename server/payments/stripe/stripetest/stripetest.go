// Package stripetest gives tests Stripe counterparts: Fake, an httptest
// server speaking the part of Stripe's API the provider uses with state
// (sessions that get paid, transfers listed by group, idempotency keys
// replayed), stripe-mock (StartMock), and events signed exactly as Stripe
// signs them (SignedEvent).
package stripetest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/xpromo/xpromo/server/internal/testtool"
)

// Fake is a stateful Stripe API on an httptest server.
type Fake struct {
	URL string

	mu        sync.Mutex
	n         int
	sessions  map[string]map[string]any
	transfers []map[string]any
	accounts  map[string]map[string]any
	idem      map[string][]byte // Idempotency-Key → the first answer
	// Requests counts requests by "METHOD path".
	Requests map[string]int
	// FailTransfers, when set, answers transfer creations with this status
	// and a Stripe error (without creating one).
	FailTransfers int
}

// NewFake starts a Fake, closed when the test ends.
func NewFake(t testing.TB) *Fake {
	f := &Fake{sessions: map[string]map[string]any{}, accounts: map[string]map[string]any{}, idem: map[string][]byte{}, Requests: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/checkout/sessions", f.keyed(f.createSession))
	mux.HandleFunc("GET /v1/checkout/sessions/{id}", f.getSession)
	mux.HandleFunc("GET /v1/checkout/sessions", f.listSessions)
	mux.HandleFunc("POST /v1/transfers", f.keyed(f.createTransfer))
	mux.HandleFunc("GET /v1/transfers", f.listTransfers)
	mux.HandleFunc("POST /v1/accounts", f.keyed(f.createAccount))
	mux.HandleFunc("GET /v1/accounts/{id}", f.getAccount)
	mux.HandleFunc("POST /v1/account_links", f.keyed(f.createAccountLink))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.Requests[r.Method+" "+r.URL.Path]++
		f.mu.Unlock()
		if r.Header.Get("Authorization") == "" {
			stripeError(w, 401, "invalid_request_error", "no key")
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

func (f *Fake) id(prefix string) string {
	f.n++
	return fmt.Sprintf("%s_fake%06d", prefix, f.n)
}

// keyed replays the first answer of an Idempotency-Key, as Stripe does.
func (f *Fake) keyed(h func(r *http.Request) (int, any)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			stripeError(w, 400, "invalid_request_error", err.Error())
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		key := r.Header.Get("Idempotency-Key")
		if b, ok := f.idem[r.URL.Path+" "+key]; ok && key != "" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Idempotent-Replayed", "true")
			w.Write(b)
			return
		}
		status, body := h(r)
		b, _ := json.Marshal(body)
		if status == 200 && key != "" {
			f.idem[r.URL.Path+" "+key] = b
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(b)
	}
}

func stripeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": typ, "message": msg}})
}

func (f *Fake) createSession(r *http.Request) (int, any) {
	amount, _ := strconv.ParseInt(r.PostForm.Get("line_items[0][price_data][unit_amount]"), 10, 64)
	id := f.id("cs_test")
	s := map[string]any{
		"id": id, "object": "checkout.session", "mode": r.PostForm.Get("mode"), "status": "open", "payment_status": "unpaid",
		"client_reference_id": r.PostForm.Get("client_reference_id"), "amount_total": amount,
		"currency": r.PostForm.Get("line_items[0][price_data][currency]"), "url": "https://checkout.stripe.test/c/pay/" + id,
		"livemode": false, "metadata": map[string]string{"xpromo_session_id": r.PostForm.Get("metadata[xpromo_session_id]")},
		"success_url": r.PostForm.Get("success_url"),
	}
	f.sessions[id] = s
	return 200, s
}

func (f *Fake) getSession(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	s, ok := f.sessions[r.PathValue("id")]
	b, _ := json.Marshal(s)
	f.mu.Unlock()
	if !ok {
		stripeError(w, 404, "invalid_request_error", "No such checkout.session")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// Session returns a copy of a session as Stripe would show it.
func (f *Fake) Session(id string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := map[string]any{}
	for k, v := range f.sessions[id] {
		c[k] = v
	}
	return c
}

// SetSession changes fields of a session (e.g. status complete,
// payment_status paid: the payer paid).
func (f *Fake) SetSession(id string, kv map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, v := range kv {
		f.sessions[id][k] = v
	}
}

// Pay marks a session paid, as Stripe does when the payer pays: complete,
// paid, with its PaymentIntent (pi_fake…, what refunds and disputes name).
func (f *Fake) Pay(id string) map[string]any {
	f.mu.Lock()
	if f.sessions[id]["payment_intent"] == nil {
		f.sessions[id]["payment_intent"] = f.id("pi")
	}
	f.mu.Unlock()
	f.SetSession(id, map[string]any{"status": "complete", "payment_status": "paid"})
	return f.Session(id)
}

// listSessions lists the sessions, filtered by payment_intent as Stripe
// does (the only filter the provider uses).
func (f *Fake) listSessions(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	data := []map[string]any{}
	for _, s := range f.sessions {
		if pi := r.URL.Query().Get("payment_intent"); pi == "" || s["payment_intent"] == pi {
			data = append(data, s)
		}
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "url": "/v1/checkout/sessions", "has_more": false, "data": data})
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// Charge is the Charge object of a paid session's PaymentIntent as Stripe
// sends it in charge.refunded: amount_refunded is cumulative.
func (f *Fake) Charge(sessionID, chargeID string, amountRefunded int64) map[string]any {
	s := f.Session(sessionID)
	return map[string]any{"id": chargeID, "object": "charge", "amount": s["amount_total"], "amount_captured": s["amount_total"],
		"amount_refunded": amountRefunded, "refunded": amountRefunded == s["amount_total"], "currency": s["currency"],
		"payment_intent": s["payment_intent"], "captured": true, "paid": true, "status": "succeeded", "livemode": false}
}

// Dispute is a Dispute object of a paid session's charge as Stripe sends it
// in charge.dispute.* events.
func (f *Fake) Dispute(sessionID, disputeID, chargeID string, amount int64, status string) map[string]any {
	s := f.Session(sessionID)
	return map[string]any{"id": disputeID, "object": "dispute", "amount": amount, "currency": s["currency"], "charge": chargeID,
		"payment_intent": s["payment_intent"], "reason": "fraudulent", "status": status, "is_charge_refundable": false,
		"balance_transactions": []any{}, "livemode": false}
}

func (f *Fake) createTransfer(r *http.Request) (int, any) {
	if f.FailTransfers != 0 {
		return f.FailTransfers, map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": "balance_insufficient", "message": "Insufficient funds in Stripe account."}}
	}
	amount, _ := strconv.ParseInt(r.PostForm.Get("amount"), 10, 64)
	tr := map[string]any{"id": f.id("tr"), "object": "transfer", "amount": amount, "currency": r.PostForm.Get("currency"),
		"destination": r.PostForm.Get("destination"), "transfer_group": r.PostForm.Get("transfer_group"), "livemode": false}
	f.transfers = append(f.transfers, tr)
	return 200, tr
}

// Transfers returns the transfers made.
func (f *Fake) Transfers() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.transfers...)
}

func (f *Fake) listTransfers(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	data := []map[string]any{}
	for _, tr := range f.transfers {
		if g := r.URL.Query().Get("transfer_group"); g == "" || tr["transfer_group"] == g {
			data = append(data, tr)
		}
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "url": "/v1/transfers", "has_more": false, "data": data})
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (f *Fake) createAccount(r *http.Request) (int, any) {
	a := map[string]any{"id": f.id("acct"), "object": "account", "type": r.PostForm.Get("type"), "country": r.PostForm.Get("country"),
		"charges_enabled": false, "payouts_enabled": false, "details_submitted": false,
		"metadata":     map[string]string{"xpromo_app_id": r.PostForm.Get("metadata[xpromo_app_id]")},
		"requirements": map[string]any{"currently_due": []string{"external_account", "tos_acceptance.date"}, "past_due": []string{}, "disabled_reason": "requirements.past_due"}}
	f.accounts[a["id"].(string)] = a
	return 200, a
}

// Accounts returns how many accounts were created.
func (f *Fake) Accounts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.accounts)
}

func (f *Fake) getAccount(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	a, ok := f.accounts[r.PathValue("id")]
	b, _ := json.Marshal(a)
	f.mu.Unlock()
	if !ok {
		stripeError(w, 404, "invalid_request_error", "No such account")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (f *Fake) createAccountLink(r *http.Request) (int, any) {
	if _, ok := f.accounts[r.PostForm.Get("account")]; !ok {
		return 404, map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": "No such account"}}
	}
	return 200, map[string]any{"object": "account_link", "url": "https://connect.stripe.test/setup/e/" + r.PostForm.Get("account"),
		"expires_at": time.Now().Add(5 * time.Minute).Unix()}
}

// SignedEvent builds a Stripe event of typ about obj and signs it under
// secret at ts exactly as Stripe does (stripe-go's webhook package): the
// body and its Stripe-Signature header.
func SignedEvent(t testing.TB, id, typ string, obj map[string]any, secret string, ts time.Time) (body []byte, header string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "api_version": "2026-03-25.dahlia", "created": ts.Unix(),
		"livemode": false, "data": map[string]any{"object": obj},
	})
	if err != nil {
		t.Fatal(err)
	}
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: ts})
	return signed.Payload, signed.Header
}

// StartMock starts stripe-mock on a free loopback port and returns its
// HTTP base URL. It skips the test when stripe-mock is not installed
// (`go install github.com/stripe/stripe-mock@v0.203.0`), unless
// XPROMO_TEST_REQUIRE_TOOLS is set (make test, CI), where it fails.
func StartMock(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("stripe-mock")
	if err != nil {
		gobin := filepath.Join(os.Getenv("HOME"), "go", "bin", "stripe-mock")
		if out, gerr := exec.Command("go", "env", "GOPATH").Output(); gerr == nil {
			gobin = filepath.Join(string(trimNL(out)), "bin", "stripe-mock")
		}
		if _, serr := os.Stat(gobin); serr == nil {
			bin, err = gobin, nil
		}
	}
	if err != nil {
		testtool.Missing(t, "stripe-mock is not installed: go install github.com/stripe/stripe-mock@v0.203.0 (scripts/test-deps.sh does)")
	}
	httpAddr, httpsAddr := freePort(t), freePort(t)
	cmd := exec.Command(bin, "-http-addr", httpAddr, "-https-addr", httpsAddr)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting stripe-mock: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + httpAddr
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", httpAddr, time.Second)
		if err == nil {
			c.Close()
			return url
		}
		if i == 300 {
			t.Fatalf("stripe-mock did not listen on %s: %v", httpAddr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func freePort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
