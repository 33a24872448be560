package appcast_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/reputation"
	"github.com/xpromo/xpromo/server/reputation/appcast"
)

var now = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// item is a Sparkle 2 appcast item, as generate_appcast writes it.
func item(version, short, pubDate string) string {
	return fmt.Sprintf(`    <item>
      <title>Version %[2]s</title>
      <pubDate>%[3]s</pubDate>
      <sparkle:version>%[1]s</sparkle:version>
      <sparkle:shortVersionString>%[2]s</sparkle:shortVersionString>
      <sparkle:minimumSystemVersion>12.0</sparkle:minimumSystemVersion>
      <sparkle:releaseNotesLink>https://clipboardpro.example/notes/%[2]s.html</sparkle:releaseNotesLink>
      <enclosure url="https://dl.clipboardpro.example/ClipboardPro-%[2]s.zip" length="10485760" type="application/octet-stream" sparkle:edSignature="7cLALFUHSwvEJWSkV8aMreoBe4fhRa4FncC5NoThKxwThL6FDR7hTiPJh1fo2uagnPogisnQsgFgq6mGkt2RBw=="/>
    </item>
`, version, short, pubDate)
}

func feed(items ...string) string {
	return `<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel>
    <title>Clipboard Pro</title>
    <link>https://clipboardpro.example/appcast.xml</link>
    <description>Most recent changes with links to updates.</description>
    <language>en</language>
` + strings.Join(items, "") + `  </channel>
</rss>
`
}

// A monthly release train over the last year, and an old release.
var monthly = func() string {
	var items []string
	for m := 0; m < 12; m++ {
		at := now.AddDate(0, -m, -3)
		items = append(items, item(fmt.Sprint(300-m), fmt.Sprintf("3.%d", 11-m), at.Format(time.RFC1123Z)))
	}
	items = append(items, item("100", "1.0", "Sun, 27 Jul 2014 12:00:00 +0000"))
	return feed(items...)
}()

// The Sparkle 1.x style: the versions are attributes of the enclosure.
const sparkle1 = `<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel>
    <title>Your Great App's Changelog</title>
    <link>http://you.com/app/appcast.xml</link>
    <description>Most recent changes with links to updates.</description>
    <language>en</language>
    <item>
      <title>Version 2.0 (2 bugs fixed; 3 new features)</title>
      <sparkle:releaseNotesLink>http://you.com/app/2.0.html</sparkle:releaseNotesLink>
      <pubDate>Wed, 09 Sep 2026 19:20:11 +0000</pubDate>
      <enclosure url="http://you.com/app/Your%20Great%20App%202.0.zip" sparkle:version="2.0" length="1623481" type="application/octet-stream" sparkle:dsaSignature="BAFJW4B6B1K1JyW30nbkBwainOzrN6EQuAh" />
    </item>
    <item>
      <title>Version 1.5 (8 bugs fixed; 2 new features)</title>
      <pubDate>Wed, 1 Jul 26 19:20:11 PDT</pubDate>
      <enclosure url="http://you.com/app/Your%20Great%20App%201.5.zip" sparkle:version="1.5" sparkle:shortVersionString="1.5 final" length="1472893" type="application/octet-stream" />
    </item>
  </channel>
</rss>
`

