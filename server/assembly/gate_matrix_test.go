package assembly_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// gateMatrixCase is one download the test-mode sandbox serves: a format
// (by the download_url's path) and a magic value (the first label of its
// host), with the gate reasons it must end in (none: approved).
type gateMatrixCase struct {
	platform xpromo.Platform
	path     string // .zip (the zipped .app), .dmg, .pkg, .exe, .msi, .msix, and the zip of each installer
	variant  string // "" (good), or the magic first label
	reasons  []string
}

// gateMatrix is every format × every magic value that applies to it
// (docs/gate.md, "Magic values").
func gateMatrix() []gateMatrixCase {
	var cases []gateMatrixCase
	add := func(p xpromo.Platform, path, variant string, reasons ...string) {
		cases = append(cases, gateMatrixCase{p, path, variant, reasons})
	}
	mac, win := xpromo.PlatformMac, xpromo.PlatformWin
	for _, path := range []string{".zip", ".dmg", ".pkg", ".dmg.zip", ".pkg.zip"} {
		add(mac, path, "")
		add(mac, path, "unsigned", "gate_unsigned_binary")
		add(mac, path, "wrongsigner", "gate_untrusted_signer")
		add(mac, path, "revoked", "gate_signature_revoked")
		add(mac, path, "unnotarized", "gate_not_notarized")
		if strings.HasPrefix(path, ".pkg") {
			add(mac, path, "mismatch", "gate_bundle_mismatch")
		} else {
			// the app's code is signed under the identifier it declares
			add(mac, path, "mismatch", "gate_bundle_mismatch", "gate_signer_mismatch")
		}
		if strings.HasPrefix(path, ".dmg") {
			// the volume cannot be read, so neither can the app's signature
			add(mac, path, "apfs", "gate_package_apfs_unsupported", "gate_binary_unreadable")
			add(mac, path, "bomb", "gate_package_too_large", "gate_binary_unreadable")
		}
	}
	for _, path := range []string{".exe", ".msi", ".msix", ".exe.zip", ".msi.zip", ".msix.zip"} {
		add(win, path, "")
		add(win, path, "unsigned", "gate_unsigned_binary")
		add(win, path, "wrongsigner", "gate_untrusted_signer")
		add(win, path, "revoked", "gate_signature_revoked")
		add(win, path, "mismatch", "gate_bundle_mismatch")
	}
	return cases
}

// The README's flow in test mode for every package the sandbox serves:
// each app is registered over HTTP with a reserved download host, the
// server's job loop runs the real gate on the sandbox's package (the
// zips unwrapped, the readers, the verifiers with the sandbox root, its
// ticket service and revocation responder, the scanner, RDAP, the inbox
// that follows the challenge link), and the app ends approved when its
// package is good, rejected with exactly the variant's gate reasons when
// not. One store (SQLite): the store's part is TestGateThroughTheAPI's.
func TestGateMatrixInTestMode(t *testing.T) {
	ctx := context.Background()
	srv, err := assembly.Build(assembly.Config{JobInterval: 5 * time.Millisecond, JobConcurrency: 8, ReadLimit: 100_000, WriteLimit: 100_000}, storagetest.SQLite(t))
	require.NoError(t, err)
	ts := httptest.NewServer(srv.HTTP)
	t.Cleanup(ts.Close)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); srv.RunJobs(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	chk := openapitest.New(t)
	c := xpromo.NewClient(ts.URL, xpromo.WithHTTPClient(&http.Client{Transport: chk.Transport(http.DefaultTransport)}), xpromo.WithMaxRetryAfter(0))
	type registered struct {
		gateMatrixCase
		id string
		c  *xpromo.Client
	}
	var apps []registered
	for i, tc := range gateMatrix() {
		host := "example.com"
		if tc.variant != "" {
			host = tc.variant + ".example.com"
		}
		reg, err := c.RegisterApp(ctx, &xpromo.RegisterAppRequest{Name: fmt.Sprintf("Matrix %d", i), Platform: tc.platform,
			BundleID: fmt.Sprintf("com.example.matrix%d", i), Domain: "example.com",
			DownloadURL: fmt.Sprintf("https://%s/Matrix%d-1.0%s", host, i, tc.path), ContactEmail: "team@example.com"})
		require.NoError(t, err)
		apps = append(apps, registered{tc, reg.AppID, c.With(xpromo.WithAPIKey(reg.APIKey))})
	}

	// The gate decides each: approved (its contact answered) or rejected.
	scores := make([]*xpromo.Score, len(apps))
	require.Eventually(t, func() bool {
		for i, a := range apps {
			if s := scores[i]; s != nil && s.Status != xpromo.AppStatusPending {
				continue
			}
			sc, err := a.c.GetScore(ctx, a.id)
			require.NoError(t, err)
			scores[i] = sc
			if sc.Status == xpromo.AppStatusPending {
				return false
			}
		}
		return true
	}, 120*time.Second, 100*time.Millisecond, "the gate decides every app")

	for i, a := range apps {
		name := fmt.Sprintf("%s %s%s", a.platform, a.variant, a.path)
		var gateReasons []string
		for _, r := range scores[i].Reasons {
			if strings.HasPrefix(r, "gate_") {
				gateReasons = append(gateReasons, r)
			}
		}
		slices.Sort(gateReasons)
		want := slices.Sorted(slices.Values(a.reasons))
		if len(a.reasons) == 0 {
			assert.Equal(t, xpromo.AppStatusApproved, scores[i].Status, "%s: %v", name, scores[i].Reasons)
			assert.Equal(t, xpromo.Gate{Signed: true, MalwareClean: true, DomainAgeOK: true, BundleMatch: true, ContactVerified: true}, scores[i].Gate, name)
			continue
		}
		assert.Equal(t, xpromo.AppStatusRejected, scores[i].Status, name)
		assert.Equal(t, want, gateReasons, name)
	}
}
