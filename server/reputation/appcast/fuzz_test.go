package appcast

import (
	"strings"
	"testing"
	"time"
)

// A feed is whatever the app's server sends: any bytes parse or fail with
// ErrInvalid, never panic, and what parses measures to a bounded score.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`<rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle"><channel><item><pubDate>Tue, 10 Nov 2026 09:00:00 +0000</pubDate><sparkle:version>2</sparkle:version><enclosure url="https://x/a.zip" sparkle:os="windows"/></item></channel></rss>`))
	f.Add([]byte(`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><rss><channel/></rss>`))
	f.Add([]byte(`<rss><channel><item><pubDate>x</pubDate></item></channel></rss>`))
	f.Add([]byte(`<feed/>`))
	f.Add([]byte(`<rss><channel>` + strings.Repeat("<a>", 40) + `</channel></rss>`))        // beyond MaxDepth
	f.Add([]byte(`<rss><channel><a ` + strings.Repeat(`b="" `, 70) + `/></channel></rss>`)) // beyond MaxAttributes
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		feed, err := Parse(data)
		if err != nil {
			return
		}
		for _, p := range []string{Mac, Windows} {
			c := Measure(feed.Releases, p, now)
			if s := c.Score(); s < 0 || s > 100 || c.Quarters > 4 || c.Releases > len(feed.Releases) {
				t.Fatalf("measure %+v score %d", c, s)
			}
		}
	})
}

func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"Fri, 06 Nov 2026 22:49:00 +0100", "6 nov 26 22:49 PST", "2026-11-06T22:49:00Z", "Fri, 31 Feb 2026 10:00:00 -0000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseDate(s)
		if err == nil && (got.Location() != time.UTC || strings.TrimSpace(s) == "") {
			t.Fatalf("ParseDate(%q) = %v", s, got)
		}
	})
}