// A WinSparkle appcast for an app shipped on both systems.
const winSparkle = `<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle">
  <channel>
    <title>WinSparkle Test Appcast</title>
    <description>Most recent updates to WinSparkle Test</description>
    <language>en</language>
    <item>
      <title>Version 1.5.5</title>
      <sparkle:version>1.5.5347</sparkle:version>
      <sparkle:releaseNotesLink>https://your_domain/your_path/release_notes.html</sparkle:releaseNotesLink>
      <pubDate>Fri, 06 Nov 2026 22:49:00 +0100</pubDate>
      <enclosure url="https://your_domain/your_path/setup.exe" sparkle:dsaSignature="MEQCIBBEGD" sparkle:os="windows-x64" length="0" type="application/octet-stream" />
    </item>
    <item>
      <title>Version 1.5.5 (Mac)</title>
      <sparkle:version>1.5.5347</sparkle:version>
      <pubDate>Fri, 06 Nov 2026 22:49:00 +0100</pubDate>
      <enclosure url="https://your_domain/your_path/app.zip" sparkle:os="macos" length="0" type="application/octet-stream" />
    </item>
    <item>
      <title>Version 1.5.4</title>
      <sparkle:version>1.5.4000</sparkle:version>
      <pubDate>Sat, 01 Aug 2026 10:00:00 GMT</pubDate>
      <enclosure url="https://your_domain/your_path/setup-1.5.4.exe" sparkle:os="windows" length="0" type="application/octet-stream" />
    </item>
  </channel>
</rss>
`

func server(t *testing.T, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func serve(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml; charset=utf-8")
		fmt.Fprint(w, body)
	}
}

func client(timeout time.Duration) *appcast.Client {
	return appcast.New(appcast.Config{
		HTTP: outbound.New(outbound.Options{TestOnlyAllowLoopback: true, Timeout: timeout, MaxResponseBytes: appcast.MaxFeedBytes}),
		Now:  func() time.Time { return now },
	})
}

func TestRegularReleasesScoreHigh(t *testing.T) {
	srv := server(t, serve(monthly))
	res := client(5*time.Second).Check(context.Background(), srv.URL+"/appcast.xml", appcast.Mac)
	require.True(t, res.OK(), "%v", res.Err)
	assert.Equal(t, 12, res.Cadence.Releases)
	assert.Equal(t, 4, res.Cadence.Quarters)
	assert.Equal(t, 100, res.Score)
	assert.Equal(t, now.AddDate(0, 0, -3).Truncate(time.Second), res.Cadence.LastRelease)
	assert.Len(t, res.Feed.Releases, 13)
	assert.Equal(t, "Clipboard Pro", res.Feed.Title)
	r := res.Feed.Releases[0]
	assert.Equal(t, "300", r.Version)
	assert.Equal(t, "3.11", r.ShortVersion)
	assert.Contains(t, r.EnclosureURL, "ClipboardPro-3.11.zip")
}

func TestNoReleaseInAYearScoresZero(t *testing.T) {
	srv := server(t, serve(feed(item("100", "1.0", "Sun, 27 Jul 2014 12:00:00 +0000"), item("101", "1.1", "Mon, 20 Nov 2025 09:00:00 +0000"))))
	res := client(5*time.Second).Check(context.Background(), srv.URL, appcast.Mac)
	require.True(t, res.OK(), "%v", res.Err)
	assert.Equal(t, 0, res.Score)
	assert.Equal(t, 0, res.Cadence.Releases)
	assert.Equal(t, time.Date(2025, 11, 20, 9, 0, 0, 0, time.UTC), res.Cadence.LastRelease)

	// An empty channel is a feed with no releases: read, and 0.
	srv = server(t, serve(feed()))
	res = client(5*time.Second).Check(context.Background(), srv.URL, appcast.Mac)
	require.True(t, res.OK(), "%v", res.Err)
	assert.Equal(t, 0, res.Score)
}

func TestSparkle1FeedsAndDateVariants(t *testing.T) {
	srv := server(t, serve(sparkle1))
	res := client(5*time.Second).Check(context.Background(), srv.URL, appcast.Mac)
	require.True(t, res.OK(), "%v", res.Err)
	require.Len(t, res.Feed.Releases, 2)
	assert.Equal(t, "2.0", res.Feed.Releases[0].Version)
	assert.Equal(t, "1.5", res.Feed.Releases[1].Version)
	assert.Equal(t, "1.5 final", res.Feed.Releases[1].ShortVersion)
	assert.Equal(t, time.Date(2026, 7, 2, 2, 20, 11, 0, time.UTC), res.Feed.Releases[1].PublishedAt) // PDT is −7
	// Two releases, in two quarters: 10·2 + 10·2.
	assert.Equal(t, 40, res.Score)
}

