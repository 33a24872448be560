package sandbox_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	gatesandbox "github.com/xpromo/xpromo/server/gate/sandbox"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/reputation"
	"github.com/xpromo/xpromo/server/reputation/aivis"
	"github.com/xpromo/xpromo/server/reputation/sandbox"
)

var ctx = context.Background()

func newSandbox() (*sandbox.Sandbox, *http.Client) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	// A production client: a request the sandbox does not answer would be
	// refused (loopback) or go out for real.
	return sandbox.New(func() time.Time { return now }), outbound.New(outbound.Options{RequireHTTPS: true})
}

// Every magic value, read by the real clients.
func TestMagicValues(t *testing.T) {
	sb, base := newSandbox()
	ai, reviews, cadence := sb.AI(base), sb.Reviews(base), sb.Cadence(base)
	for _, c := range []struct {
		name, bundleID       string
		ai, reviews, cadence reputation.Signal
	}{
		{"Clipboard Pro", "com.example.clipboardpro", reputation.Read(64), reputation.Read(86), reputation.Read(80)},
		{"Unknown Tool", "com.example.unknowntool", reputation.Read(0), reputation.Unread(reputation.ReasonReviewsNotListed), reputation.Read(80)},
		{"Disliked", "com.example.disliked", reputation.Read(14), reputation.Read(86), reputation.Read(80)},
		{"Garbled", "com.example.garbled", reputation.Unread(reputation.ReasonAIUnparseable), reputation.Read(86), reputation.Read(80)},
		{"Unrated", "com.example.unrated", reputation.Read(64), reputation.Unread(reputation.ReasonReviewsNone), reputation.Read(80)},
		{"Stale", "com.example.stale", reputation.Read(64), reputation.Read(86), reputation.Read(0)},
		{"Offline", "com.example.offline", reputation.Unread(reputation.ReasonAIUnavailable), reputation.Unread(reputation.ReasonReviewsUnavailable), reputation.Unread(reputation.ReasonCadenceFeedUnavailable)},
	} {
		a := ai.Check(ctx, aivis.App{Name: c.name, Domain: "example.com", BundleID: c.bundleID, Platform: "mac"})
		assert.Equal(t, c.ai, a.Signal, "%s: %v", c.name, a.Err)
		r := reviews.Check(ctx, c.bundleID, "mac")
		assert.Equal(t, c.reviews, r.Signal, "%s: %v", c.name, r.Err)
		f := cadence.Check(ctx, gatesandbox.FeedURL(c.bundleID), "mac")
		assert.Equal(t, c.cadence, f.Signal, "%s: %v", c.name, f.Err)
	}
	// A Windows app's appcast_url on a reserved host: the same feed, its
	// Windows downloads.
	for _, c := range []struct {
		url  string
		want reputation.Signal
	}{
		{"https://updates.example.net/win/clipboardpro.xml", reputation.Read(80)},
		{"https://updates.example.net/win/stale.xml", reputation.Read(0)},
		{"https://updates.example.net/win/offline.xml", reputation.Unread(reputation.ReasonCadenceFeedUnavailable)},
	} {
		f := cadence.Check(ctx, c.url, "win")
		assert.Equal(t, c.want, f.Signal, "%s: %v", c.url, f.Err)
		if c.want.Score == 80 {
			assert.Equal(t, 4, f.Cadence.Releases, "each release once per platform")
		}
	}
	assert.Equal(t, 4, cadence.Check(ctx, gatesandbox.FeedURL("com.example.clipboardpro"), "mac").Cadence.Releases)
	// A Windows app: no store ratings (no request is made).
	assert.Equal(t, reputation.Unread(reputation.ReasonReviewsUnavailablePlatform), reviews.Check(ctx, "com.example.win", "win").Signal)
}

// A name that is not reserved is never answered by the sandbox: it goes to
// the wrapped client (here a production client refusing loopback).
func TestNotReservedGoesOut(t *testing.T) {
	sb, base := newSandbox()
	res := sb.Cadence(base).Check(ctx, "https://127.0.0.1/appcast.xml", "mac")
	assert.Equal(t, reputation.Unread(reputation.ReasonCadenceFeedUnavailable), res.Signal)
	assert.ErrorIs(t, res.Err, outbound.ErrForbiddenAddress)
}
