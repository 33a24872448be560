package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // a runtime failure, or `ledger verify` found violations
	exitUsage = 2 // bad command line or configuration
)

const usage = `Usage:
  xpromo-server [serve] [flags]    run the HTTP API (default command)
  xpromo-server ledger verify      check the ledger's invariants; exit 1 on any violation
  xpromo-server gate inspect FILE  what the vetting gate would record of a package; exit 1 unless it passes
  xpromo-server help               show this help

Run "xpromo-server <command> -h" for the flags of a command.
Every flag has an environment variable; a flag wins over its variable.
`

// program carries what the commands share. now is the clock handed to every
// domain component; main uses the wall clock.
type program struct {
	env            func(string) string
	stdout, stderr io.Writer
	now            func() time.Time
}

// run executes the command line args and returns the exit status. It returns
// when the command is done or, for serve, once ctx is cancelled and the
// server has shut down.
func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	p := &program{env: env, stdout: stdout, stderr: stderr, now: time.Now}
	return p.run(ctx, args)
}

func (p *program) run(ctx context.Context, args []string) int {
	cmd, rest := "serve", args
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, rest = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return p.exit(p.serve(ctx, rest))
	case "ledger":
		if len(rest) == 0 || rest[0] != "verify" {
			fmt.Fprint(p.stderr, "xpromo-server ledger: want the subcommand \"verify\"\n\n"+usage)
			return exitUsage
		}
		return p.exit(p.verify(ctx, rest[1:]))
	case "gate":
		return p.exit(p.gateCommand(ctx, rest))
	case "help":
		fmt.Fprint(p.stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(p.stderr, "xpromo-server: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
}

// exit maps a command's error to its exit status and reports it.
func (p *program) exit(err error) int {
	var ue *usageError
	var code exitCode
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(p.stderr, "xpromo-server: %v\n", err)
		return exitUsage
	case errors.As(err, &code):
		return int(code) // already reported
	default:
		fmt.Fprintf(p.stderr, "xpromo-server: %v\n", err)
		return exitFail
	}
}

// exitCode ends a command with a status after it has reported why.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// newLogger builds the process logger on w.
func newLogger(cfg config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