func TestWinSparkleFeedsCountThePlatformsOwnReleases(t *testing.T) {
	srv := server(t, serve(winSparkle))
	win := client(5*time.Second).Check(context.Background(), srv.URL, appcast.Windows)
	require.True(t, win.OK(), "%v", win.Err)
	assert.Equal(t, 2, win.Cadence.Releases)
	assert.Equal(t, 40, win.Score) // two releases (6 Nov, 1 Aug), in two quarters

	mac := client(5*time.Second).Check(context.Background(), srv.URL, appcast.Mac)
	assert.Equal(t, 1, mac.Cadence.Releases)
	assert.Equal(t, 20, mac.Score)
}

func TestFutureDatesAndRepeatedVersionsDoNotCount(t *testing.T) {
	srv := server(t, serve(feed(
		item("200", "2.0", "Tue, 10 Nov 2026 09:00:00 +0000"),
		item("200", "2.0", "Wed, 11 Nov 2026 09:00:00 +0000"), // the same release again (a delta, another channel)
		item("201", "2.1", "Fri, 01 Jan 2100 00:00:00 +0000"),
		item("202", "2.2", "not a date"),
	)))
	res := client(5*time.Second).Check(context.Background(), srv.URL, appcast.Mac)
	require.True(t, res.OK(), "%v", res.Err)
	assert.Equal(t, 1, res.Cadence.Releases)
	assert.Equal(t, 1, res.Cadence.Future)
	assert.Equal(t, 1, res.Feed.Undated)
	assert.Equal(t, time.Date(2026, 11, 10, 9, 0, 0, 0, time.UTC), res.Cadence.LastRelease)
	assert.Equal(t, 20, res.Score)
}

func TestInvalidFeeds(t *testing.T) {
	billionLaughs := `<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<rss version="2.0"><channel><title>&lol2;</title></channel></rss>`
	external := `<?xml version="1.0"?>
<!DOCTYPE rss [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<rss version="2.0"><channel><title>&xxe;</title></channel></rss>`
	for name, body := range map[string]string{
		"billion laughs":   billionLaughs,
		"external entity":  external,
		"undefined entity": `<rss version="2.0"><channel><title>&nbsp;</title></channel></rss>`,
		"atom":             `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>x</title></feed>`,
		"html":             `<!doctype html><html><body>Not found</body></html>`,
		"no channel":       `<rss version="2.0"></rss>`,
		"truncated":        monthly[:len(monthly)/2],
		"latin-1":          `<?xml version="1.0" encoding="ISO-8859-1"?><rss version="2.0"><channel><title>x</title></channel></rss>`,
		"no readable date": feed(item("1", "1.0", "yesterday"), item("2", "2.0", "")),
		"too many items":   feed(strings.Repeat("<item><pubDate>Tue, 10 Nov 2026 09:00:00 +0000</pubDate></item>", appcast.MaxItems+1)),
		"too large":        feed(item("1", "1.0", "Tue, 10 Nov 2026 09:00:00 +0000") + "<!--" + strings.Repeat("x", appcast.MaxFeedBytes) + "-->"),
	} {
		t.Run(name, func(t *testing.T) {
			srv := server(t, serve(body))
			res := client(5*time.Second).Check(context.Background(), srv.URL, appcast.Mac)
			assert.Equal(t, reputation.ReasonCadenceFeedInvalid, res.Reason, "%v", res.Err)
			assert.ErrorIs(t, res.Err, appcast.ErrInvalid)
			assert.Equal(t, 0, res.Score)
		})
	}
}

