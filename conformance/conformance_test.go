package conformance_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/conformance"
	"github.com/xpromo/xpromo/conformance/refserver"
)

// Environment of the suite's tests (docs/conformance.md).
const (
	// EnvURL names a running implementation to test instead of the
	// in-process reference server; EnvAdminToken is its admin token.
	EnvURL        = "XPROMO_CONFORMANCE_URL"
	EnvAdminToken = "XPROMO_CONFORMANCE_ADMIN_TOKEN"
	// EnvAreas limits the run to some areas (comma-separated ids).
	EnvAreas = "XPROMO_CONFORMANCE_AREAS"
	// EnvReport is where the JSON report is written; default
	// conformance-report.json in the package directory.
	EnvReport = "XPROMO_CONFORMANCE_REPORT"
	// EnvContainer=1 runs the suite against the reference server's
	// container image too (make conformance sets it).
	EnvContainer = "XPROMO_CONFORMANCE_CONTAINER"
)

// report collects every run of this test binary; TestMain writes it.
var report = conformance.NewReport()

// containerNotRun is set by TestConformanceContainer when it was asked for
// but could not run (no Docker engine): TestMain says so loudly.
var containerNotRun string

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if len(report.Runs) > 0 {
		report.WriteTable(os.Stdout)
		path := os.Getenv(EnvReport)
		if path == "" {
			path = "conformance-report.json"
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if err := report.WriteJSON(path); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: writing the report: %v\n", err)
			code = 1
		} else {
			fmt.Printf("\nconformance report: %s\n", path)
		}
	}
	if containerNotRun != "" {
		banner := strings.Repeat("!", 78)
		msg := fmt.Sprintf("%s\n!! CONFORMANCE CONTAINER TARGET NOT RUN: %s\n%s\n", banner, containerNotRun, banner)
		fmt.Print(msg)
	}
	os.Exit(code)
}

// areasFromEnv reads EnvAreas.
func areasFromEnv() []string {
	var out []string
	for a := range strings.SplitSeq(os.Getenv(EnvAreas), ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// TestConformance runs the suite against the server named by EnvURL, or
// else against the reference server started in this process.
func TestConformance(t *testing.T) {
	target := conformance.Target{Areas: areasFromEnv()}
	if u := os.Getenv(EnvURL); u != "" {
		target.Kind, target.BaseURL, target.AdminToken = "external", u, os.Getenv(EnvAdminToken)
		target.Description = "named by " + EnvURL
	} else {
		srv := refserver.InProcess(t, refserver.Options{})
		target.Kind, target.BaseURL, target.AdminToken = "in-process", srv.URL, srv.AdminToken
		target.Description = "reference server, embedded SQLite"
	}
	conformance.Run(t, target, report)
}
