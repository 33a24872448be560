package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// SuiteVersion is the version of this suite. It changes when checks are
// added or changed, so a published report says what it was measured with.
const SuiteVersion = "1.0.0"

// ReportFormat identifies the layout of the JSON report, for tools that read
// it. It changes only when the layout changes incompatibly.
const ReportFormat = "xpromo-conformance-report/1"

// Result of a check, an area or a run.
type Result string

// Results. An area is NotCovered when the suite has no checks for it yet; a
// run passes when no check failed.
const (
	Pass       Result = "pass"
	Fail       Result = "fail"
	Skip       Result = "skip"
	NotCovered Result = "not_covered"
)

// Report collects the results of one or more runs (one per target) and
// writes them as a table and as JSON. It is safe for concurrent use.
type Report struct {
	mu   sync.Mutex
	Runs []*RunReport
}

// NewReport returns an empty report.
func NewReport() *Report { return &Report{} }

// RunReport is the outcome of the suite against one target.
type RunReport struct {
	Target     TargetInfo    `json:"target"`
	StartedAt  time.Time     `json:"started_at"`
	FinishedAt time.Time     `json:"finished_at"`
	Result     Result        `json:"result"`
	Summary    Summary       `json:"summary"`
	Areas      []*AreaReport `json:"areas"`
	// Note says why the whole run was skipped (e.g. no Docker engine).
	Note string `json:"note,omitempty"`
}

// TargetInfo describes the server a run was made against.
type TargetInfo struct {
	// Kind is "in-process", "container" or "external".
	Kind    string `json:"kind"`
	BaseURL string `json:"base_url"`
	// Description is free text: the image, the store, the build.
	Description string `json:"description,omitempty"`
	// APIVersion is info.version of the target's /openapi.json, when served.
	APIVersion string `json:"api_version,omitempty"`
}

// Summary counts checks by result; NotCovered counts areas.
type Summary struct {
	Pass       int `json:"pass"`
	Fail       int `json:"fail"`
	Skip       int `json:"skip"`
	NotCovered int `json:"not_covered_areas"`
}

// AreaReport is the outcome of one area.
type AreaReport struct {
	ID     string         `json:"id"`
	Title  string         `json:"title"`
	Result Result         `json:"result"`
	Note   string         `json:"note,omitempty"`
	Checks []*CheckReport `json:"checks"`
}

// CheckReport is the outcome of one check.
type CheckReport struct {
	Name       string `json:"name"`
	Result     Result `json:"result"`
	DurationMS int64  `json:"duration_ms"`
	// Messages are the check's failure messages, or its skip reason.
	Messages []string `json:"messages,omitempty"`

	mu sync.Mutex
}

// maxMessages bounds the messages kept per check, and maxMessageLen each one,
// so that a check failing in a loop cannot bloat the report.
const (
	maxMessages   = 8
	maxMessageLen = 2000
)

func (c *CheckReport) addMessage(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	msg = strings.TrimSpace(msg)
	if msg == "" || len(c.Messages) >= maxMessages {
		return
	}
	if len(msg) > maxMessageLen {
		msg = msg[:maxMessageLen] + "…"
	}
	c.Messages = append(c.Messages, msg)
}

func (r *Report) add(run *RunReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Runs = append(r.Runs, run)
}

// AddSkippedRun records a run that could not take place (a target that
// could not be started), with the reason.
func (r *Report) AddSkippedRun(target TargetInfo, note string) {
	r.add(&RunReport{Target: target, Result: Skip, Note: note, Areas: []*AreaReport{}})
}

// Area returns the report of the area with the given id in the last run
// against a target of the given kind, or nil.
func (r *Report) Area(kind, id string) *AreaReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.Runs) - 1; i >= 0; i-- {
		if r.Runs[i].Target.Kind != kind {
			continue
		}
		for _, a := range r.Runs[i].Areas {
			if a.ID == id {
				return a
			}
		}
		return nil
	}
	return nil
}

