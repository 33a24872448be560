package storeratings

import (
	"errors"
	"strings"
	"testing"
)

// The lookup answer comes from outside: any bytes give ratings or one of
// the documented errors, never a panic, and ratings that parse are in
// range and score 0–100.
func FuzzParseLookup(f *testing.F) {
	f.Add([]byte(`{"resultCount":1,"results":[{"kind":"mac-software","bundleId":"a.b","averageUserRating":4.6,"userRatingCount":3000}]}`), "a.b")
	f.Add([]byte(`{"resultCount":0,"results":[]}`), "a.b")
	f.Add([]byte(`{"resultCount":1,"results":`+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`}`), "a.b") // beyond jsonbound.Answer
	f.Add([]byte(`{"resultCount":1,"results":[{"kind":"mac-software","bundleId":"a.b","averageUserRating":1e400,"userRatingCount":1}]}`), "a.b")
	f.Add([]byte(`{"resultCount":1,"results":[{"kind":"mac-software","bundleId":"","userRatingCount":9999999999999}]}`), "")
	f.Fuzz(func(t *testing.T, body []byte, bundleID string) {
		r, err := ParseLookup(body, bundleID)
		if err != nil {
			if !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrNotListed) && !errors.Is(err, ErrNoRatings) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		if r.Count <= 0 || r.Average < 0 || r.Average > 5 {
			t.Fatalf("out of range: %+v", r)
		}
		if s := Score(r.Count, r.Average); s < 0 || s > 100 {
			t.Fatalf("score %d", s)
		}
	})
}
