package pkgread

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/internal/testtool"
)

// These tests hold the MSI reader (and the MSI fixture writer) against an
// independent implementation: msitools' wixl builds a real MSI from WiX
// source (fixture.Wixl) and msiinfo reads one. CI installs them (.ci/run).

func need(t *testing.T, tool string) {
	t.Helper()
	testtool.Command(t, tool, "Debian: apt-get install wixl msitools; this test checks the MSI reader against it")
}

func TestMSIBuiltByWixl(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "payload.bin"), []byte("hello\n"), 0o600)
	id, err := Reader{}.ReadFile(context.Background(), fixture.Wixl(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != "com.example.hello" || id.UpgradeCode != "{12345678-1234-1234-1234-123456789abc}" ||
		id.ProductCode != "{11111111-2222-3333-4444-555555555555}" || id.Publisher != "Example Ltd" || id.Version != "1.2.3" {
		t.Fatalf("%+v", id)
	}
}

func TestMSIFixtureReadByMsiinfo(t *testing.T) {
	need(t, "msiinfo")
	p := filepath.Join(t.TempDir(), "fixture.msi")
	os.WriteFile(p, fixture.MSI(map[string]string{"ProductName": "com.example.hello", "UpgradeCode": "{1}"}), 0o600)
	out, err := exec.Command("msiinfo", "export", p, "Property").CombinedOutput()
	if err != nil {
		t.Fatalf("msiinfo: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ProductName\tcom.example.hello") || !strings.Contains(string(out), "UpgradeCode\t{1}") {
		t.Fatalf("msiinfo reads the fixture differently:\n%s", out)
	}
}
