package reputation_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/reputation"
)

func TestTotalWeighsTheSignals(t *testing.T) {
	r := reputation.Total(reputation.Read(80), reputation.Read(60), reputation.Read(90), reputation.Read(70))
	// 0.5·80 + 0.2·60 + 0.2·90 + 0.1·70 = 40 + 12 + 18 + 7 = 77
	assert.Equal(t, reputation.Reputation{Total: 77, AIVisibility: 80, Cadence: 60, Reviews: 90, Coherence: 70, Reasons: []string{}}, r)

	// Halves round up: 0.5·1 = 0.5 → 1; 0.1·5 = 0.5 → 1.
	assert.Equal(t, 1, reputation.Total(reputation.Read(1), reputation.Read(0), reputation.Read(0), reputation.Read(0)).Total)
	assert.Equal(t, 1, reputation.Total(reputation.Read(0), reputation.Read(0), reputation.Read(0), reputation.Read(5)).Total)
	assert.Equal(t, 100, reputation.Total(reputation.Read(100), reputation.Read(100), reputation.Read(100), reputation.Read(100)).Total)
}

func TestMissingSignalsContributeNothingAndAreListed(t *testing.T) {
	r := reputation.Total(
		reputation.Unread(reputation.ReasonAIUnavailable),
		reputation.Read(100),
		reputation.Unread(reputation.ReasonReviewsUnavailablePlatform),
		reputation.Read(100),
	)
	assert.Equal(t, 0, r.AIVisibility)
	assert.Equal(t, 0, r.Reviews)
	assert.Equal(t, 30, r.Total) // 0.2·100 + 0.1·100
	assert.Equal(t, []string{reputation.ReasonAIUnavailable, reputation.ReasonReviewsUnavailablePlatform}, r.Reasons)

	// An unread signal's leftover score is ignored, never counted.
	r = reputation.Total(reputation.Signal{Score: 90, Reason: reputation.ReasonAIUnparseable}, reputation.Read(0), reputation.Read(0), reputation.Read(0))
	assert.Equal(t, 0, r.Total)
	assert.Equal(t, []string{reputation.ReasonAIUnparseable}, r.Reasons)
}

func TestScoresAreBounded(t *testing.T) {
	assert.Equal(t, 100, reputation.Read(250).Score)
	assert.Equal(t, 0, reputation.Read(-3).Score)
	r := reputation.Total(reputation.Signal{Score: 1000}, reputation.Signal{Score: -50}, reputation.Read(0), reputation.Read(0))
	assert.Equal(t, 100, r.AIVisibility)
	assert.Equal(t, 0, r.Cadence)
	assert.Equal(t, 50, r.Total)
	for a := 0; a <= 100; a += 7 {
		for b := 0; b <= 100; b += 11 {
			tot := reputation.Total(reputation.Read(a), reputation.Read(b), reputation.Read(100-a), reputation.Read(100-b)).Total
			assert.True(t, tot >= 0 && tot <= 100, "total %d", tot)
		}
	}
}

// The codes are valid Score reasons (apps checks ^[a-z][a-z0-9_]*$) and
// distinct.
func TestReasonCodes(t *testing.T) {
	code := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[string]bool{}
	for _, c := range reputation.Reasons {
		assert.Regexp(t, code, c)
		assert.False(t, seen[c], "%s twice", c)
		seen[c] = true
	}
	assert.True(t, reputation.Retryable(reputation.ReasonAIUnavailable))
	assert.False(t, reputation.Retryable(reputation.ReasonAIUnparseable))
	assert.False(t, reputation.Retryable(reputation.ReasonReviewsUnavailablePlatform))
}

// docs/reputation.md's table of reason codes and Reasons are the same list,
// in the same order.
func TestDocsListTheReasonCodes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/reputation.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| reason code | signal | when | transient |")
	if !ok {
		t.Fatal("docs/reputation.md: the reason code table is missing")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var got []string
	for _, line := range strings.Split(table, "\n") {
		if code, ok := strings.CutPrefix(line, "| `"); ok {
			code, _, _ = strings.Cut(code, "`")
			got = append(got, code)
			transient := strings.HasSuffix(strings.TrimSpace(line), "| yes |")
			assert.Equal(t, reputation.Retryable(code), transient, "%s: transient column", code)
		}
	}
	assert.Equal(t, reputation.Reasons, got)
}
