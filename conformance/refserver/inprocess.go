// Package refserver starts the reference server (github.com/xpromo/xpromo/server)
// for the conformance suite: in this process behind httptest (InProcess), or
// as a container image built from server/Dockerfile (Container).
//
// It is the only part of the conformance module that knows the reference
// server: the suite itself (package conformance) talks to any server over
// HTTP through the SDK.
package refserver

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/sqlite"
)

// Limits of the request rate the suite's targets run with: high enough for
// the suite's own traffic from one address (registrations, operator calls,
// test checkouts), low enough for the rate-limit checks to reach 429 quickly,
// and writes stricter than reads, as the API document wants.
const (
	ReadLimit  = 3000
	WriteLimit = 600
)

// Options adjust the in-process server.
type Options struct {
	// Wrap, when set, wraps the server's handler: the suite's self-test
	// breaks one behaviour on purpose with it.
	Wrap func(http.Handler) http.Handler
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
}

// Server is a running reference server.
type Server struct {
	URL        string
	AdminToken string
}

// InProcess starts the reference server, in test mode, on a fresh embedded
// SQLite store in a temporary directory, behind an httptest server on
// 127.0.0.1. Everything is torn down when t ends.
func InProcess(t testing.TB, opts Options) *Server {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "xpromo.db"))
	if err != nil {
		t.Fatalf("refserver: opening the SQLite store: %v", err)
	}
	t.Cleanup(func() { store.Close() })

	// The listener exists before the server starts, so that the server
	// knows its own URL (it hands out checkout URLs under it).
	ts := httptest.NewUnstartedServer(nil)
	baseURL := "http://" + ts.Listener.Addr().String()

	token := "conformance-admin-" + randomToken()
	srv, err := assembly.New(assembly.Config{
		Mode:       httpapi.ModeTest,
		AdminToken: token,
		BaseURL:    baseURL,
		ReadLimit:  ReadLimit,
		WriteLimit: WriteLimit,
		Logger:     opts.Logger,
	}, store)
	if err != nil {
		ts.Listener.Close()
		t.Fatalf("refserver: assembling the server: %v", err)
	}
	var handler http.Handler = srv
	if opts.Wrap != nil {
		handler = opts.Wrap(srv)
	}
	ts.Config.Handler = handler
	ts.Start()
	t.Cleanup(ts.Close)
	return &Server{URL: ts.URL, AdminToken: token}
}
