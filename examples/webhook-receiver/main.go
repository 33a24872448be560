// Command webhook-receiver receives xpromo webhooks, verifies their
// Standard Webhooks signature with the SDK's sdk/webhook package and prints
// one line per event to standard output: the webhook-id, then the event as
// it was sent (JSON).
//
//	XPROMO_WEBHOOK_SECRET=whsec_… webhook-receiver -addr 127.0.0.1:8088
//
// XPROMO_WEBHOOK_SECRET may hold several space-separated secrets (the new
// and the old one while a secret is rotated, or one per endpoint). With
// -secrets-file the secrets are read from a file instead, one or more per
// line, and read again whenever it changes: a script can start the receiver
// first and add each endpoint's secret when the API shows it (`make demo`
// does). Until a secret is known, requests are answered 503, so the server
// retries them.
//
// To try a receiver on your machine without registering an endpoint, run
// `xpromo listen --forward-to http://127.0.0.1:8088/ --secret whsec_…` with
// the receiver's secret.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/xpromo/xpromo/sdk/webhook"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8088", "address to listen on (port 0: any free port, printed)")
	secretsFile := flag.String("secrets-file", "", "read the secrets from this file (one or more per line), again whenever it changes, instead of XPROMO_WEBHOOK_SECRET")
	flag.Parse()
	var secrets secretSource
	if *secretsFile != "" {
		secrets = &fileSecrets{path: *secretsFile}
	} else {
		v, err := webhook.NewVerifier(strings.Fields(os.Getenv("XPROMO_WEBHOOK_SECRET"))...)
		if err != nil {
			log.Fatalf("webhook-receiver: XPROMO_WEBHOOK_SECRET: %v", err)
		}
		secrets = fixed{v}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("webhook-receiver: %v", err)
	}
	srv := &http.Server{Handler: newReceiver(os.Stdout, secrets), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("webhook-receiver: listening on http://%s", ln.Addr())
	log.Fatal(srv.Serve(ln))
}

// secretSource gives the verifier of the moment; nil while no secret is
// known.
type secretSource interface {
	verifier() (*webhook.Verifier, error)
}

// fixed is a verifier made once.
type fixed struct{ v *webhook.Verifier }

func (f fixed) verifier() (*webhook.Verifier, error) { return f.v, nil }

// fileSecrets reads the secrets from a file, again when its content
// changes.
type fileSecrets struct {
	path string
	mu   sync.Mutex
	raw  []byte
	v    *webhook.Verifier
}

func (f *fileSecrets) verifier() (*webhook.Verifier, error) {
	raw, err := os.ReadFile(f.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.v != nil && bytes.Equal(raw, f.raw) {
		return f.v, nil
	}
	secrets := strings.Fields(string(raw))
	if len(secrets) == 0 {
		return nil, nil
	}
	v, err := webhook.NewVerifier(secrets...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	f.raw, f.v = raw, v
	return v, nil
}

// newReceiver returns the handler: verification first (sdk/webhook's
// middleware), then the event.
func newReceiver(out io.Writer, secrets secretSource) http.Handler {
	p := &printer{out: out, seen: map[string]bool{}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := secrets.verifier()
		if err != nil {
			log.Printf("webhook-receiver: %v", err)
			http.Error(w, "the receiver's secrets cannot be read", http.StatusInternalServerError)
			return
		}
		if v == nil {
			http.Error(w, "no secret yet: try again later", http.StatusServiceUnavailable)
			return
		}
		v.Middleware(p).ServeHTTP(w, r)
	})
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
		fmt.Fprintf(p.out, "%s %s\n", id, bytes.TrimSpace(body))
	}
	w.WriteHeader(http.StatusNoContent)
}
