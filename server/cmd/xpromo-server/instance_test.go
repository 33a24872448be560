package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One server process serves an SQLite file (holder detection relies on it):
// a second one refuses to start, `ledger verify` still reads beside it, and
// once the first stops another may serve the file.
func TestServeSQLiteOneServerPerFile(t *testing.T) {
	dir := t.TempDir()
	_, logs, stop := startServe(t, []string{"--data-dir", dir}, nil)
	l := logs.find("listening")
	require.NotNil(t, l)
	assert.True(t, strings.HasPrefix(l["instance"].(string), "inst_"), "the instance id is logged: %v", l["instance"])

	var stderr bytes.Buffer
	code := run(t.Context(), []string{"serve", "--data-dir", dir, "--addr", "127.0.0.1:0"}, envMap(nil), io.Discard, &stderr)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr.String(), "another server process serves this SQLite database")

	var stdout bytes.Buffer
	assert.Equal(t, exitOK, run(t.Context(), []string{"ledger", "verify", "--data-dir", dir}, envMap(nil), &stdout, io.Discard), stdout.String())

	assert.Equal(t, exitOK, stop())
	_, _, stop = startServe(t, []string{"--data-dir", dir}, nil)
	assert.Equal(t, exitOK, stop())
}
