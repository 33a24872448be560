// Command webhook-receiver receives xpromo webhooks, verifies their
// Standard Webhooks signature with the SDK's sdk/webhook package and prints
// one line per event to standard output.
//
//	XPROMO_WEBHOOK_SECRET=whsec_… webhook-receiver -addr 127.0.0.1:8088
//
// XPROMO_WEBHOOK_SECRET may hold several space-separated secrets (the new
// and the old one while a secret is rotated). The server does not send
// webhooks yet (issue 13); until then the receiver can be exercised with any
// Standard Webhooks sender, such as its test.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/xpromo/xpromo/sdk/webhook"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8088", "address to listen on")
	flag.Parse()
	h, err := newReceiver(os.Stdout, strings.Fields(os.Getenv("XPROMO_WEBHOOK_SECRET"))...)
	if err != nil {
		log.Fatalf("webhook-receiver: XPROMO_WEBHOOK_SECRET: %v", err)
	}
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("webhook-receiver: listening on http://%s", *addr)
	log.Fatal(srv.ListenAndServe())
}

// newReceiver returns the handler: verification first, then the event.
func newReceiver(out io.Writer, secrets ...string) (http.Handler, error) {
	v, err := webhook.NewVerifier(secrets...)
	if err != nil {
		return nil, err
	}
	p := &printer{out: out, seen: map[string]bool{}}
	return v.Middleware(p), nil
}

// printer prints each verified event once. Delivery is at least once, so
// the same webhook-id can arrive again after a lost answer; a real receiver
// records handled ids durably, in the same transaction as its effect.
type printer struct {
	mu   sync.Mutex
	out  io.Writer
	seen map[string]bool
}

func (p *printer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body) // already verified and in memory
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := r.Header.Get(webhook.HeaderID)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.seen[id] {
		p.seen[id] = true
		fmt.Fprintf(p.out, "%s %s\n", id, body)
	}
	w.WriteHeader(http.StatusNoContent)
}
