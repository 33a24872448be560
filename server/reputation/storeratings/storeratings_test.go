package storeratings_test

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
	"github.com/xpromo/xpromo/server/reputation/storeratings"
)

// macApp is one result of the iTunes lookup as Apple answers it for a Mac
// app (entity=macSoftware), trimmed of artwork and screenshots.
func macApp(bundleID, ratingFields string) string {
	return fmt.Sprintf(`{"isVppDeviceBasedLicensingEnabled":true,"features":[],"supportedDevices":[],"advisories":[],
"isGameCenterEnabled":false,"kind":"mac-software","minimumOsVersion":"12.0","trackCensoredName":"Clipboard Pro",
"languageCodesISO2A":["EN","FR"],"fileSizeBytes":"24117248","sellerUrl":"https://clipboardpro.example",
"formattedPrice":"$9.99","contentAdvisoryRating":"4+",%s
"trackViewUrl":"https://apps.apple.com/us/app/clipboard-pro/id1234567890?mt=12&uo=4","trackContentRating":"4+",
"trackId":1234567890,"trackName":"Clipboard Pro","releaseDate":"2021-03-02T08:00:00Z","genreIds":["6007","6000"],
"primaryGenreName":"Productivity","primaryGenreId":6007,"sellerName":"Example Software Ltd",
"currentVersionReleaseDate":"2026-10-14T16:02:11Z","releaseNotes":"Bug fixes.","version":"3.11","wrapperType":"software",
"currency":"USD","description":"A clipboard manager.","artistId":987654321,"artistName":"Example Software Ltd",
"genres":["Productivity","Business"],"price":9.99,"bundleId":%q}`, ratingFields, bundleID)
}

func lookup(results ...string) string {
	return fmt.Sprintf("\n\n\n{\n \"resultCount\":%d,\n \"results\": [\n%s]\n}\n\n\n", len(results), strings.Join(results, ",\n"))
}

const bundle = "example.clipboardpro.mac"

type store struct {
	*httptest.Server
	query chan string
}

func newStore(t *testing.T, h http.HandlerFunc) *store {
	s := &store{query: make(chan string, 10)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/lookup" {
			http.NotFound(w, r)
			return
		}
		s.query <- r.URL.RawQuery
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func answer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8") // what Apple sends
		fmt.Fprint(w, body)
	}
}

func client(t *testing.T, base string, timeout time.Duration) *storeratings.Client {
	c, err := storeratings.New(storeratings.Config{
		BaseURL: base,
		HTTP:    outbound.New(outbound.Options{TestOnlyAllowLoopback: true, Timeout: timeout}),
	})
	require.NoError(t, err)
	return c
}

func TestAListedAppWithRatings(t *testing.T) {
	s := newStore(t, answer(lookup(
		macApp("example.clipboardpro.mac.helper", `"averageUserRating":1.0,"userRatingCount":9,`),
		macApp(bundle, `"averageUserRatingForCurrentVersion":4.5,"userRatingCountForCurrentVersion":120,"averageUserRating":4.6,"userRatingCount":3000,`),
	)))
	res := client(t, s.URL, 5*time.Second).Check(context.Background(), bundle, "mac")
	require.True(t, res.OK(), "%v", res.Err)
	assert.Equal(t, 89, res.Score)
	assert.Equal(t, storeratings.Ratings{Count: 3000, Average: 4.6, TrackID: 1234567890, Name: "Clipboard Pro", Seller: "Example Software Ltd",
		StoreURL: "https://apps.apple.com/us/app/clipboard-pro/id1234567890?mt=12&uo=4"}, res.Ratings)
	assert.Equal(t, "bundleId=example.clipboardpro.mac&country=us&entity=macSoftware", <-s.query)
	assert.Equal(t, s.URL+"/lookup?bundleId=example.clipboardpro.mac&country=us&entity=macSoftware", res.URL)
}

func TestAFewPerfectRatingsDoNotBeatManyGoodOnes(t *testing.T) {
	few := storeratings.Score(3, 5)
	many := storeratings.Score(3000, 4.6)
	assert.Equal(t, 53, few)
	assert.Equal(t, 89, many)
	assert.Less(t, few, many)
	assert.Equal(t, 75, storeratings.Score(50, 5))
	assert.Equal(t, 0, storeratings.Score(0, 5))
	assert.Equal(t, 100, storeratings.Score(1<<30, 5))
	assert.Equal(t, 0, storeratings.Score(1<<30, 1))
	// More ratings at the same average above the prior never lower the score.
	prev := 0
	for n := 1; n < 100000; n *= 3 {
		s := storeratings.Score(n, 4.2)
		assert.GreaterOrEqual(t, s, prev)
		prev = s
	}
}