// finish computes the results of the areas and the run from its checks.
func (run *RunReport) finish(now time.Time) {
	run.FinishedAt = now
	run.Summary = Summary{}
	run.Result = Pass
	for _, a := range run.Areas {
		if a.Result == NotCovered {
			run.Summary.NotCovered++
			continue
		}
		a.Result = areaResult(a.Checks)
		for _, c := range a.Checks {
			switch c.Result {
			case Pass:
				run.Summary.Pass++
			case Fail:
				run.Summary.Fail++
			case Skip:
				run.Summary.Skip++
			}
		}
		if a.Result == Fail {
			run.Result = Fail
		}
	}
}

// areaResult: fail if any check failed, skip if none passed, else pass.
func areaResult(checks []*CheckReport) Result {
	passed := false
	for _, c := range checks {
		switch c.Result {
		case Fail:
			return Fail
		case Pass:
			passed = true
		}
	}
	if !passed {
		return Skip
	}
	return Pass
}

// jsonReport is the document WriteJSON writes.
type jsonReport struct {
	Format       string       `json:"format"`
	Suite        string       `json:"suite"`
	SuiteVersion string       `json:"suite_version"`
	GeneratedAt  time.Time    `json:"generated_at"`
	Result       Result       `json:"result"`
	Runs         []*RunReport `json:"runs"`
}

// Result is fail when any run failed, skip when no run took place, else pass.
func (r *Report) Result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Skip
	for _, run := range r.Runs {
		switch run.Result {
		case Fail:
			return Fail
		case Pass:
			res = Pass
		}
	}
	return res
}

// MarshalJSON encodes the report as the published JSON document.
func (r *Report) MarshalJSON() ([]byte, error) {
	res := r.Result()
	r.mu.Lock()
	defer r.mu.Unlock()
	return json.Marshal(jsonReport{
		Format:       ReportFormat,
		Suite:        "xpromo-conformance",
		SuiteVersion: SuiteVersion,
		GeneratedAt:  time.Now().UTC().Truncate(time.Second),
		Result:       res,
		Runs:         r.Runs,
	})
}

// WriteJSON writes the report to path (indented), creating its directory.
func (r *Report) WriteJSON(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// ReadReport reads a report written by WriteJSON.
func ReadReport(path string) (*Report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc jsonReport
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if doc.Format != ReportFormat {
		return nil, fmt.Errorf("%s: format %q, want %q", path, doc.Format, ReportFormat)
	}
	return &Report{Runs: doc.Runs}, nil
}

// WriteTable writes a table of areas × results per run, for people.
func (r *Report) WriteTable(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, run := range r.Runs {
		fmt.Fprintf(w, "\nxpromo conformance %s: target %s", SuiteVersion, run.Target.Kind)
		if run.Target.BaseURL != "" {
			fmt.Fprintf(w, " (%s)", run.Target.BaseURL)
		}
		if run.Target.Description != "" {
			fmt.Fprintf(w, ", %s", run.Target.Description)
		}
		fmt.Fprintln(w)
		if run.Result == Skip && run.Note != "" {
			fmt.Fprintf(w, "  NOT RUN: %s\n", run.Note)
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  AREA\tRESULT\tPASS\tFAIL\tSKIP\t")
		for _, a := range run.Areas {
			var p, f, s int
			for _, c := range a.Checks {
				switch c.Result {
				case Pass:
					p++
				case Fail:
					f++
				case Skip:
					s++
				}
			}
			res := strings.ToUpper(strings.ReplaceAll(string(a.Result), "_", " "))
			if a.Result == NotCovered {
				fmt.Fprintf(tw, "  %s\t%s\t-\t-\t-\t%s\n", a.Title, res, a.Note)
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t\n", a.Title, res, p, f, s)
		}
		tw.Flush()
		fmt.Fprintf(w, "  result: %s (%d checks passed, %d failed, %d skipped; %d areas not covered)\n",
			strings.ToUpper(string(run.Result)), run.Summary.Pass, run.Summary.Fail, run.Summary.Skip, run.Summary.NotCovered)
		for _, a := range run.Areas {
			for _, c := range a.Checks {
				if c.Result != Fail {
					continue
				}
				fmt.Fprintf(w, "  FAILED %s / %s\n", a.ID, c.Name)
				for _, m := range c.Messages {
					fmt.Fprintf(w, "      %s\n", indent(firstLines(m, 6), "      "))
				}
			}
		}
	}
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}