func TestUnavailableFeeds(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"404": func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) },
		"500": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
		"503": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) },
	} {
		t.Run(name, func(t *testing.T) {
			srv := server(t, h)
			res := client(5*time.Second).Check(context.Background(), srv.URL, appcast.Mac)
			assert.Equal(t, reputation.ReasonCadenceFeedUnavailable, res.Reason)
			assert.True(t, reputation.Retryable(res.Reason))
		})
	}

	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := server(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		defer close(release)
		res := client(100*time.Millisecond).Check(context.Background(), srv.URL, appcast.Mac)
		assert.Equal(t, reputation.ReasonCadenceFeedUnavailable, res.Reason)
	})

	t.Run("production client refuses loopback", func(t *testing.T) {
		srv := server(t, serve(monthly))
		res := appcast.New(appcast.Config{Now: func() time.Time { return now }}).Check(context.Background(), srv.URL, appcast.Mac)
		assert.Equal(t, reputation.ReasonCadenceFeedUnavailable, res.Reason)
		assert.ErrorIs(t, res.Err, outbound.ErrForbiddenAddress)
	})

	t.Run("not a URL", func(t *testing.T) {
		res := client(time.Second).Check(context.Background(), "file:///etc/passwd", appcast.Mac)
		assert.Equal(t, reputation.ReasonCadenceFeedUnavailable, res.Reason)
	})
}

func TestNoFeed(t *testing.T) {
	res := client(time.Second).Check(context.Background(), " ", appcast.Mac)
	assert.Equal(t, reputation.ReasonCadenceNoFeed, res.Reason)
	assert.False(t, reputation.Retryable(res.Reason))
}

func TestParseDate(t *testing.T) {
	want := time.Date(2026, 11, 6, 21, 49, 0, 0, time.UTC)
	for _, s := range []string{
		"Fri, 06 Nov 2026 22:49:00 +0100",
		"Fri, 6 Nov 2026 22:49:00 +0100",
		"06 Nov 2026 22:49:00 +0100",
		"Fri, 06 Nov 2026 22:49 +0100",
		"Fri, 06 Nov 26 21:49:00 GMT",
		"Fri, 06 November 2026 21:49:00 UT",
		"fri, 06 nov 2026 13:49:00 PST",
		"  Fri,  06 Nov 2026  21:49:00  Z ",
		"2026-11-06T22:49:00+01:00",
	} {
		got, err := appcast.ParseDate(s)
		if assert.NoError(t, err, s) {
			assert.Equal(t, want, got, s)
		}
	}
	for _, s := range []string{
		"", "Fri, 31 Feb 2026 10:00:00 +0000", "Fri, 06 Nov 2026 25:00:00 +0000",
		"Fri, 06 Nov 2026 22:49:00 +2500", "Fri, 06 Nov 2026 22:49:00 CEST", "Fri, 06 Nox 2026 22:49:00 GMT",
		"Fri, 06 Nov 2026 22:49:00", "06/11/2026", "Fri, 06 Novembre 2026 22:49:00 GMT", "Fri, 06 Nov 202 22:49:00 GMT",
	} {
		_, err := appcast.ParseDate(s)
		assert.Error(t, err, s)
	}
	// Two-digit years: 70–99 are the 1900s.
	got, err := appcast.ParseDate("Thu, 01 Jan 70 00:00:00 GMT")
	require.NoError(t, err)
	assert.Equal(t, 1970, got.Year())
}

func TestMeasureCurve(t *testing.T) {
	rel := func(daysAgo int) appcast.Release {
		return appcast.Release{Version: fmt.Sprint(daysAgo), PublishedAt: now.AddDate(0, 0, -daysAgo)}
	}
	for _, c := range []struct {
		days []int
		want int
	}{
		{nil, 0},
		{[]int{400}, 0},
		{[]int{364}, 20},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8}, 70},           // many releases in one burst: 60 + 10
		{[]int{10, 100, 200, 300}, 80},                // quarterly: 40 + 40
		{[]int{10, 50, 100, 150, 200, 250, 300}, 100}, // regular
	} {
		var rs []appcast.Release
		for _, d := range c.days {
			rs = append(rs, rel(d))
		}
		assert.Equal(t, c.want, appcast.Measure(rs, appcast.Mac, now).Score(), "%v", c.days)
	}
}
