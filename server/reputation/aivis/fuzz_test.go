package aivis

import (
	"testing"
)

// The answer is whatever a model wrote: any bytes give a bounded answer or
// ErrUnparseable, never a panic, and a parsed answer always scores 0–100.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		`{"known": true, "familiarity": 80, "sentiment": 50, "summary": "x"}`,
		`{"known": false, "familiarity": 0, "sentiment": 0, "summary": ""}`,
		`{"known": true, "familiarity": 1e2, "sentiment": -100, "summary": ""}`,
		`{"known": true, "familiarity": 99999999999999999999, "sentiment": 0, "summary": ""}`,
		"```json\n{}\n```",
		`{"known":true,"known":false}`,
		`[`, ``, `null`,
		`{"known":true,"familiarity":[[[[[1]]]]],"sentiment":0,"summary":""}`, // beyond answerLimits
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAnswer(s)
		if err != nil {
			return
		}
		if a.Familiarity < 0 || a.Familiarity > 100 || a.Sentiment < -100 || a.Sentiment > 100 {
			t.Fatalf("out of bounds: %+v from %q", a, s)
		}
		if sc := a.Score(); sc < 0 || sc > 100 {
			t.Fatalf("score %d from %q", sc, s)
		}
	})
}
