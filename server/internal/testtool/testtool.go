// Package testtool is how tests that drive a real tool (clamd,
// osslsigncode, msitools, stripe-mock, Node packages) deal with its absence:
// a developer's `go test` skips them, saying what to install; `make test`
// and CI, which install every tool first (scripts/test-deps.sh), set
// XPROMO_TEST_REQUIRE_TOOLS so that a missing tool fails the test instead
// of silently skipping it.
package testtool

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// RequireEnv is the variable that turns a missing tool into a failure.
const RequireEnv = "XPROMO_TEST_REQUIRE_TOOLS"

// Missing ends the test because a tool it needs is missing: a skip, or a
// failure when RequireEnv is set.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s (%s is set: the tools must be installed; scripts/test-deps.sh installs them)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// Command returns the path of the command name, looked up on PATH and then
// at the absolute paths in also; when it is nowhere, Missing with hint
// (what to install).
func Command(t testing.TB, name, hint string, also ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range also {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	Missing(t, "%s is not installed (%s)", name, hint)
	return ""
}

// File checks that path exists (an installed package's files); when it does
// not, Missing with hint.
func File(t testing.TB, path, hint string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Missing(t, "%s is missing (%s)", path, hint)
	}
}
