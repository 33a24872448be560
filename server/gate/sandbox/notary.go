package sandbox

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/codesign"
	"github.com/xpromo/xpromo/server/gate/notary"
	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// notaryURL is where the sandbox's ticket service answers. It is never
// dialled: requests reach the handler through an in-memory transport.
const notaryURL = "https://notary.sandbox.invalid/database/1/com.apple.gk.ticket-delivery/production/public/records/lookup"

// maxTickets bounds the records the ticket service remembers.
const maxTickets = 4096

// Notary answers the online notarisation lookup for the sandbox's own
// downloads with a real notary client asking the sandbox's ticket service
// (Apple's CloudKit records-lookup JSON, in memory): the record of every
// macOS package it built notarised (the good variants; not unsigned.* or
// unnotarized.*) is found, any other is NOT_FOUND. The gate asks it only
// about sandbox downloads (gate.Service.SandboxNotary).
func (s *Sandbox) Notary() gate.NotaryLookup {
	return &notary.Client{URL: notaryURL, HTTP: &http.Client{
		// Not server/outbound: this transport hands the request to the
		// in-memory handler and never opens a socket.
		Transport: handlerTransport{notary.Handler(s.tickets.has, ticket)}, Timeout: 10 * time.Second,
	}}
}

// tickets is the set of notarised record names, oldest forgotten first.
type tickets struct {
	mu    sync.Mutex
	m     map[string]bool
	order []string
}

func (t *tickets) add(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]bool{}
	}
	if t.m[name] {
		return
	}
	if len(t.order) >= maxTickets {
		delete(t.m, t.order[0])
		t.order = t.order[1:]
	}
	t.m[name] = true
	t.order = append(t.order, name)
}

func (t *tickets) has(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[name]
}

// notarise records the ticket of a built macOS package — the record name
// the gate will ask about, computed by the gate's own verifier — unless
// the variant is not notarised.
func (s *Sandbox) notarise(variant string) func([]byte, error) ([]byte, error) {
	return func(pkg []byte, err error) ([]byte, error) {
		if err != nil || variant == variantUnsigned || variant == variantUnnotarized || variant == variantUnreadable {
			return pkg, err
		}
		v := &codesign.Verifier{Roots: s.Roots(), Now: s.now}
		ctx := context.Background()
		var res *codesign.Result
		switch f, _ := pkgread.Detect(bytes.NewReader(pkg), int64(len(pkg))); f {
		case pkgread.FormatPKG:
			res, _ = v.VerifyPKG(ctx, bytes.NewReader(pkg), int64(len(pkg)))
		case pkgread.FormatDMG:
			res, _ = v.VerifyDMGApp(ctx, bytes.NewReader(pkg), int64(len(pkg))) // the app inside: its cdhash
		default:
			res, _ = v.VerifyApp(ctx, bytes.NewReader(pkg), int64(len(pkg)))
		}
		if res != nil && len(res.CDHashes) > 0 {
			if dt := notary.DigestType(res.DigestAlgorithm); dt != 0 {
				s.tickets.add(notary.RecordName(dt, res.CDHashes[0]))
			}
		}
		return pkg, nil
	}
}