func TestNotListedAndNoRatings(t *testing.T) {
	s := newStore(t, answer(lookup()))
	res := client(t, s.URL, 5*time.Second).Check(context.Background(), bundle, "mac")
	assert.Equal(t, reputation.ReasonReviewsNotListed, res.Reason)
	assert.Equal(t, 0, res.Score)

	// An iOS app with the same bundle id is not the Mac app.
	ios := strings.Replace(macApp(bundle, `"averageUserRating":4.9,"userRatingCount":50000,`), `"kind":"mac-software"`, `"kind":"software"`, 1)
	s = newStore(t, answer(lookup(ios)))
	res = client(t, s.URL, 5*time.Second).Check(context.Background(), bundle, "mac")
	assert.Equal(t, reputation.ReasonReviewsNotListed, res.Reason)

	// Bundle ids are compared exactly.
	s = newStore(t, answer(lookup(macApp(strings.ToUpper(bundle), `"averageUserRating":4.9,"userRatingCount":500,`))))
	res = client(t, s.URL, 5*time.Second).Check(context.Background(), bundle, "mac")
	assert.Equal(t, reputation.ReasonReviewsNotListed, res.Reason)

	// Listed, never rated: Apple leaves both fields out (or sends 0).
	for _, fields := range []string{``, `"averageUserRating":0,"userRatingCount":0,`} {
		s = newStore(t, answer(lookup(macApp(bundle, fields))))
		res = client(t, s.URL, 5*time.Second).Check(context.Background(), bundle, "mac")
		assert.Equal(t, reputation.ReasonReviewsNone, res.Reason)
		assert.Equal(t, int64(1234567890), res.Ratings.TrackID)
	}
}

func TestWindowsHasNoPublicRatings(t *testing.T) {
	s := newStore(t, answer(lookup()))
	res := client(t, s.URL, 5*time.Second).Check(context.Background(), "Example.ClipboardPro", "win")
	assert.Equal(t, reputation.ReasonReviewsUnavailablePlatform, res.Reason)
	assert.Empty(t, res.URL)
	select {
	case q := <-s.query:
		t.Fatalf("asked the store for a Windows app: %s", q)
	default:
	}
}

func TestUnreadableAnswers(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"500":                 func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
		"403":                 func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) },
		"truncated":           answer(lookup(macApp(bundle, `"averageUserRating":4.6,"userRatingCount":3000,`))[:300]),
		"html":                answer(`<html><body>Service Unavailable</body></html>`),
		"no resultCount":      answer(`{"results":[]}`),
		"count disagrees":     answer(`{"resultCount":2,"results":[]}`),
		"average above 5":     answer(lookup(macApp(bundle, `"averageUserRating":5.5,"userRatingCount":3000,`))),
		"negative count":      answer(lookup(macApp(bundle, `"averageUserRating":4.5,"userRatingCount":-3,`))),
		"average as a string": answer(lookup(macApp(bundle, `"averageUserRating":"4.5","userRatingCount":3,`))),
		"no average":          answer(lookup(macApp(bundle, `"userRatingCount":30,`))),
		"oversized":           answer(lookup(macApp(bundle, `"averageUserRating":4.5,"userRatingCount":3,"x":"`+strings.Repeat("x", 2<<20)+`",`))),
	} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, h)
			res := client(t, s.URL, 5*time.Second).Check(context.Background(), bundle, "mac")
			assert.Equal(t, reputation.ReasonReviewsUnavailable, res.Reason, "%v", res.Err)
			assert.ErrorIs(t, res.Err, storeratings.ErrUnavailable)
			assert.Equal(t, 0, res.Score)
		})
	}

	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		s := newStore(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		defer close(release)
		res := client(t, s.URL, 100*time.Millisecond).Check(context.Background(), bundle, "mac")
		assert.Equal(t, reputation.ReasonReviewsUnavailable, res.Reason)
		assert.True(t, reputation.Retryable(res.Reason))
	})

	t.Run("production client refuses loopback", func(t *testing.T) {
		s := newStore(t, answer(lookup()))
		c, err := storeratings.New(storeratings.Config{BaseURL: s.URL})
		require.NoError(t, err)
		res := c.Check(context.Background(), bundle, "mac")
		assert.Equal(t, reputation.ReasonReviewsUnavailable, res.Reason)
		assert.ErrorIs(t, res.Err, outbound.ErrForbiddenAddress)
	})
}

func TestConfig(t *testing.T) {
	_, err := storeratings.New(storeratings.Config{BaseURL: "itunes.apple.com"})
	assert.Error(t, err)
	c, err := storeratings.New(storeratings.Config{})
	require.NoError(t, err)
	assert.NotNil(t, c)
}
