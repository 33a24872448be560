package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/gatetest"
)

func TestGateInspect(t *testing.T) {
	dir := t.TempDir()
	p := gatetest.Certs()
	roots, _ := p.Root.WritePEM(dir)
	exe := filepath.Join(dir, "hello.exe")
	require.NoError(t, os.WriteFile(exe, gatetest.PE(t, "com.snip.win", p.PE), 0o600))
	unsigned := filepath.Join(dir, "unsigned.exe")
	require.NoError(t, os.WriteFile(unsigned, gatetest.PE(t, "com.snip.win", nil), 0o600))

	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"gate", "inspect", exe, "--bundle-id", "com.snip.win", "--roots-file", roots}, envMap(nil), &stdout, &stderr)
	assert.Equal(t, exitOK, code, stderr.String())
	assert.Contains(t, stdout.String(), "format:     pe (windows)")
	assert.Contains(t, stdout.String(), "signed:      pass")
	assert.Contains(t, stdout.String(), "OK: the gate would record")

	stdout.Reset()
	code = run(t.Context(), []string{"gate", "inspect", "--json", unsigned}, envMap(map[string]string{"XPROMO_GATE_ROOTS_FILE": roots}), &stdout, &stderr)
	assert.Equal(t, exitFail, code)
	var ins gate.Inspection
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &ins), stdout.String())
	assert.False(t, ins.Pass)
	assert.Equal(t, []string{"gate_unsigned_binary"}, ins.Checks[1].Reasons)
	assert.Equal(t, "com.snip.win", ins.BundleID)

	assert.Equal(t, exitUsage, run(t.Context(), []string{"gate", "inspect"}, envMap(nil), &stdout, &stderr))
	assert.Equal(t, exitUsage, run(t.Context(), []string{"gate"}, envMap(nil), &stdout, &stderr))
	assert.Equal(t, exitFail, run(t.Context(), []string{"gate", "inspect", filepath.Join(dir, "missing")}, envMap(nil), &stdout, &stderr))
}

func TestGateInspectDMG(t *testing.T) {
	dir := t.TempDir()
	p := gatetest.Certs()
	roots, _ := p.Root.WritePEM(dir)
	img := filepath.Join(dir, "Hello.dmg")
	require.NoError(t, os.WriteFile(img, gatetest.DMG("com.snip.app", gatetest.AppOptions{Signer: p.DevID, Notarized: true}), 0o600))
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"gate", "inspect", img, "--roots-file", roots}, envMap(nil), &stdout, &stderr)
	assert.Equal(t, exitOK, code, stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "format:     dmg (macos)")
	assert.Contains(t, out, `disk image: hfs+ volume, chunks zlib, app "Hello.app", image signature true (verified true Developer ID Application: Example Ltd (TEAM123456)), stapled ticket true`)
	assert.Contains(t, out, "identifier: com.snip.app (team TEAM123456)")
	assert.Contains(t, out, "signed:      pass")
	t.Log(out)
}
