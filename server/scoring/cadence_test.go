package scoring_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/scoring"
	"github.com/xpromo/xpromo/server/storage"
)

// winSparkleFeed serves, at /appcast.xml, a WinSparkle appcast: a release
// a month for the last six months whose enclosures name Windows
// (sparkle:os), 6 releases over 2 quarters → 80 for a Windows app, nothing
// for a Mac one; at /bad.xml an Atom feed (cadence_feed_invalid); at
// /slow.xml nothing until the client gives up (cadence_feed_unavailable).
func winSparkleFeed(t *testing.T, now func() time.Time) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bad.xml":
			w.Header().Set("Content-Type", "application/atom+xml")
			fmt.Fprint(w, `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"></feed>`)
			return
		case "/slow.xml":
			hang(r)
			return
		case "/appcast.xml":
		default:
			http.NotFound(w, r)
			return
		}
		var items strings.Builder
		for i := range 6 {
			fmt.Fprintf(&items, `<item><title>2.%d</title><pubDate>%s</pubDate><enclosure url="https://example.com/Setup-2.%d.exe" sparkle:version="2.%d" sparkle:os="windows-x64" length="1" type="application/octet-stream"/></item>`,
				i, now().Add(-time.Duration(i)*30*24*time.Hour-time.Hour).Format(time.RFC1123Z), i, i)
		}
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle"><channel><title>x</title>%s</channel></rss>`, items.String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The cadence signal's appcast: for a Mac app the bundle's SUFeedURL, else
// the registration's appcast_url; for a Windows app the appcast_url, a
// WinSparkle feed read by the same parser; neither is cadence_no_feed.
func TestCadenceSource(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		win := winSparkleFeed(t, w.clock.Now)
		bundleFeed := w.cp.feed.URL + "/appcast.xml" // the counterparts' Sparkle feed: 80 for either platform
		cases := []struct {
			name         string
			platform     string
			appcastURL   string
			bundleFeed   string // the SUFeedURL the gate read ("" none)
			cadence      int
			reason       string // the cadence reason, "" when read
			feed, source string
			soon         bool
		}{
			{"mac: the bundle's SUFeedURL wins", "mac", win.URL + "/bad.xml", bundleFeed, 80, "", bundleFeed, scoring.FeedFromBundle, false},
			{"mac: no SUFeedURL, the appcast_url", "mac", bundleFeed, "", 80, "", bundleFeed, scoring.FeedFromRegistration, false},
			{"mac: a WinSparkle feed has no Mac release", "mac", win.URL + "/appcast.xml", "", 0, "", win.URL + "/appcast.xml", scoring.FeedFromRegistration, false},
			{"mac: neither", "mac", "", "", 0, "cadence_no_feed", "", "", false},
			{"win: the appcast_url", "win", win.URL + "/appcast.xml", "", 80, "", win.URL + "/appcast.xml", scoring.FeedFromRegistration, false},
			{"win: not an appcast", "win", win.URL + "/bad.xml", "", 0, "cadence_feed_invalid", win.URL + "/bad.xml", scoring.FeedFromRegistration, false},
			{"win: a timeout", "win", win.URL + "/slow.xml", "", 0, "cadence_feed_unavailable", win.URL + "/slow.xml", scoring.FeedFromRegistration, true},
			{"win: none", "win", "", "", 0, "cadence_no_feed", "", "", false},
		}
		for i, c := range cases {
			p := apps.RegisterParams{Name: "Clipboard Pro", Platform: c.platform, BundleID: fmt.Sprintf("com.clipboardpro.app%d", i),
				Domain: "clipboardpro.com", DownloadURL: "https://clipboardpro.com/ClipboardPro.zip", ContactEmail: "team@clipboardpro.com",
				AppcastURL: c.appcastURL}
			app, _, _, err := w.apps.Register(ctx, p)
			require.NoError(t, err, c.name)
			w.recordGateWith(app.ID, gate.Evidence{Package: &gate.PackageEvidence{Format: "zip", BundleIDs: []string{p.BundleID}, FeedURL: c.bundleFeed}})
			w.runDue()

			sc := w.score(app.ID)
			assert.Equal(t, c.cadence, sc.Reputation.Cadence, c.name)
			cadenceReasons := []string{}
			for _, r := range sc.Reasons {
				if strings.HasPrefix(r, "cadence_") {
					cadenceReasons = append(cadenceReasons, r)
				}
			}
			if c.reason == "" {
				assert.Empty(t, cadenceReasons, c.name)
			} else {
				assert.Equal(t, []string{c.reason}, cadenceReasons, c.name)
			}
			ev := lastScoringResult(t, w, app.ID).Evidence.Cadence
			assert.Equal(t, c.feed, ev.FeedURL, c.name)
			assert.Equal(t, c.source, ev.FeedSource, c.name)
			if c.cadence == 80 {
				assert.Equal(t, 6, ev.Releases, c.name)
			}
			// Only a transient reason brings the next run forward; a Windows
			// app's reviews are never read, so they never do.
			next := w.clock.Now().Add(scoring.DefaultPeriod)
			if c.soon {
				next = w.clock.Now().Add(scoring.DefaultRetrySoon)
			}
			assert.Equal(t, next, w.nextScoring(app.ID), c.name)
		}
	})
}

