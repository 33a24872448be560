package rdap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/gate/rdap"
	"github.com/xpromo/xpromo/server/internal/memtest"
)

// A registry answering a bomb of any class fails the check with
// gate_rdap_unavailable (retried later, never a pass), and reading the
// answer allocates under 8 MiB (8 × the 1 MiB an answer may be). So does a
// bootstrap file that is one.
func TestAnswerBombs(t *testing.T) {
	f := newFakeRegistry(t)
	bombs := memtest.JSONBombs(1 << 20)
	for _, b := range bombs {
		f.answer(strings.ReplaceAll(b.Class, " ", "")+".test", 200, string(b.Text))
	}
	c := newClient(t, rdap.Config{BootstrapURL: f.URL + "/dns.json"})
	c.Check(context.Background(), "warm.test") // the bootstrap file is fetched once, outside the measure
	for _, b := range bombs {
		var r rdap.Result
		memtest.Under(t, 8<<20, "RDAP answer "+b.Class, func() {
			r = c.Check(context.Background(), strings.ReplaceAll(b.Class, " ", "")+".test")
		})
		assert.Equal(t, rdap.ReasonRDAPUnavailable, r.Reason, "%s: %v", b.Class, r.Err)
	}
	dir := t.TempDir()
	for _, b := range bombs[:3] {
		path := filepath.Join(dir, "dns.json")
		if err := os.WriteFile(path, b.Text, 0o600); err != nil {
			t.Fatal(err)
		}
		c := newClient(t, rdap.Config{BootstrapFile: path})
		var r rdap.Result
		memtest.Under(t, 8<<20, "bootstrap file "+b.Class, func() { r = c.Check(context.Background(), "example.com") })
		assert.Equal(t, rdap.ReasonRDAPUnavailable, r.Reason, "%s: %v", b.Class, r.Err)
		assert.True(t, errors.Is(r.Err, rdap.ErrMalformedAnswer), "%s: %v", b.Class, r.Err)
	}
}
