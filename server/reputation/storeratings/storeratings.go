// Package storeratings is the reviews signal of an app's reputation: the
// public ratings of the app in its platform's store, count and average,
// weighed into a 0–100 score.
//
// macOS: the iTunes Search API's lookup, GET
// {BaseURL}/lookup?bundleId={bundle id}&entity=macSoftware&country={Country}
// (public, no key), whose results carry `averageUserRating` (0–5) and
// `userRatingCount` of the Mac App Store storefront of that country. Only a
// result of kind "mac-software" with exactly the app's bundle id counts.
//
// Windows: nothing is asked. The Microsoft Store documents no public API
// that serves an app's ratings without keys (the Store's analytics API
// serves a publisher its own apps' ratings, with Azure AD credentials; the
// catalog endpoints the Store app uses are undocumented and want a Store
// product id, which a registration does not carry). A Windows app is
// reviews_unavailable_platform until a documented source exists.
//
// Score: a Bayesian average that pulls few ratings towards the middle of
// the scale, so that three five-star ratings do not beat three thousand
// 4.6-star ones:
//
//	b     = (PriorWeight·PriorMean + count·average) / (PriorWeight + count)
//	score = round(25 · (b − 1))     (1 star → 0, 5 stars → 100)
//
// with PriorMean 3 and PriorWeight 50: 3 × ★5 → 53, 3000 × ★4.6 → 89,
// 50 × ★5 → 75. An app the store lists with no ratings is reviews_none.
//
// Limits: one storefront (Country) is read; ratings are per storefront.
// Apps sold outside the Mac App Store (most of this network's) are not
// listed there: reviews_not_listed, not a low score.
package storeratings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/jsonbound"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/reputation"
)

// Defaults used when the corresponding Config field is empty.
const (
	DefaultBaseURL = "https://itunes.apple.com"
	DefaultCountry = "us"
	// maxAnswerBytes bounds the lookup answer: one app's record is a few
	// KiB (its description included).
	maxAnswerBytes = 1 << 20
)

// The score's prior: PriorWeight imaginary ratings of PriorMean stars.
const (
	PriorMean   = 3.0
	PriorWeight = 50.0
)

var (
	// ErrUnavailable: the store could not be read (network, timeout, a
	// status other than 200, a malformed or oversized answer).
	ErrUnavailable = errors.New("storeratings: store unavailable")
	// ErrNotListed: the store does not list the app.
	ErrNotListed = errors.New("storeratings: the store does not list the app")
	// ErrNoRatings: the store lists the app without ratings.
	ErrNoRatings = errors.New("storeratings: the app has no ratings")
	// ErrPlatform: no ratings source is read for the platform.
	ErrPlatform = errors.New("storeratings: no public ratings source for the platform")
)

// Config configures a Client.
type Config struct {
	// BaseURL is the iTunes Search API root; empty means DefaultBaseURL.
	BaseURL string
	// Country is the storefront's two-letter code; empty means
	// DefaultCountry.
	Country string
	// HTTP sends the requests; it must come from outbound.New. Nil means
	// outbound.New with a 20-second limit.
	HTTP *http.Client
}

// Client reads store ratings. It is safe for concurrent use.
type Client struct{ cfg Config }

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("storeratings: BaseURL %q is not an absolute http(s) URL", cfg.BaseURL)
	}
	if cfg.Country == "" {
		cfg.Country = DefaultCountry
	}
	if cfg.HTTP == nil {
		cfg.HTTP = outbound.New(outbound.Options{Timeout: 20 * time.Second})
	}
	return &Client{cfg: cfg}, nil
}

// Ratings is what the store said about the app.
type Ratings struct {
	Count    int     // userRatingCount
	Average  float64 // averageUserRating, 0–5
	TrackID  int64   // the store's id of the app
	Name     string  // trackName
	Seller   string  // sellerName
	StoreURL string  // trackViewUrl
}

// Result is the signal with its evidence.
type Result struct {
	reputation.Signal
	URL     string // the lookup URL asked, when one was
	Ratings Ratings
	Err     error
}