// recordGateWith records a gate result with this evidence, as the gate
// would.
func (w *world) recordGateWith(appID string, ev gate.Evidence) {
	w.t.Helper()
	res := gate.Result{GateResult: apps.GateResult{Gate: xpromo.Gate{Signed: true, MalwareClean: true, DomainAgeOK: true, ContactVerified: true, BundleMatch: true}, Reasons: []string{}},
		Evidence: ev}
	raw, err := json.Marshal(res)
	require.NoError(w.t, err)
	now := w.clock.Now()
	j := apps.NewJob(appID, xpromo.JobGate, now)
	j.Status, j.Result, j.FinishedAt = xpromo.JobSucceeded, raw, &now
	require.NoError(w.t, w.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.InsertJob(ctx, j) }))
}

func lastScoringResult(t *testing.T, w *world, appID string) scoring.Result {
	t.Helper()
	js := w.jobs(appID)
	for i := len(js) - 1; i >= 0; i-- {
		if js[i].Kind == xpromo.JobScoring && js[i].Result != nil {
			var r scoring.Result
			require.NoError(t, json.Unmarshal(js[i].Result, &r))
			return r
		}
	}
	t.Fatal("no scoring result")
	return scoring.Result{}
}

// A team that moves its feed changes appcast_url (PATCH /v1/apps/{app_id},
// apps.Service.UpdateAppcastURL): the scoring run the change brings forward
// reads the new feed, and the cadence follows it; removing the URL leaves
// cadence_no_feed.
func TestCadenceFollowsAChangedAppcastURL(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		win := winSparkleFeed(t, w.clock.Now)
		app, _, _, err := w.apps.Register(ctx, apps.RegisterParams{Name: "Clipboard Pro", Platform: "win", BundleID: "com.clipboardpro.app",
			Domain: "clipboardpro.com", DownloadURL: "https://clipboardpro.com/ClipboardPro.exe", ContactEmail: "team@clipboardpro.com",
			AppcastURL: win.URL + "/bad.xml"})
		require.NoError(t, err)
		w.recordGateWith(app.ID, gate.Evidence{})
		w.runDue()
		sc := w.score(app.ID)
		assert.Equal(t, 0, sc.Reputation.Cadence)
		assert.Contains(t, sc.Reasons, "cadence_feed_invalid")
		assert.Equal(t, w.clock.Now().Add(scoring.DefaultPeriod), w.nextScoring(app.ID), "the next run a week on")

		w.clock.Advance(time.Hour)
		feed := win.URL + "/appcast.xml"
		changed, job, err := w.apps.UpdateAppcastURL(ctx, app.ID, &feed)
		require.NoError(t, err)
		assert.Equal(t, feed, changed.AppcastURL)
		require.NotNil(t, job)
		assert.Equal(t, w.clock.Now(), job.RunAfter)
		assert.Equal(t, w.clock.Now(), w.nextScoring(app.ID), "the weekly run brought forward, not a second one")
		w.runDue()

		sc = w.score(app.ID)
		assert.Equal(t, 80, sc.Reputation.Cadence, "6 monthly Windows releases, read from the new feed")
		assert.NotContains(t, sc.Reasons, "cadence_feed_invalid")
		res := lastScoringResult(t, w, app.ID)
		assert.Equal(t, feed, res.Evidence.Cadence.FeedURL)
		assert.Equal(t, scoring.FeedFromRegistration, res.Evidence.Cadence.FeedSource)
		for _, j := range w.jobs(app.ID) {
			if j.ID == job.ID {
				assert.Equal(t, xpromo.JobSucceeded, j.Status, "the job the change answered is the run that read it")
			}
		}

		// Removed: no feed to read.
		w.clock.Advance(time.Hour)
		_, job, err = w.apps.UpdateAppcastURL(ctx, app.ID, nil)
		require.NoError(t, err)
		require.NotNil(t, job)
		w.runDue()
		sc = w.score(app.ID)
		assert.Equal(t, 0, sc.Reputation.Cadence)
		assert.Contains(t, sc.Reasons, "cadence_no_feed")
	})
}
