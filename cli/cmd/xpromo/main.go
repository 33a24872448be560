// Command xpromo is the xpromo command line: the REST API v1 for people and
// scripts. It only wires the process into package cli; docs/cli.md is its
// manual.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/xpromo/xpromo/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, cli.OSEnv(), os.Args[1:])
	stop()
	os.Exit(code)
}
