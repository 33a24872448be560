// Package browsertest drives Debian's chromium headless from go test
// (chromedp over the DevTools pipe, no driver, no network): a Browser per
// test, a Page per signed-in person (its own browser context, so its own
// cookies), and on every page the checks the dashboard's tests make: no
// console error, no uncaught exception, no Content-Security-Policy
// violation, no serious or critical axe-core violation, and a screenshot.
//
// Without chromium the tests skip with a message, unless
// XPROMO_TEST_REQUIRE_TOOLS is set (make test, and so CI): then a missing
// browser fails (scripts/test-deps.sh installs it).
package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/xpromo/xpromo/server/internal/testtool"
)

// EnvChromium names the chromium binary; default: chromium on PATH.
const EnvChromium = "XPROMO_CHROMIUM"

// EnvScreenshots is the directory Page.Screenshot writes its PNGs to
// (make screenshots sets docs/dashboard); unset: the test's temp dir.
const EnvScreenshots = "XPROMO_SCREENSHOTS"

// Width and Height are the viewport of every page (and so of the
// screenshots).
const (
	Width  = 1280
	Height = 800
)

// ActionTimeout bounds each browser action (a navigation, a click and the
// page it loads, an axe run).
const ActionTimeout = 20 * time.Second

// Browser is one headless chromium, for one test.
type Browser struct {
	ctx context.Context
}

// chromiumPath finds the browser, or skips (fails under make test and CI:
// testtool.RequireEnv).
func chromiumPath(t testing.TB) string {
	name := os.Getenv(EnvChromium)
	if name == "" {
		name = "chromium"
	}
	return testtool.Command(t, name, "apt-get install chromium, or scripts/test-deps.sh; set "+EnvChromium+" to another binary")
}

// Start launches chromium headless with a fresh profile; it ends with the
// test.
func Start(t testing.TB) *Browser {
	t.Helper()
	bin := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests run as root in CI containers
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(Width, Height),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	start, stop := context.WithTimeout(ctx, 60*time.Second)
	defer stop()
	// The first Run starts the browser (on ctx: the browser lives as long
	// as it).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	_ = start
	return &Browser{ctx: ctx}
}

// Page is a tab in a browser context of its own, and what it reported.
type Page struct {
	t   testing.TB
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

// probe runs in every document before its own scripts (CDP, so the page's
// CSP does not apply to it): it records the CSP violations the document
// reports.
const probe = `(() => {
  window.__xpromoViolations = [];
  document.addEventListener('securitypolicyviolation', e => {
    window.__xpromoViolations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber);
  });
})();`

// NewPage opens a tab with its own cookies, at the viewport size, with the
// probes on. It closes with the test.
func (b *Browser) NewPage(t testing.TB) *Page {
	t.Helper()
	p := &Page{t: t}
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext(), chromedp.WithListener(p.listen))
	t.Cleanup(cancel)
	p.ctx = ctx
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, log.Enable, struct{}{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: probe})
		return err
	}), chromedp.EmulateViewport(Width, Height))
	if err != nil {
		t.Fatalf("opening a page: %v", err)
	}
	return p
}

// listen records what the browser reports as going wrong: console.error
// and console.assert, uncaught exceptions, and the browser's own error log
// entries (a failed load, a CSP refusal, a security error).
func (p *Page) listen(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type != runtime.ConsoleAPICalledTypeError && e.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		var args []string
		for _, a := range e.Args {
			if a.Value != nil {
				args = append(args, string(a.Value))
			} else {
				args = append(args, a.Description)
			}
		}
		msg = "console." + string(e.Type) + ": " + strings.Join(args, " ")
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg = "uncaught exception: " + d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
	case *log.EventEntryAdded:
		// The browser's own request for /favicon.ico is not the page's:
		// the dashboard declares no icon, and the API answers it 404.
		if e.Entry.Level != log.EntryLevelError || strings.HasSuffix(e.Entry.URL, "/favicon.ico") {
			return
		}
		msg = fmt.Sprintf("browser log (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
	default:
		return
	}
	p.mu.Lock()
	p.problems = append(p.problems, msg)
	p.mu.Unlock()
}

