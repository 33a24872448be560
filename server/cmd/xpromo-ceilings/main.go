// Command xpromo-ceilings measures this machine's own limits, so that every
// benchmark figure can be set beside them as a ratio measured in the same
// run (BENCHMARKS.md, server/loadgen.Ceilings): raw PostgreSQL single-row
// INSERT transactions a second (pgbench, 8 clients), rows a second of
// 100-row INSERT batches, Go's hello-world HTTP requests a second (a
// net/http server in another process, the lean generator of
// xpromo-loadgen over 64 connections), and the load average.
//
//	xpromo-ceilings -database-url postgres://… [-duration 5s] [-o ceilings.json]
//	go test -bench … | xpromo-ceilings -annotate ceilings.json
//
// It prints "ceiling NAME VALUE" lines; -o also writes them as JSON, which
// -annotate reads to add the ratio under each benchmark line of its input.
// `make ceilings` runs it; `make bench` and `make loadgen` run it first.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/xpromo/xpromo/server/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("xpromo-ceilings", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbURL := fs.String("database-url", os.Getenv("XPROMO_TEST_DATABASE_URL"), "PostgreSQL server for pgbench's scratch database (env XPROMO_TEST_DATABASE_URL); empty: no PostgreSQL ceilings")
	duration := fs.Duration("duration", 5*time.Second, "time of each measurement")
	out := fs.String("o", "", "also write the ceilings as JSON to this file")
	annotate := fs.String("annotate", "", "read `go test -bench` output on stdin and print it with each throughput's ratio to the ceilings in this JSON file")
	hello := fs.String("hello-server", "", "serve hello world on this address (the HTTP ceiling's server; internal)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case *hello != "":
		if err := loadgen.ServeHello(*hello, stdout); err != nil {
			fmt.Fprintf(stderr, "xpromo-ceilings: %v\n", err)
			return 1
		}
		return 0
	case *annotate != "":
		c, err := loadgen.ReadCeilings(*annotate)
		if err == nil {
			err = loadgen.Annotate(stdin, stdout, c)
		}
		if err != nil {
			fmt.Fprintf(stderr, "xpromo-ceilings: %v\n", err)
			return 1
		}
		return 0
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "xpromo-ceilings: %v\n", err)
		return 1
	}
	c, err := loadgen.MeasureCeilings(ctx, loadgen.CeilingConfig{
		DatabaseURL: *dbURL, Duration: *duration, Log: stderr,
		HelloServer: func() (string, func(), error) { return loadgen.StartHello(exe, "-hello-server", "127.0.0.1:0") },
	})
	if err != nil {
		fmt.Fprintf(stderr, "xpromo-ceilings: %v\n", err)
		return 1
	}
	if err := loadgen.WriteCeilings(stdout, c); err != nil {
		return 1
	}
	if *out != "" {
		b, _ := json.MarshalIndent(c, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "xpromo-ceilings: %v\n", err)
			return 1
		}
	}
	return 0
}
