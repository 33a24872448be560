package gate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/gatetest"
	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

func inspectFile(t *testing.T, b []byte, o gate.InspectOptions) *gate.Inspection {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pkg")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	ins, err := gate.Inspect(ctx, p, o)
	require.NoError(t, err)
	return ins
}

// Inspect runs the gate's package checks on a local file and says what a
// gate job would record.
func TestInspect(t *testing.T) {
	p := gatetest.Certs()
	roots := p.Root.Pool()

	ins := inspectFile(t, gatetest.PE(t, "com.snip.win", p.PE), gate.InspectOptions{Roots: roots})
	assert.True(t, ins.Pass, ins.Details)
	assert.Equal(t, "com.snip.win", ins.BundleID, "the package's primary identifier stands in for --bundle-id")
	assert.Equal(t, "pe", ins.Package.Format)
	assert.Equal(t, "Example Ltd", ins.Signature.DeclaredPublisher)
	assert.Len(t, ins.SHA256, 64)

	ins = inspectFile(t, gatetest.SignedMSI(t, "com.snip.msi", p.PE), gate.InspectOptions{BundleID: "com.snip.msi", Roots: roots})
	assert.True(t, ins.Pass, ins.Details)

	ins = inspectFile(t, gatetest.PE(t, "com.snip.win", p.PE), gate.InspectOptions{BundleID: "com.other", Roots: roots})
	assert.False(t, ins.Pass)
	assert.Equal(t, []gate.InspectedCheck{{Check: "bundle_match", Reasons: []string{"gate_bundle_mismatch"}}, {Check: "signed", Passed: true}}, ins.Checks)

	ins = inspectFile(t, gatetest.PE(t, "com.snip.win", p.PE), gate.InspectOptions{})
	assert.Equal(t, []gate.InspectedCheck{{Check: "bundle_match", Passed: true}, {Check: "signed", Reasons: []string{"gate_untrusted_signer"}}}, ins.Checks,
		"no roots: nothing is trusted")

	ins = inspectFile(t, fixture.Zip(fixture.File{Name: "Snip.msi", Data: gatetest.SignedMSI(t, "com.snip.msi", p.PE)}), gate.InspectOptions{Roots: roots})
	assert.True(t, ins.Pass, ins.Details)
	assert.Equal(t, "com.snip.msi", ins.BundleID)
	assert.Equal(t, "zip:Snip.msi", ins.Package.Container)

	ins = inspectFile(t, gatetest.MSI("com.snip.msi"), gate.InspectOptions{Roots: roots})
	assert.Equal(t, []string{"gate_unsigned_binary"}, ins.Checks[1].Reasons)

	bomb := fixture.Zip(fixture.File{Name: "Hello.app/Contents/Info.plist",
		Data: []byte("<plist>" + strings.Repeat("<dict><key>a</key>", 5000) + strings.Repeat("</dict>", 5000) + "</plist>")})
	ins = inspectFile(t, bomb, gate.InspectOptions{BundleID: "com.snip.app", Roots: roots})
	assert.False(t, ins.Pass)
	assert.Equal(t, []string{"gate_package_too_deep"}, ins.Checks[0].Reasons)
	assert.Contains(t, ins.Details["gate_package_too_deep"], "deep")
}