// Check reads the ratings of the app with bundleID on platform ("mac" or
// "win").
func (c *Client) Check(ctx context.Context, bundleID, platform string) Result {
	var res Result
	fail := func(err error) Result {
		res.Err = err
		res.Signal = reputation.Unread(ReasonFor(err))
		return res
	}
	if platform != "mac" {
		return fail(fmt.Errorf("%w %q", ErrPlatform, platform))
	}
	q := url.Values{"bundleId": {bundleID}, "entity": {"macSoftware"}, "country": {c.cfg.Country}}
	res.URL = strings.TrimSuffix(c.cfg.BaseURL, "/") + "/lookup?" + q.Encode()
	body, err := c.get(ctx, res.URL)
	if err != nil {
		return fail(err)
	}
	r, err := ParseLookup(body, bundleID)
	res.Ratings = r
	if err != nil {
		return fail(err)
	}
	res.Signal = reputation.Read(Score(r.Count, r.Average))
	return res
}

// ReasonFor maps an error of Check to its reason code.
func ReasonFor(err error) string {
	switch {
	case errors.Is(err, ErrNotListed):
		return reputation.ReasonReviewsNotListed
	case errors.Is(err, ErrNoRatings):
		return reputation.ReasonReviewsNone
	case errors.Is(err, ErrPlatform):
		return reputation.ReasonReviewsUnavailablePlatform
	default:
		return reputation.ReasonReviewsUnavailable
	}
}

// Score is the reviews score of count ratings averaging average stars
// (see the package comment). count ≤ 0 scores 0; use it only with ratings.
func Score(count int, average float64) int {
	if count <= 0 {
		return 0
	}
	n := float64(count)
	b := (PriorWeight*PriorMean + n*average) / (PriorWeight + n)
	return min(max(int(math.Floor(25*(b-1)+0.5)), 0), 100)
}

func (c *Client) get(ctx context.Context, u string) ([]byte, error) {
	body, err := outbound.Get(ctx, c.cfg.HTTP, u, "application/json, text/javascript;q=0.9", maxAnswerBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return body, nil
}

// lookupAnswer is the iTunes Search API's answer (the fields read).
type lookupAnswer struct {
	ResultCount *int `json:"resultCount"`
	Results     []struct {
		Kind              string   `json:"kind"`
		BundleID          string   `json:"bundleId"`
		TrackID           int64    `json:"trackId"`
		TrackName         string   `json:"trackName"`
		SellerName        string   `json:"sellerName"`
		TrackViewURL      string   `json:"trackViewUrl"`
		AverageUserRating *float64 `json:"averageUserRating"`
		UserRatingCount   *int64   `json:"userRatingCount"`
	} `json:"results"`
}

// ParseLookup reads a lookup answer about bundleID. It returns the ratings
// of the "mac-software" result with exactly that bundle id; an error
// wrapping ErrNotListed when there is none, ErrNoRatings when it has no
// ratings, ErrUnavailable when the answer is not a lookup answer or its
// numbers are out of range (an average outside 0–5, a negative count), or
// its structure is beyond jsonbound.Answer.
func ParseLookup(body []byte, bundleID string) (Ratings, error) {
	if err := jsonbound.Check(body, jsonbound.Answer); err != nil {
		return Ratings{}, fmt.Errorf("%w: not a lookup answer: %v", ErrUnavailable, err)
	}
	var a lookupAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return Ratings{}, fmt.Errorf("%w: not a lookup answer: %v", ErrUnavailable, err)
	}
	if a.ResultCount == nil || *a.ResultCount < 0 || *a.ResultCount != len(a.Results) {
		return Ratings{}, fmt.Errorf("%w: not a lookup answer (resultCount)", ErrUnavailable)
	}
	for _, r := range a.Results {
		if r.Kind != "mac-software" || r.BundleID != bundleID {
			continue
		}
		got := Ratings{TrackID: r.TrackID, Name: r.TrackName, Seller: r.SellerName, StoreURL: r.TrackViewURL}
		if r.UserRatingCount != nil {
			if *r.UserRatingCount < 0 || *r.UserRatingCount > math.MaxInt32 {
				return got, fmt.Errorf("%w: userRatingCount %d", ErrUnavailable, *r.UserRatingCount)
			}
			got.Count = int(*r.UserRatingCount)
		}
		if got.Count == 0 {
			return got, ErrNoRatings
		}
		if r.AverageUserRating == nil || *r.AverageUserRating < 0 || *r.AverageUserRating > 5 {
			return got, fmt.Errorf("%w: averageUserRating missing or outside 0–5", ErrUnavailable)
		}
		got.Average = *r.AverageUserRating
		return got, nil
	}
	return Ratings{}, fmt.Errorf("%w: %d results, none a Mac app with bundle id %q", ErrNotListed, len(a.Results), bundleID)
}
