package browsertest

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"

	"github.com/chromedp/chromedp"
)

// axe-core, vendored (testdata/VENDORED.md).
//
//go:embed testdata/axe.min.js
var axeSource string

// AxeVersion and axeSHA256 are the vendored file's version and checksum.
const (
	AxeVersion = "4.14.1"
	axeSHA256  = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
)

// Violation is one axe-core rule the document breaks.
type Violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"` // minor, moderate, serious, critical
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"` // the first few offending elements' selectors
}

// axeRun runs every rule axe-core tags WCAG 2.x A and AA (and its best
// practices) on the document.
const axeRun = `axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map(v => ({
  id: v.id, impact: v.impact || '', help: v.help,
  nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))
})))`

// Axe injects axe-core into the document (Runtime.evaluate: the page's
// CSP forbids inline script, and CDP's evaluation is not subject to it)
// and returns its violations.
func (p *Page) Axe() []Violation {
	p.t.Helper()
	if sum := sha256.Sum256([]byte(axeSource)); hex.EncodeToString(sum[:]) != axeSHA256 {
		p.t.Fatalf("testdata/axe.min.js is not axe-core %s (sha256 %x, want %s)", AxeVersion, sum, axeSHA256)
	}
	if !Run(p, chromedp.Evaluate[bool](`typeof window.axe === 'object'`)) {
		Run(p, chromedp.Evaluate[bool](axeSource+"\n;true"))
	}
	out := Run(p, chromedp.Evaluate[[]Violation](axeRun, chromedp.EvalAwaitPromise))
	if out == nil {
		return nil
	}
	return out
}

// String is the violation in one line.
func (v Violation) String() string {
	return fmt.Sprintf("%s (%s): %s %v", v.ID, v.Impact, v.Help, v.Nodes)
}
