package assembly_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// A fresh test-mode server, nothing configured, and the README's first
// session: the gate's sandbox approves the app, the gate's result queues
// the scoring job, and the reputation sandbox's counterparts (a model, a
// store lookup, the appcast the sandbox package declares) give real
// numbers, read by the real clients.
func TestScoreInTestMode(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		srv, err := assembly.Build(assembly.Config{JobInterval: 5 * time.Millisecond}, s)
		require.NoError(t, err)
		ts := httptest.NewServer(srv.HTTP)
		t.Cleanup(ts.Close)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); srv.RunJobs(runCtx) }()
		t.Cleanup(func() { stop(); <-done })
		chk := openapitest.New(t)
		c := xpromo.NewClient(ts.URL, xpromo.WithHTTPClient(&http.Client{Transport: chk.Transport(http.DefaultTransport)}))

		reg, err := c.RegisterApp(ctx, &xpromo.RegisterAppRequest{Name: "Clipboard Pro", Platform: xpromo.PlatformMac,
			BundleID: "com.example.clipboardpro", Domain: "example.com", DownloadURL: "https://example.com/ClipboardPro.zip",
			ContactEmail: "team@example.com"})
		require.NoError(t, err)
		c = c.With(xpromo.WithAPIKey(reg.APIKey))
		score := func() *xpromo.Score {
			sc, err := c.GetScore(ctx, reg.AppID)
			require.NoError(t, err)
			return sc
		}
		require.Eventually(t, func() bool {
			sc := score()
			return sc.Status == xpromo.AppStatusApproved && !contains(sc.Reasons, "reputation_pending")
		}, 30*time.Second, 10*time.Millisecond)
		sc := score()
		// ai: familiarity 80, sentiment 60 → 64; cadence: a release a
		// quarter → 80; reviews: 1200 × ★4.5 → 86; coherence: the sandbox
		// signer ("xpromo sandbox") does not name example.com: 5 of 6 pairs
		// agree → 83.
		assert.Equal(t, xpromo.Reputation{Total: 74, AIVisibility: 64, Cadence: 80, Reviews: 86, Coherence: 83}, sc.Reputation)
		assert.Equal(t, []string{}, sc.Reasons)
		assert.Nil(t, sc.Behavior)

		// A magic name: the model does not know it, the store does not
		// list it.
		reg2, err := c.RegisterApp(ctx, &xpromo.RegisterAppRequest{Name: "Unknown Tool", Platform: xpromo.PlatformMac,
			BundleID: "com.example.unknowntool", Domain: "example.com", DownloadURL: "https://example.com/UnknownTool.zip",
			ContactEmail: "team@example.com"})
		require.NoError(t, err)
		c2 := c.With(xpromo.WithAPIKey(reg2.APIKey))
		require.Eventually(t, func() bool {
			sc, err := c2.GetScore(ctx, reg2.AppID)
			return err == nil && !contains(sc.Reasons, "reputation_pending") && !contains(sc.Reasons, "gate_pending")
		}, 30*time.Second, 10*time.Millisecond)
		sc2, err := c2.GetScore(ctx, reg2.AppID)
		require.NoError(t, err)
		assert.Equal(t, 0, sc2.Reputation.AIVisibility)
		assert.Equal(t, 0, sc2.Reputation.Reviews)
		assert.Contains(t, sc2.Reasons, "reviews_not_listed")

		// A Windows app with an appcast_url on a reserved host: its cadence
		// is read from the sandbox's feed (its Windows downloads); reviews
		// cannot be read for Windows.
		reg3, err := c.RegisterApp(ctx, &xpromo.RegisterAppRequest{Name: "Clipboard Pro", Platform: xpromo.PlatformWin,
			BundleID: "com.example.clipboardpro", Domain: "example.com", DownloadURL: "https://example.com/ClipboardPro.exe",
			ContactEmail: "team@example.com", AppcastURL: "https://appcast.example.com/win/clipboardpro.xml"})
		require.NoError(t, err)
		c3 := c.With(xpromo.WithAPIKey(reg3.APIKey))
		require.Eventually(t, func() bool {
			sc, err := c3.GetScore(ctx, reg3.AppID)
			return err == nil && !contains(sc.Reasons, "reputation_pending") && !contains(sc.Reasons, "gate_pending")
		}, 30*time.Second, 10*time.Millisecond)
		sc3, err := c3.GetScore(ctx, reg3.AppID)
		require.NoError(t, err)
		assert.Equal(t, 80, sc3.Reputation.Cadence)
		assert.NotContains(t, sc3.Reasons, "cadence_no_feed")
		assert.Contains(t, sc3.Reasons, "reviews_unavailable_platform")
	})
}
