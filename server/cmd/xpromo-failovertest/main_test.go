package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad command line is exit status 2 with a message, before anything runs.
func TestUsageErrors(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "xpromo-server")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	env := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-server is required"},
		{[]string{"-server", filepath.Join(t.TempDir(), "missing")}, "-server:"},
		{[]string{"-server", bin, "-faults", "meteor"}, `unknown fault kind "meteor"`},
		{[]string{"-server", bin, "-workers", "0"}, "must be positive"},
		{[]string{"-server", bin, "-retry-for", "0s"}, "-retry-for must be positive"},
		{[]string{"-server", bin, "-base-port", "80"}, "-base-port between"},
		{[]string{"-server", bin, "extra"}, `unexpected argument "extra"`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, env, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q does not say %q", tc.args, stderr.String(), tc.want)
		}
	}
}

// The fault kinds parse in the order given.
func TestParseKinds(t *testing.T) {
	got, err := parseKinds("sigstop-30s,kill-postmaster")
	if err != nil || len(got) != 2 || got[0] != "sigstop-30s" || got[1] != "kill-postmaster" {
		t.Fatalf("parseKinds: %v, %v", got, err)
	}
}
