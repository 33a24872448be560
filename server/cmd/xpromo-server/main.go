// Command xpromo-server is the xpromo reference server.
//
//	xpromo-server [serve] [flags]     run the HTTP API (the default)
//	xpromo-server ledger verify       recompute the ledger's invariants
//
// main only wires: configuration, logging, the store, the clock and the HTTP
// server. Everything it starts is stopped on SIGINT or SIGTERM.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// The Mozilla CA bundle, used when the system has none: the container
	// image is FROM scratch, and live mode calls Stripe over TLS.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default handling so that a
		// second Ctrl-C kills a shutdown that hangs.
		<-ctx.Done()
		stop()
	}()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
