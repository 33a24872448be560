package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Target is a server the suite runs against.
type Target struct {
	// Kind names how the server was started: "in-process", "container" or
	// "external". It is reported, and tells runs apart in a report.
	Kind string
	// BaseURL is the server's root, e.g. "http://127.0.0.1:8080" (the suite
	// adds /v1).
	BaseURL string
	// AdminToken is the bearer token of the server's admin surface. Without
	// it, the checks that need operator powers or test-mode facilities are
	// skipped (see docs/conformance.md, the conformance profile).
	AdminToken string
	// Description is reported as is: the image, the store, the build.
	Description string
	// Transport reaches the server; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Areas limits the run to the areas with these ids (see Areas); empty
	// runs every area.
	Areas []string
}

// checkTimeout bounds one check, so that a server that stops answering
// fails the check instead of hanging the run.
const checkTimeout = 3 * time.Minute

// Run runs the suite against target as subtests of t, one per area and one
// per check, and adds the outcome to report. A failing check fails t.
func Run(t *testing.T, target Target, report *Report) {
	t.Helper()
	run := &RunReport{
		Target:    TargetInfo{Kind: target.Kind, BaseURL: target.BaseURL, Description: target.Description},
		StartedAt: time.Now().UTC().Truncate(time.Millisecond),
	}
	report.add(run)
	defer func() { run.finish(time.Now().UTC().Truncate(time.Millisecond)) }()

	for _, id := range target.Areas {
		if AreaByID(id) == nil {
			t.Fatalf("conformance: unknown area %q (areas: %s)", id, strings.Join(AreaIDs(), ", "))
		}
	}
	run.Target.APIVersion = probe(t, target)

	for _, area := range Areas() {
		ar := &AreaReport{ID: area.ID, Title: area.Title, Checks: []*CheckReport{}}
		run.Areas = append(run.Areas, ar)
		if len(target.Areas) > 0 && !slices.Contains(target.Areas, area.ID) {
			ar.Result, ar.Note = Skip, "not selected"
			continue
		}
		if area.Checks == nil {
			ar.Result, ar.Note = NotCovered, area.NotCovered
			t.Run(area.ID, func(t *testing.T) { t.Skipf("%s: not covered yet: %s", area.Title, area.NotCovered) })
			continue
		}
		t.Run(area.ID, func(t *testing.T) {
			for _, chk := range area.Checks() {
				rec := &CheckReport{Name: chk.Name}
				ar.Checks = append(ar.Checks, rec)
				t.Run(chk.Name, func(t *testing.T) { runCheck(t, target, rec, chk.Fn) })
			}
		})
	}
}

// probe checks the target answers at all (GET /v1/rate-card, public) and
// returns the version of its OpenAPI document, if it serves one.
func probe(t *testing.T, target Target) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := xpromo.NewClient(target.BaseURL, xpromo.WithHTTPClient(&http.Client{Transport: transportOf(target)}), xpromo.WithRetries(2))
	if _, err := cl.GetRateCard(ctx); err != nil {
		t.Fatalf("conformance: the target %s does not answer GET /v1/rate-card: %v", target.BaseURL, err)
	}
	doc, err := cl.GetOpenAPIDocument(ctx)
	if err != nil {
		return ""
	}
	var d struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	if json.Unmarshal(doc, &d) != nil {
		return ""
	}
	return d.Info.Version
}

func transportOf(target Target) http.RoundTripper {
	if target.Transport != nil {
		return target.Transport
	}
	return http.DefaultTransport
}

// runCheck runs one check with its own C and records its outcome.
func runCheck(t *testing.T, target Target, rec *CheckReport, fn func(*C)) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	t.Cleanup(func() {
		cancel()
		rec.DurationMS = time.Since(start).Milliseconds()
		switch {
		case t.Failed():
			rec.Result = Fail
		case t.Skipped():
			rec.Result = Skip
		default:
			rec.Result = Pass
		}
	})
	c := &C{T: t, ctx: ctx, target: target, rec: rec}
	c.tape = &tape{c: c}
	c.http = &http.Client{Transport: &recorder{next: transportOf(target), tape: c.tape}, Timeout: time.Minute}
	fn(c)
}

// C is what a check works with: the *testing.T it runs under, whose failure
// and skip messages also go into the report, and clients of the target.
type C struct {
	*testing.T
	ctx    context.Context
	target Target
	rec    *CheckReport
	http   *http.Client
	tape   *tape
}

// Errorf records the message in the report and fails the check.
func (c *C) Errorf(format string, args ...any) {
	c.T.Helper()
	c.rec.addMessage(fmt.Sprintf(format, args...))
	c.T.Errorf(format, args...)
}

// Error records the message in the report and fails the check.
func (c *C) Error(args ...any) {
	c.T.Helper()
	c.rec.addMessage(fmt.Sprint(args...))
	c.T.Error(args...)
}

// Fatalf records the message in the report and stops the check, failed.
func (c *C) Fatalf(format string, args ...any) {
	c.T.Helper()
	c.rec.addMessage(fmt.Sprintf(format, args...))
	c.T.Fatalf(format, args...)
}

// Fatal records the message in the report and stops the check, failed.
func (c *C) Fatal(args ...any) {
	c.T.Helper()
	c.rec.addMessage(fmt.Sprint(args...))
	c.T.Fatal(args...)
}

// Skipf records the reason in the report and stops the check, skipped.
func (c *C) Skipf(format string, args ...any) {
	c.T.Helper()
	c.rec.addMessage(fmt.Sprintf(format, args...))
	c.T.Skipf(format, args...)
}

// Skip records the reason in the report and stops the check, skipped.
func (c *C) Skip(args ...any) {
	c.T.Helper()
	c.rec.addMessage(fmt.Sprint(args...))
	c.T.Skip(args...)
}

// Ctx is the check's context (bounded by checkTimeout).
func (c *C) Ctx() context.Context { return c.ctx }

// BaseURL is the target's root URL.
func (c *C) BaseURL() string { return strings.TrimRight(c.target.BaseURL, "/") }

// Check is one named check of an area.
type Check struct {
	Name string
	Fn   func(c *C)
}
