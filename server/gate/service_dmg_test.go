package gate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/gatetest"
	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

// A .dmg holding a signed app on an HFS+ volume, notarised on the image,
// goes through the zipped app's checks to approved: an UDZO (zlib), ULFO
// (LZFSE) or ULMO (LZMA) image, or one in a zip.
func TestGateApprovesASignedDMG(t *testing.T) {
	for _, format := range []string{"dmg", "zip around a dmg", "ULFO dmg", "ULMO dmg"} {
		t.Run(format, func(t *testing.T) { approvesSignedDMG(t, format) })
	}
}

func approvesSignedDMG(t *testing.T, format string) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		chunk, chunks := uint32(0), []string{"zlib", "ignore"}
		switch format {
		case "ULFO dmg":
			chunk, chunks = fixture.ChunkLZFSE, []string{"lzfse"}
		case "ULMO dmg":
			chunk, chunks = fixture.ChunkLZMA, []string{"lzma"}
		}
		pkg := gatetest.DMGChunks("com.snip.app", gatetest.AppOptions{Signer: gatetest.Certs().DevID, Notarized: true}, chunk)
		container := ""
		if format == "zip around a dmg" {
			pkg, container = fixture.Zip(fixture.File{Name: "Snip-1.0.dmg", Data: pkg}), "zip:Snip-1.0.dmg"
		}
		a := w.register(appSpec{pkg: pkg})
		w.run()
		m, ok := w.inbox.Last(a.ContactEmail)
		require.True(t, ok)
		_, err := w.gate.VerifyCode(ctx, a.ID, m.Code)
		require.NoError(t, err)
		w.run()
		sc := w.score(a.ID)
		assert.Equal(t, xpromo.AppStatusApproved, sc.Status, sc.Reasons)
		res := w.lastResult(a.ID)
		assert.Equal(t, "dmg", res.Evidence.Package.Format)
		assert.Equal(t, container, res.Evidence.Package.Container)
		assert.Equal(t, []string{"com.snip.app"}, res.Evidence.Package.BundleIDs)
		require.NotNil(t, res.Evidence.Package.DiskImage)
		assert.Equal(t, "hfs+", res.Evidence.Package.DiskImage.Filesystem)
		assert.Equal(t, "Hello.app", res.Evidence.Package.DiskImage.AppPath)
		assert.Subset(t, chunks, res.Evidence.Package.DiskImage.Chunks)
		assert.True(t, res.Evidence.Package.DiskImage.Signed)
		assert.True(t, res.Evidence.Package.DiskImage.NotaryTicket)
		assert.True(t, res.Evidence.Package.DiskImage.SignatureVerified)
		assert.Equal(t, "Developer ID Application: Example Ltd (TEAM123456)", res.Evidence.Package.DiskImage.Signer)
		assert.Equal(t, "macho", res.Evidence.Signature.Kind)
		assert.Equal(t, "TEAM123456", res.Evidence.Signature.TeamID)
		assert.True(t, res.Evidence.Signature.Notarized)
	})
}

func TestGateDMGRejections(t *testing.T) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		p := gatetest.Certs()
		apfs := make([]byte, 8192)
		copy(apfs[32:], "NXSB")
		cases := []struct {
			name   string
			spec   appSpec
			reason string
			gate   xpromo.Gate
		}{
			{"unsigned", appSpec{pkg: gatetest.DMG("com.snip.app", gatetest.AppOptions{Notarized: true})}, "gate_unsigned_binary",
				xpromo.Gate{MalwareClean: true, DomainAgeOK: true, BundleMatch: true}},
			{"not notarized", appSpec{pkg: gatetest.DMG("com.snip.app", gatetest.AppOptions{Signer: p.DevID})}, "gate_not_notarized",
				xpromo.Gate{MalwareClean: true, DomainAgeOK: true, BundleMatch: true}},
			{"another bundle", appSpec{bundleID: "com.other.app", pkg: gatetest.DMG("com.snip.app", gatetest.AppOptions{Signer: p.DevID, Notarized: true})}, "gate_bundle_mismatch",
				xpromo.Gate{MalwareClean: true, DomainAgeOK: true}},
			{"apfs", appSpec{pkg: fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_APFS : 1)", Data: apfs})}, apperr.GatePackageAPFSUnsupported,
				xpromo.Gate{MalwareClean: true, DomainAgeOK: true}},
			{"a chunk bomb", appSpec{pkg: fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_HFS : 1)", Data: make([]byte, 4096), Bomb: 80 << 20})},
				apperr.GatePackageTooLarge, xpromo.Gate{MalwareClean: true, DomainAgeOK: true}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				w.t = t
				w.rejected(c.spec, c.reason, c.gate)
			})
		}
	})
}

// `xpromo-server gate inspect app.dmg` says what the gate would record.
func TestInspectDMG(t *testing.T) {
	p := gatetest.Certs()
	ins := inspectFile(t, gatetest.DMG("com.snip.app", gatetest.AppOptions{Signer: p.DevID, Notarized: true}), gate.InspectOptions{Roots: p.Root.Pool()})
	assert.True(t, ins.Pass, ins.Details)
	assert.Equal(t, "com.snip.app", ins.BundleID)
	assert.Equal(t, "dmg", ins.Package.Format)
	require.NotNil(t, ins.Package.DiskImage)
	assert.Equal(t, []string{"zlib"}, ins.Package.DiskImage.Chunks)
	assert.Equal(t, "TEAM123456", ins.Signature.TeamID)
}
