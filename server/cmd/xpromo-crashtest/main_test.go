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
		{[]string{"-server", bin, "-stores", "mysql"}, `unknown store "mysql"`},
		{[]string{"-server", bin, "-crash-ops", "refund"}, `unknown operation "refund"`},
		{[]string{"-server", bin, "-workers", "0"}, "must be positive"},
		{[]string{"-server", bin, "-retry-for", "0s"}, "-retry-for must be positive"},
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
