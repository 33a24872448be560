package conformance

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Exchange is one HTTP request and its response, as the server sent it.
type Exchange struct {
	Method        string
	URL           string
	RequestHeader http.Header
	RequestBody   []byte
	Status        int
	Header        http.Header
	Body          []byte
}

// JSON decodes the response body into a generic value, failing the check
// when it is not JSON.
func (e Exchange) JSON(c *C) map[string]any {
	c.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Body, &m); err != nil {
		c.Fatalf("%s %s answered %d with a body that is not a JSON object: %v\n%s", e.Method, e.URL, e.Status, err, clip(e.Body))
	}
	return m
}

func (e Exchange) String() string {
	return fmt.Sprintf("%s %s → %d %s", e.Method, e.URL, e.Status, clip(e.Body))
}

// maxRecordedBody bounds how much of each body the tape keeps.
const maxRecordedBody = 4 << 20

// tape keeps the exchanges of one check, so that checks can look at what
// went over the wire behind an SDK call (raw bodies, headers).
type tape struct {
	c         *C
	mu        sync.Mutex
	exchanges []Exchange
}

// Last returns the most recent exchange of the check. Checks call it right
// after the SDK call they want to inspect.
func (c *C) Last() Exchange {
	c.Helper()
	c.tape.mu.Lock()
	defer c.tape.mu.Unlock()
	if len(c.tape.exchanges) == 0 {
		c.Fatalf("no HTTP exchange recorded yet")
	}
	return c.tape.exchanges[len(c.tape.exchanges)-1]
}

func (tp *tape) add(e Exchange) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.exchanges = append(tp.exchanges, e)
}

// recorder is the transport of every client of a check: it records each
// exchange on the tape, and fails the check on any 5xx answer, even one the
// SDK retried away: a conforming server does not fail on the suite's
// requests.
type recorder struct {
	next http.RoundTripper
	tape *tape
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		// The body is read here and handed on as bytes (RoundTrippers
		// consume the body anyway).
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.ContentLength = int64(len(b))
	}
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRecordedBody))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	ex := Exchange{
		Method:        req.Method,
		URL:           req.URL.String(),
		RequestHeader: req.Header.Clone(),
		RequestBody:   reqBody,
		Status:        resp.StatusCode,
		Header:        resp.Header.Clone(),
		Body:          body,
	}
	r.tape.add(ex)
	if resp.StatusCode >= 500 {
		r.tape.c.Errorf("the server failed: %s", ex)
	}
	return resp, nil
}

// clientOpts are the options of every SDK client of a check: the recording
// transport; a few quick retries so that 429s on shared buckets (per IP)
// are waited out; the SDK's default cap on Retry-After waits.
func (c *C) clientOpts(extra ...xpromo.Option) []xpromo.Option {
	return append([]xpromo.Option{
		xpromo.WithHTTPClient(c.http),
		xpromo.WithRetries(3),
		xpromo.WithRetryWait(100*time.Millisecond, 2*time.Second),
		xpromo.WithUserAgent("xpromo-conformance/" + SuiteVersion),
	}, extra...)
}

// Public is a client without credentials.
func (c *C) Public(extra ...xpromo.Option) *xpromo.Client {
	return xpromo.NewClient(c.target.BaseURL, c.clientOpts(extra...)...)
}

// AsApp is a client acting with an app's API key.
func (c *C) AsApp(key string, extra ...xpromo.Option) *xpromo.Client {
	return xpromo.NewClient(c.target.BaseURL, c.clientOpts(append([]xpromo.Option{xpromo.WithAPIKey(key)}, extra...)...)...)
}

// Admin is a client with the target's admin token; the check is skipped
// when the target has none.
func (c *C) Admin() *xpromo.Client {
	c.Helper()
	c.NeedAdmin()
	return xpromo.NewClient(c.target.BaseURL, c.clientOpts(xpromo.WithAdminToken(c.target.AdminToken))...)
}

// NeedAdmin skips the check when the target has no admin token.
func (c *C) NeedAdmin() {
	c.Helper()
	if c.target.AdminToken == "" {
		c.Skipf("needs the admin surface of the conformance profile, and the target has no admin token (XPROMO_CONFORMANCE_ADMIN_TOKEN)")
	}
}

