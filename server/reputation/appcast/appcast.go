// Package appcast is the release-cadence signal of an app's reputation: it
// reads the app's Sparkle appcast and scores how regularly the app shipped
// releases over the last twelve months.
//
// What it reads: an RSS 2.0 feed with the Sparkle namespace
// (http://www.andymatuschak.org/xml-namespaces/sparkle), the format of
// Sparkle on macOS (the feed is the bundle's SUFeedURL) and of WinSparkle on
// Windows, which reads the same appcast and tells Windows downloads apart
// with the `sparkle:os` attribute of the enclosure ("windows",
// "windows-x64", "windows-arm64"; "macos" for Mac ones). Each <item> is a
// release: its <pubDate> (RFC 822/1123 and their variants), its version
// (<sparkle:version> and <sparkle:shortVersionString>, or the Sparkle 1.x
// attributes of the same names on the enclosure), its channel and its
// enclosure. The feed is fetched through server/outbound.
//
// Score (Cadence): releases published in the last 365 days, each counted
// once by version, for the app's platform; dates in the future are ignored.
// score = 10 × min(releases, 6) + 10 × quarters, where quarters (0–4) is the
// number of the four 91¼-day periods of those 365 days with at least one
// release. Six or more releases spread over all four quarters score 100; a
// single release 20; none in a year 0.
//
// Limits: a feed says what its publisher wrote; the dates are not checked
// against the downloads. Feeds are refused beyond MaxFeedBytes or MaxItems,
// or the bounds of their structure (MaxDepth, MaxElements, MaxAttributes,
// MaxTagBytes, MaxTokenBytes), with a DOCTYPE (so no DTD, no entity expansion) or in an
// encoding other than UTF-8.
package appcast

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/reputation"
)

// Bounds of a feed.
const (
	MaxFeedBytes = 4 << 20 // release notes are often inline; 4 MiB is plenty
	MaxItems     = 5000
	// The structure's bounds (Parse): an appcast is rss/channel/item/field,
	// release notes inline as one text or CDATA section each.
	MaxDepth      = 32
	MaxElements   = 50_000 // ten an item
	MaxAttributes = 64
	MaxTagBytes   = 16 << 10
	MaxTokenBytes = 256 << 10
)

// Scoring windows.
const (
	Year    = 365 * 24 * time.Hour
	Quarter = Year / 4
)

var (
	// ErrNoFeed: no feed URL was given.
	ErrNoFeed = errors.New("appcast: the app declares no appcast")
	// ErrUnavailable: the feed could not be fetched.
	ErrUnavailable = errors.New("appcast: feed unavailable")
	// ErrInvalid: the bytes are not a readable Sparkle appcast.
	ErrInvalid = errors.New("appcast: not a readable Sparkle appcast")
)

// Config configures a Client.
type Config struct {
	// HTTP fetches the feeds; it must come from outbound.New. Nil means
	// outbound.New with a 30-second limit and MaxFeedBytes.
	HTTP *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Client reads appcasts. It is safe for concurrent use.
type Client struct{ cfg Config }

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.HTTP == nil {
		cfg.HTTP = outbound.New(outbound.Options{Timeout: 30 * time.Second, MaxResponseBytes: MaxFeedBytes})
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{cfg: cfg}
}

// Platform of the app: "mac" or "win", as registered.
const (
	Mac     = "mac"
	Windows = "win"
)

// Cadence is the score's evidence.
type Cadence struct {
	// Releases is the number of distinct releases for the platform in the
	// 365 days before the check.
	Releases int
	// Quarters is how many of the four quarters of those days had one.
	Quarters int
	// LastRelease is the newest release not in the future (zero if none).
	LastRelease time.Time
	// Future counts releases dated after the check, which were ignored.
	Future int
}

// Score is the cadence score: 10 × min(Releases, 6) + 10 × Quarters.
func (c Cadence) Score() int { return 10*min(c.Releases, 6) + 10*c.Quarters }

// Result is the signal with its evidence.
type Result struct {
	reputation.Signal
	URL     string
	Feed    Feed // the parsed feed, when it parsed
	Cadence Cadence
	Err     error
}

// Check fetches the appcast at feedURL and scores the releases for
// platform.
func (c *Client) Check(ctx context.Context, feedURL, platform string) Result {
	res := Result{URL: feedURL}
	fail := func(err error) Result {
		res.Err = err
		res.Signal = reputation.Unread(ReasonFor(err))
		return res
	}
	if strings.TrimSpace(feedURL) == "" {
		return fail(ErrNoFeed)
	}
	body, err := c.fetch(ctx, feedURL)
	if err != nil {
		return fail(err)
	}
	feed, err := Parse(body)
	if err != nil {
		return fail(err)
	}
	res.Feed = feed
	res.Cadence = Measure(feed.Releases, platform, c.cfg.Now())
	res.Signal = reputation.Read(res.Cadence.Score())
	return res
}

// ReasonFor maps an error of Check to its reason code.
func ReasonFor(err error) string {
	switch {
	case errors.Is(err, ErrNoFeed):
		return reputation.ReasonCadenceNoFeed
	case errors.Is(err, ErrInvalid):
		return reputation.ReasonCadenceFeedInvalid
	default:
		return reputation.ReasonCadenceFeedUnavailable
	}
}

func (c *Client) fetch(ctx context.Context, feedURL string) ([]byte, error) {
	body, err := outbound.Get(ctx, c.cfg.HTTP, feedURL, "application/rss+xml, application/xml;q=0.9, text/xml;q=0.8, */*;q=0.1", MaxFeedBytes)
	switch {
	case errors.Is(err, outbound.ErrResponseTooLarge):
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, MaxFeedBytes)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return body, nil
}

// Measure counts the releases for platform around now. A release is for
// platform when its enclosure's sparkle:os names it or names no system.
// Releases are counted once per version (the earliest date wins); a
// release without any version is counted by its enclosure URL, or else by
// its date.
func Measure(releases []Release, platform string, now time.Time) Cadence {
	first := map[string]time.Time{}
	var c Cadence
	for _, r := range releases {
		if !r.ForPlatform(platform) {
			continue
		}
		if r.PublishedAt.After(now) {
			c.Future++
			continue
		}
		key := r.key()
		if t, ok := first[key]; !ok || r.PublishedAt.Before(t) {
			first[key] = r.PublishedAt
		}
	}
	var inQuarter [4]bool
	for _, t := range first {
		if t.After(c.LastRelease) {
			c.LastRelease = t
		}
		age := now.Sub(t)
		if age >= Year {
			continue
		}
		c.Releases++
		inQuarter[min(int(age/Quarter), 3)] = true
	}
	for _, in := range inQuarter {
		if in {
			c.Quarters++
		}
	}
	return c
}

// ForPlatform reports whether r is a download for platform ("mac" or
// "win"): its enclosure names that system in sparkle:os, or names none.
func (r Release) ForPlatform(platform string) bool {
	os := strings.ToLower(strings.TrimSpace(r.OS))
	switch {
	case os == "":
		return true
	case platform == Windows:
		return strings.HasPrefix(os, "windows")
	case platform == Mac:
		return os == "macos"
	}
	return false
}

func (r Release) key() string {
	switch {
	case r.Version != "":
		return "v:" + r.Version
	case r.ShortVersion != "":
		return "s:" + r.ShortVersion
	case r.EnclosureURL != "":
		return "u:" + r.EnclosureURL
	}
	return "t:" + r.PublishedAt.Format(time.RFC3339)
}
