// Package reputation holds what the four reputation signals share: the
// reason codes a signal that cannot be read is reported with, the Signal
// each of them produces, and Total, which weighs them into the reputation
// of an app's Score (decisions §6):
//
//	total = round(0.5·ai_visibility + 0.2·cadence + 0.2·reviews + 0.1·coherence)
//
// The signals themselves are libraries of their own, one job each:
// aivis (an OpenAI-compatible model asked about the app), appcast (release
// cadence from a Sparkle / WinSparkle feed), storeratings (public store
// ratings) and coherence (whether what the gate saw agrees with itself).
// The scoring job (server/scoring) reads them for every app.
//
// A signal that cannot be read is never given an invented number: it
// contributes 0 to the total and its reason code is listed in the Score's
// reasons, so a reader can tell "scored low" from "could not be scored".
package reputation

// Reason codes of the reputation signals, as they appear in a Score's
// `reasons`. Each names a signal that could not be read (or, for the
// reviews, a store that has nothing to read); the signal then contributes 0.
const (
	// ReasonAIUnavailable: the model endpoint could not be asked: network
	// error, timeout, an HTTP status other than 200 (429, 5xx, 401…), an
	// answer too large or not a chat completion. Transient: ask again later.
	ReasonAIUnavailable = "ai_visibility_unavailable"
	// ReasonAIUnparseable: the model answered, but not with the JSON object
	// the prompt asks for (malformed, a field missing or out of range, an
	// extra field, a refusal, an answer cut off at the token limit).
	ReasonAIUnparseable = "ai_visibility_unparseable"

	// ReasonCadenceNoFeed: the app declares no appcast URL (no SUFeedURL in
	// its bundle and none registered), so its releases cannot be read.
	ReasonCadenceNoFeed = "cadence_no_feed"
	// ReasonCadenceFeedUnavailable: the appcast could not be fetched:
	// network error, timeout, an HTTP status other than 200, an address
	// server/outbound refuses. Transient.
	ReasonCadenceFeedUnavailable = "cadence_feed_unavailable"
	// ReasonCadenceFeedInvalid: the appcast was fetched but is not a
	// readable Sparkle appcast: not RSS 2.0, a DTD or entity declaration,
	// larger than the limit, items none of which has a readable date.
	ReasonCadenceFeedInvalid = "cadence_feed_invalid"

	// ReasonReviewsUnavailable: the store's ratings could not be read:
	// network error, timeout, an HTTP status other than 200, a malformed or
	// oversized answer. Transient.
	ReasonReviewsUnavailable = "reviews_unavailable"
	// ReasonReviewsNotListed: the store does not list the app (the lookup
	// by bundle id found nothing).
	ReasonReviewsNotListed = "reviews_not_listed"
	// ReasonReviewsNone: the store lists the app but it has no ratings yet.
	ReasonReviewsNone = "reviews_none"
	// ReasonReviewsUnavailablePlatform: the app's platform has no public
	// ratings source that can be read (Windows: the Microsoft Store
	// documents no public ratings API that works without keys).
	ReasonReviewsUnavailablePlatform = "reviews_unavailable_platform"

	// ReasonCoherenceInsufficient: no pair of the gate's facts could be
	// compared (too few of them are known), so there is nothing to score.
	ReasonCoherenceInsufficient = "coherence_insufficient_data"
)

// Reasons lists every reason code above, in the order they are documented.
var Reasons = []string{
	ReasonAIUnavailable, ReasonAIUnparseable,
	ReasonCadenceNoFeed, ReasonCadenceFeedUnavailable, ReasonCadenceFeedInvalid,
	ReasonReviewsUnavailable, ReasonReviewsNotListed, ReasonReviewsNone, ReasonReviewsUnavailablePlatform,
	ReasonCoherenceInsufficient,
}

// Retryable reports whether reason names a failure that may go away by
// itself (a counterpart that was down or slow): the scoring job should
// read the signal again sooner than its next regular review.
func Retryable(reason string) bool {
	switch reason {
	case ReasonAIUnavailable, ReasonCadenceFeedUnavailable, ReasonReviewsUnavailable:
		return true
	}
	return false
}

// Signal is one signal's outcome: a 0–100 score when it was read, or the
// reason it could not be.
type Signal struct {
	// Score is 0–100; it is meaningful only when Reason is "".
	Score int
	// Reason is "" when the signal was read, else one of the Reason
	// constants.
	Reason string
}

// Read returns a signal that was read, with its score bounded to 0–100.
func Read(score int) Signal { return Signal{Score: clamp(score)} }

// Unread returns a signal that could not be read, for reason.
func Unread(reason string) Signal { return Signal{Reason: reason} }

// OK reports whether the signal was read.
func (s Signal) OK() bool { return s.Reason == "" }

// value is what the signal contributes: its score, or 0 when unread.
func (s Signal) value() int {
	if !s.OK() {
		return 0
	}
	return clamp(s.Score)
}

// Reputation is the reputation part of a Score, with the reasons of the
// signals that could not be read. Its JSON is the scoring job's result
// (apps.ScoringResult).
type Reputation struct {
	Total        int      `json:"total"`
	AIVisibility int      `json:"ai_visibility"`
	Cadence      int      `json:"cadence"`
	Reviews      int      `json:"reviews"`
	Coherence    int      `json:"coherence"`
	Reasons      []string `json:"reasons"`
}

// Weights of the signals in the total, in percent.
const (
	WeightAIVisibility = 50
	WeightCadence      = 20
	WeightReviews      = 20
	WeightCoherence    = 10
)

// Total weighs the four signals into a Reputation:
// round(0.5·ai + 0.2·cadence + 0.2·reviews + 0.1·coherence), halves
// rounded up. A signal that was not read contributes 0 (its field is 0)
// and its reason is listed, once, in the order ai, cadence, reviews,
// coherence. Reasons is never nil.
func Total(ai, cadence, reviews, coherence Signal) Reputation {
	r := Reputation{
		AIVisibility: ai.value(),
		Cadence:      cadence.value(),
		Reviews:      reviews.value(),
		Coherence:    coherence.value(),
		Reasons:      []string{},
	}
	// Integer arithmetic: the weights are percentages, so the weighted sum
	// is exact and +50 rounds the half up.
	r.Total = (WeightAIVisibility*r.AIVisibility + WeightCadence*r.Cadence +
		WeightReviews*r.Reviews + WeightCoherence*r.Coherence + 50) / 100
	for _, s := range []Signal{ai, cadence, reviews, coherence} {
		if !s.OK() && !contains(r.Reasons, s.Reason) {
			r.Reasons = append(r.Reasons, s.Reason)
		}
	}
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func clamp(n int) int {
	return min(max(n, 0), 100)
}