// Raw sends a request as given, without the SDK: for protocol checks the
// SDK cannot make (a malformed body, a wrong Content-Type). path is from
// the server root; headers are name, value pairs.
func (c *C) Raw(method, path string, body []byte, headers ...string) Exchange {
	c.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(c.ctx, method, c.BaseURL()+path, rd)
	if err != nil {
		c.Fatalf("building %s %s: %v", method, path, err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	return c.Last()
}

// App is an app registered by a check, with a client acting as it.
type App struct {
	ID           string
	Key          string
	Platform     xpromo.Platform
	ScoringJobID string
	Client       *xpromo.Client
}

// Registration returns a valid registration with unique names.
func Registration(platform xpromo.Platform) *xpromo.RegisterAppRequest {
	suffix := randomHex(6)
	return &xpromo.RegisterAppRequest{
		Name:        "Conformance " + suffix,
		Platform:    platform,
		BundleID:    "com.example.conformance.a" + suffix,
		Domain:      "example.com",
		DownloadURL: "https://example.com/download/conformance-" + suffix + ".dmg",
		// unverified@example.com: the reference server's gate sandbox (test
		// mode, docs/gate.md) never answers its challenge, so a fresh app stays
		// pending until an operator decides, whatever its gate does meanwhile.
		ContactEmail: "unverified@example.com",
	}
}

// NewApp registers a fresh mac app (or as mod changes the registration).
func (c *C) NewApp(mod ...func(*xpromo.RegisterAppRequest)) *App {
	c.Helper()
	req := Registration(xpromo.PlatformMac)
	for _, m := range mod {
		m(req)
	}
	resp, err := c.Public().RegisterApp(c.ctx, req)
	if err != nil {
		c.Fatalf("registering an app: %v", err)
	}
	if resp.AppID == "" || resp.APIKey == "" {
		c.Fatalf("registration answered no app_id or api_key: %+v", resp)
	}
	return &App{ID: resp.AppID, Key: resp.APIKey, Platform: req.Platform, ScoringJobID: resp.ScoringJobID, Client: c.AsApp(resp.APIKey)}
}

// ApprovedApp registers an app and approves it through the admin surface.
func (c *C) ApprovedApp(mod ...func(*xpromo.RegisterAppRequest)) *App {
	c.Helper()
	a := c.NewApp(mod...)
	if _, err := c.Admin().AdminApproveApp(c.ctx, a.ID, "conformance suite"); err != nil {
		c.Fatalf("approving %s: %v", a.ID, err)
	}
	return a
}

// Fund tops the app's wallet up by cents through the test checkout and
// returns the checkout URL it paid.
func (c *C) Fund(a *App, cents int64) string {
	c.Helper()
	res, err := a.Client.TopUp(c.ctx, a.ID, &xpromo.TopUpParams{AmountCents: cents})
	if err != nil {
		c.Fatalf("top-up of %d: %v", cents, err)
	}
	if res.CheckoutURL == "" {
		c.Fatalf("top-up of %d answered no checkout_url: %+v", cents, res)
	}
	sess, err := c.Public().CompleteTestCheckout(c.ctx, res.CheckoutURL)
	if err != nil {
		c.Fatalf("completing the test checkout %s (conformance profile: POST on the checkout_url completes it in test mode): %v", res.CheckoutURL, err)
	}
	if sess.Status != "completed" {
		c.Fatalf("test checkout %s: status %q after completion, want completed", res.CheckoutURL, sess.Status)
	}
	return res.CheckoutURL
}

// Lines reads every line of the app's ledger, following cursors.
func (c *C) Lines(a *App, params *xpromo.LedgerParams) []xpromo.LedgerLine {
	c.Helper()
	var out []xpromo.LedgerLine
	for l, err := range a.Client.LedgerLines(c.ctx, a.ID, params) {
		if err != nil {
			c.Fatalf("reading the ledger of %s: %v", a.ID, err)
		}
		out = append(out, l)
	}
	return out
}

// APIError returns err as an *xpromo.Error, failing the check when err is
// nil or another kind of error.
func (c *C) APIError(err error, what string) *xpromo.Error {
	c.Helper()
	if err == nil {
		c.Fatalf("%s: succeeded, want an error answer", what)
	}
	var e *xpromo.Error
	if !errors.As(err, &e) {
		c.Fatalf("%s: %v, want an API error answer", what, err)
	}
	return e
}

// ExpectError fails the check unless err is an API error with this status
// and code.
func (c *C) ExpectError(err error, status int, code, what string) *xpromo.Error {
	c.Helper()
	e := c.APIError(err, what)
	if e.Status != status || e.Code != code {
		c.Errorf("%s: answered %d %q (%s), want %d %q", what, e.Status, e.Code, e.Message, status, code)
	}
	return e
}

// NoError stops the check when err is not nil.
func (c *C) NoError(err error, what string) {
	c.Helper()
	if err != nil {
		c.Fatalf("%s: %v", what, err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
