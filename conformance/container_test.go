package conformance_test

import (
	"context"
	"os"
	"testing"

	"github.com/xpromo/xpromo/conformance"
	"github.com/xpromo/xpromo/conformance/refserver"
)

// TestConformanceContainer runs the suite against the reference server's
// container image: built locally from server/Dockerfile (FROM scratch and a
// static binary: nothing is pulled), run with host networking on a fresh
// PostgreSQL database, torn down after. It runs only when
// XPROMO_CONFORMANCE_CONTAINER=1 (make conformance sets it), and is skipped,
// loudly, when no Docker engine answers.
func TestConformanceContainer(t *testing.T) {
	if os.Getenv(EnvContainer) != "1" {
		t.Skip("the container target runs with " + EnvContainer + "=1 (make conformance)")
	}
	if os.Getenv(EnvURL) != "" {
		t.Skip("the container target runs the reference server, not " + EnvURL)
	}
	target := conformance.TargetInfo{Kind: "container", Description: "reference server image (server/Dockerfile), PostgreSQL"}
	if err := refserver.DockerAvailable(context.Background()); err != nil {
		containerNotRun = err.Error()
		report.AddSkippedRun(target, err.Error())
		t.Skipf("CONFORMANCE CONTAINER TARGET NOT RUN: %v", err)
	}
	srv := refserver.Container(t, refserver.ContainerOptions{})
	conformance.Run(t, conformance.Target{
		Kind:        target.Kind,
		Description: target.Description,
		BaseURL:     srv.URL,
		AdminToken:  srv.AdminToken,
		Areas:       areasFromEnv(),
	}, report)
}