// Do runs actions on the page, each step bounded by ActionTimeout.
func (p *Page) Do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, ActionTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

// Run runs one action that returns a value.
func Run[T any](p *Page, a chromedp.Action[T]) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, ActionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		p.t.Fatalf("browser: %v", err)
	}
	return v
}

// Open navigates to url and waits for the body.
func (p *Page) Open(url string) {
	p.t.Helper()
	p.Do(chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
}

// Location is the page's URL.
func (p *Page) Location() string {
	p.t.Helper()
	return Run(p, chromedp.Location())
}

// Text is the visible text of the first element matching the CSS
// selector, trimmed.
func (p *Page) Text(css string) string {
	p.t.Helper()
	return strings.TrimSpace(Run(p, chromedp.Text(chromedp.CSS(css))))
}

// Texts are the visible texts of every element matching the CSS selector
// (none: empty), each trimmed.
func (p *Page) Texts(css string) []string {
	p.t.Helper()
	return Run(p, chromedp.Evaluate[[]string](fmt.Sprintf(
		`Array.from(document.querySelectorAll(%q), e => e.innerText.trim())`, css)))
}

// Count is how many elements match the CSS selector now.
func (p *Page) Count(css string) int {
	p.t.Helper()
	return Run(p, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, css)))
}

// Fill types value into the field the CSS selector names (cleared first).
func (p *Page) Fill(css, value string) {
	p.t.Helper()
	p.Do(chromedp.Clear(chromedp.CSS(css)), chromedp.SendKeys(chromedp.CSS(css), value))
}

// ClickAndWait clicks the element (a link or a form's submit button) and
// waits until the next page is shown and settled: a new document, or the
// dashboard's htmx-boosted swap of the body, either way a new <main>. The
// old <main> is marked before the click; evaluations that fail while a
// document goes away are retried.
func (p *Page) ClickAndWait(css string) {
	p.t.Helper()
	Run(p, chromedp.Evaluate[bool](`(() => { const m = document.querySelector('main') || document.body; m.__xpromoStale = true; return true })()`))
	p.Do(chromedp.Click(chromedp.CSS(css)))
	ctx, cancel := context.WithTimeout(p.ctx, ActionTimeout)
	defer cancel()
	const shown = `(() => {
  const m = document.querySelector('main') || document.body;
  return document.readyState === 'complete' && !m.__xpromoStale &&
    !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling');
})()`
	for {
		done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](shown))
		if err == nil && done {
			return
		}
		select {
		case <-ctx.Done():
			p.t.Fatalf("browser: clicking %s showed no new page: %v (last error %v)", css, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Problems returns what went wrong on the page since the last call: the
// reports of listen and the CSP violations the probe recorded.
func (p *Page) Problems() []string {
	p.t.Helper()
	violations := Run(p, chromedp.Evaluate[[]string](`window.__xpromoViolations || []`))
	if len(violations) > 0 {
		p.Do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.__xpromoViolations = [], true)`))
			return err
		}))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append(p.problems, prefixed("CSP violation: ", violations)...)
	p.problems = nil
	return out
}

func prefixed(prefix string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = prefix + s
	}
	return out
}

// Check fails the test for every problem the page reported (console
// errors, exceptions, CSP violations) and for every serious or critical
// axe-core violation of the document as it is now. what names the screen
// in the messages.
func (p *Page) Check(what string) {
	p.t.Helper()
	for _, v := range p.Axe() {
		if v.Impact == "serious" || v.Impact == "critical" {
			p.t.Errorf("%s: axe %s (%s): %s %v", what, v.ID, v.Impact, v.Help, v.Nodes)
		}
	}
	for _, pr := range p.Problems() {
		p.t.Errorf("%s: %s", what, pr)
	}
}

// Screenshot writes the viewport as <name>.png to $XPROMO_SCREENSHOTS (or
// the test's temp dir) and returns the path.
func (p *Page) Screenshot(name string) string {
	p.t.Helper()
	dir := os.Getenv(EnvScreenshots)
	if dir == "" {
		dir = p.t.TempDir()
	}
	png := Run(p, chromedp.CaptureScreenshot())
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatalf("writing a screenshot: %v", err)
	}
	return path
}
