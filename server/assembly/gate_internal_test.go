package assembly

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/gatetest"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// Live mode runs the real checks: it refuses to start without what they
// need, saying which, and refuses the test-only loopback setting. Test mode
// starts with none of it.
func TestGateLiveModeNeedsItsCounterparts(t *testing.T) {
	s := storagetest.SQLite(t)
	_, err := gateService(Config{Logger: slog.New(slog.DiscardHandler), Now: time.Now, Mode: httpapi.ModeLive, BaseURL: "http://127.0.0.1:8080"}, s, nil)
	require.Error(t, err)
	for _, want := range []string{"--gate-roots-file", "--clamd-address", "--smtp-host"} {
		assert.Contains(t, err.Error(), want)
	}

	roots, _ := gatetest.Certs().Root.WritePEM(t.TempDir())
	full := GateConfig{RootsFile: roots, ClamdAddress: "tcp://clamd.internal:3310",
		SMTP: contact.SMTPConfig{Host: "smtp.internal", From: "xpromo <verify@xpromo.dev>"}}
	svc, err := gateService(Config{Logger: slog.New(slog.DiscardHandler), Now: time.Now, Mode: httpapi.ModeLive, BaseURL: "https://xpromo.dev", Gate: full}, s, nil)
	require.NoError(t, err)
	assert.NotNil(t, svc.Roots)
	assert.NotNil(t, svc.Scanner)
	assert.Nil(t, svc.SandboxRoots, "live mode has no sandbox")

	full.AllowLoopback = true
	_, err = gateService(Config{Logger: slog.New(slog.DiscardHandler), Now: time.Now, Mode: httpapi.ModeLive, BaseURL: "https://xpromo.dev", Gate: full}, s, nil)
	assert.ErrorIs(t, err, errGateLoopbackInLive)

	junk := filepath.Join(t.TempDir(), "roots.pem")
	require.NoError(t, os.WriteFile(junk, []byte("not a certificate"), 0o600))
	_, err = gateService(Config{Logger: slog.New(slog.DiscardHandler), Now: time.Now, Mode: httpapi.ModeTest, Gate: GateConfig{RootsFile: junk}}, s, nil)
	assert.ErrorContains(t, err, "no PEM certificate")

	svc, err = gateService(Config{Logger: slog.New(slog.DiscardHandler), Now: time.Now, Mode: httpapi.ModeTest, BaseURL: "http://127.0.0.1:8080"}, s, nil)
	require.NoError(t, err)
	assert.Nil(t, svc.Roots, "test mode without roots trusts nothing")
	assert.NotNil(t, svc.SandboxRoots, "test mode answers reserved names from the sandbox")
	assert.NotNil(t, svc.Domains)
}
