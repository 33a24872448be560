package xpromo

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/xpromo/xpromo/sdk/x402"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-retryablehttp"
)

// Version is the version of this client, sent in the User-Agent.
const Version = "0.1.0"

// userAgent is the product token every request carries.
const userAgent = "xpromo-go/" + Version

// Defaults of the client's options.
const (
	// DefaultRetries is how many times a failed request is retried (so at
	// most DefaultRetries+1 attempts).
	DefaultRetries = 3
	// DefaultRetryWaitMin and DefaultRetryWaitMax bound the exponential
	// backoff between attempts when the server gives no Retry-After.
	DefaultRetryWaitMin = 500 * time.Millisecond
	DefaultRetryWaitMax = 10 * time.Second
	// DefaultMaxRetryAfter is the longest Retry-After the client waits out
	// by itself. A longer one (a rate limit window far from resetting)
	// returns the 429 or 503 at once, as an *Error with RetryAfter, so the
	// caller decides.
	DefaultMaxRetryAfter = time.Minute
	// DefaultTimeout bounds each attempt of the default HTTP client.
	DefaultTimeout = time.Minute
)

// maxResponseBytes bounds how much of a response body is read (32 MiB), as
// the transport inflates it: far above any answer of the API, low enough
// that a broken proxy or a compression bomb cannot exhaust the caller's
// memory. A longer answer is ErrResponseTooLarge, never decoded truncated.
// A variable only so that the test of the bound need not send 32 MiB.
var maxResponseBytes = 32 << 20

// ErrResponseTooLarge: an answer longer than 32 MiB, which no operation of
// the API sends (a proxy's or a counterfeit server's); nothing is decoded.
var ErrResponseTooLarge = errors.New("xpromo: the answer is larger than 32 MiB")

// Header names the client sends or reads.
const (
	headerIdempotencyKey  = "Idempotency-Key"
	headerRequestID       = "X-Request-Id"
	headerReplayed        = "Idempotent-Replayed"
	headerPrefer          = "Prefer"
	headerPayment         = "X-PAYMENT"
	headerPaymentResponse = "X-PAYMENT-RESPONSE"
)

// Client is a client of the xpromo REST API v1. It is safe for concurrent
// use; build it once with NewClient and share it. With derives a client
// with other credentials that shares the same connections.
//
// Every method takes a context first; cancelling it stops the call,
// including any wait between retries. Every non-2xx answer is returned as an
// *Error (see IsCode and ErrorCode), except the 402 of TopUp, which is a
// result (TopUpResult.Challenge).
type Client struct {
	cfg   config
	base  *url.URL // server root, without /v1
	err   error    // a bad base URL, reported by every call
	retry *retryablehttp.Client
}

// config is what the Options set.
type config struct {
	apiKey        string
	adminToken    string
	httpClient    *http.Client
	userAgent     string // the caller's product token, before xpromo-go/<version>
	retries       int
	waitMin       time.Duration
	waitMax       time.Duration
	maxRetryAfter time.Duration
	logger        *slog.Logger
	wallet        *x402.Wallet // pays TopUp's 402 (WithX402Wallet)
}

// Option configures a Client (NewClient, Client.With).
type Option func(*config)

// WithAPIKey sets the app's API key (the api_key of RegisterApp or
// RotateKey), sent as `Authorization: Bearer <key>` on the app endpoints and
// on the public ones (rate limits are counted per key).
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithX402Wallet lets TopUp pay machine to machine with w: TopUp then asks
// for x402 (as PreferX402 does), signs the challenge's USDC authorization
// (EIP-3009, exactly maxAmountRequired to payTo, valid maxTimeoutSeconds)
// and sends it at once; the answer is the settled top-up's ledger line.
// Without a wallet, TopUp returns the challenge to the caller. The wallet
// pays only USDC on base or base-sepolia, under the domain it knows for
// each (x402.USDC): a challenge for anything else is returned unpaid.
func WithX402Wallet(w *x402.Wallet) Option { return func(c *config) { c.wallet = w } }

// WithAdminToken sets the operators' token (the server's
// XPROMO_ADMIN_TOKEN), sent as the bearer credential of the Admin* methods
// only.
func WithAdminToken(token string) Option { return func(c *config) { c.adminToken = token } }

// WithHTTPClient sets the HTTP client that performs each attempt (its
// Transport, Timeout, Jar…). The default is a pooled client with a one
// minute timeout per attempt. The client's CheckRedirect is left alone.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithUserAgent names the caller's product, e.g. "xpromo-cli/1.2". It is
// sent before this client's own token: "xpromo-cli/1.2 xpromo-go/0.1.0".
func WithUserAgent(ua string) Option { return func(c *config) { c.userAgent = ua } }

// WithRetries sets how many times a request is retried after a connection
// error, a 429 or a 5xx (other than 501); 0 disables retries. Default
// DefaultRetries.
func WithRetries(n int) Option {
	return func(c *config) { c.retries = max(n, 0) }
}

// WithRetryWait bounds the exponential backoff (with jitter) between
// attempts when the server sends no Retry-After. Defaults DefaultRetryWaitMin
// and DefaultRetryWaitMax.
func WithRetryWait(min, max time.Duration) Option {
	return func(c *config) { c.waitMin, c.waitMax = min, max }
}

// WithMaxRetryAfter sets the longest Retry-After the client waits out before
// retrying; a 429 or 503 asking for a longer wait is returned at once.
// Default DefaultMaxRetryAfter; 0 means never wait on Retry-After (such
// answers are returned at once).
func WithMaxRetryAfter(d time.Duration) Option {
	return func(c *config) { c.maxRetryAfter = d }
}

// WithLogger logs each retry (at DEBUG) and each failed attempt (at ERROR)
// to l. The default logs nothing.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// NewClient returns a client of the server at baseURL, the server's root
// such as "http://127.0.0.1:8080"; the client adds /v1 itself (a baseURL
// already ending in /v1 is accepted too). A malformed baseURL is reported by
// every call.
func NewClient(baseURL string, opts ...Option) *Client {
	cfg := config{
		retries:       DefaultRetries,
		waitMin:       DefaultRetryWaitMin,
		waitMax:       DefaultRetryWaitMax,
		maxRetryAfter: DefaultMaxRetryAfter,
	}
	c := &Client{}
	c.base, c.err = parseBaseURL(baseURL)
	c.apply(cfg, opts)
	return c
}

// With returns a copy of c with opts applied on top of c's options, sharing
// c's connection pool unless WithHTTPClient replaces it. It is how one
// process acts for several apps:
//
//	adv := c.With(xpromo.WithAPIKey(advertiserKey))
func (c *Client) With(opts ...Option) *Client {
	d := &Client{base: c.base, err: c.err}
	d.apply(c.cfg, opts)
	return d
}

// APIKey returns the API key the client sends ("" when none).
func (c *Client) APIKey() string { return c.cfg.apiKey }

// X402Wallet returns the wallet TopUp pays x402 challenges with (nil: none;
// WithX402Wallet).
func (c *Client) X402Wallet() *x402.Wallet { return c.cfg.wallet }

// BaseURL returns the server root the client talks to.
func (c *Client) BaseURL() string {
	if c.base == nil {
		return ""
	}
	return c.base.String()
}

func (c *Client) apply(cfg config, opts []Option) {
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.httpClient == nil {
		cfg.httpClient = defaultHTTPClient()
	}
	if cfg.waitMin <= 0 {
		cfg.waitMin = DefaultRetryWaitMin
	}
	if cfg.waitMax < cfg.waitMin {
		cfg.waitMax = cfg.waitMin
	}
	c.cfg = cfg
	rc := &retryablehttp.Client{
		HTTPClient:   cfg.httpClient,
		RetryWaitMin: cfg.waitMin,
		RetryWaitMax: cfg.waitMax,
		RetryMax:     cfg.retries,
		CheckRetry:   c.checkRetry,
		Backoff:      backoff,
		// The last answer is returned as it is, so that a 429 or 5xx still
		// failing after the last retry becomes an *Error like any other.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	if cfg.logger != nil {
		rc.Logger = cfg.logger
	}
	c.retry = rc
}

// defaultHTTPClient is shared by every client built without
// WithHTTPClient, so that clients derived with With share connections too.
var defaultClient = &http.Client{Timeout: DefaultTimeout}

func defaultHTTPClient() *http.Client { return defaultClient }

func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("xpromo: base URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("xpromo: base URL %q must be absolute, http or https, like http://127.0.0.1:8080", raw)
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u, nil
}

// CallOption adjusts one call (the trailing arguments of every method).
type CallOption func(*callConfig)

type callConfig struct {
	idempotencyKey string
	requestID      string
	header         http.Header
	resp           *Response
}

// WithIdempotencyKey sends key as the Idempotency-Key of a POST instead of
// a random one. Reusing a key across calls makes the server replay the
// first call's answer (same body) or refuse (different body: 422
// idempotency_key_reused); keys are kept 24 hours, scoped to the caller.
// Without it, each call gets a fresh random key, reused by its own retries.
// Ignored on other methods.
func WithIdempotencyKey(key string) CallOption {
	return func(c *callConfig) { c.idempotencyKey = key }
}

// WithRequestID sends id as X-Request-Id, so the call can be followed in
// the server's logs (the server keeps a sane id and echoes it).
func WithRequestID(id string) CallOption {
	return func(c *callConfig) { c.requestID = id }
}

// WithHeader adds a header to the request (after the client's own, so it
// may replace them, Authorization included).
func WithHeader(name, value string) CallOption {
	return func(c *callConfig) {
		if c.header == nil {
			c.header = http.Header{}
		}
		c.header.Add(name, value)
	}
}

// WithResponse stores facts about the final HTTP response of the call in
// *r: status, headers (RateLimit-*, …), request id, whether it was an
// idempotent replay. r is filled for error answers too.
func WithResponse(r *Response) CallOption {
	return func(c *callConfig) { c.resp = r }
}

// Response describes the HTTP answer of a call (see WithResponse).
type Response struct {
	StatusCode int
	Header     http.Header
	// RequestID is the server's X-Request-Id.
	RequestID string
	// IdempotencyKey is the key the POST was sent with ("" otherwise).
	IdempotencyKey string
	// Replayed is true when the server answered from an earlier request with
	// the same Idempotency-Key (Idempotent-Replayed: true).
	Replayed bool
}

// auth says which credential a call carries.
type auth int

const (
	authKey   auth = iota // the API key, when set
	authAdmin             // the admin token
	authNone              // nothing (URLs the server handed out)
)

// request is one API call.
type request struct {
	method string
	path   string // from the server root, e.g. "/v1/rate-card"; or an absolute URL with authNone
	query  url.Values
	body   any    // JSON-encoded when non-nil
	accept string // "" means application/json
	auth   auth
	// ok lists the statuses besides 2xx that are answers, not errors
	// (TopUp's 402).
	ok []int
	// repeatable marks a POST that is harmless to run twice (a fill: it
	// changes nothing stored): it gets no Idempotency-Key unless the call
	// sets one, so the server neither records nor replays it.
	repeatable bool
}

// Do sends a request to path (from the server root, e.g.
// "/v1/apps/app_123/score", query included) with the client's API key,
// retries and error handling, and decodes a 2xx JSON answer into out
// (unless out is nil). body, when not nil, is sent as JSON. It is for
// endpoints this version of the client does not wrap yet.
func (c *Client) Do(ctx context.Context, method, path string, body, out any, opts ...CallOption) error {
	if !strings.HasPrefix(path, "/") {
		// Never an absolute URL: the API key must not leave the server.
		return fmt.Errorf("xpromo: Do: path %q must start with /", path)
	}
	p, rawQuery, _ := strings.Cut(path, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return fmt.Errorf("xpromo: query of %q: %w", path, err)
	}
	_, err = c.call(ctx, request{method: method, path: p, query: q, body: body}, out, opts)
	return err
}

// call performs r and decodes a 2xx (or an r.ok status) JSON answer into
// out. It returns facts about the answer (zero when there was none). A
// *string, *[]byte or *json.RawMessage out receives the body as is.
func (c *Client) call(ctx context.Context, r request, out any, opts []CallOption) (Response, error) {
	if c.err != nil {
		return Response{}, c.err
	}
	var cc callConfig
	for _, o := range opts {
		o(&cc)
	}
	req, err := c.newRequest(ctx, r, &cc)
	if err != nil {
		return Response{}, err
	}
	resp, err := c.retry.Do(req)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w (%v)", ctxErr, err)
		}
		return Response{}, fmt.Errorf("xpromo: %s %s: %w", r.method, r.path, err)
	}
	defer resp.Body.Close()
	meta := Response{
		StatusCode:     resp.StatusCode,
		Header:         resp.Header,
		RequestID:      resp.Header.Get(headerRequestID),
		IdempotencyKey: req.Header.Get(headerIdempotencyKey),
		Replayed:       resp.Header.Get(headerReplayed) == "true",
	}
	if cc.resp != nil {
		*cc.resp = meta
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxResponseBytes)+1))
	if err != nil {
		return meta, fmt.Errorf("xpromo: %s %s: reading the answer: %w", r.method, r.path, err)
	}
	if len(body) > maxResponseBytes {
		return meta, fmt.Errorf("xpromo: %s %s: %w (request %s)", r.method, r.path, ErrResponseTooLarge, meta.RequestID)
	}
	success := resp.StatusCode >= 200 && resp.StatusCode < 300
	for _, s := range r.ok {
		success = success || resp.StatusCode == s
	}
	if !success {
		return meta, decodeError(resp.StatusCode, body, meta.RequestID)
	}
	if err := decodeBody(body, out); err != nil {
		return meta, fmt.Errorf("xpromo: %s %s: decoding the %d answer: %w (request %s)", r.method, r.path, resp.StatusCode, err, meta.RequestID)
	}
	return meta, nil
}

func decodeBody(body []byte, out any) error {
	switch o := out.(type) {
	case nil:
		return nil
	case *string:
		*o = string(body)
		return nil
	case *[]byte:
		*o = body
		return nil
	case *json.RawMessage:
		*o = body
		return nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil // no content: out keeps its zero value
	}
	return json.Unmarshal(body, out)
}

func (c *Client) newRequest(ctx context.Context, r request, cc *callConfig) (*retryablehttp.Request, error) {
	var target string
	if strings.Contains(r.path, "://") {
		target = r.path
	} else {
		// r.path is escaped already (pathf).
		target = c.base.String() + r.path
	}
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	// The body is encoded once, into bytes, so that each retry sends it
	// again unchanged (retryablehttp rewinds byte bodies).
	var body any
	if r.body != nil {
		raw, err := json.Marshal(r.body)
		if err != nil {
			return nil, fmt.Errorf("xpromo: %s %s: encoding the body: %w", r.method, r.path, err)
		}
		body = raw
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("xpromo: %s %s: %w", r.method, r.path, err)
	}
	h := req.Header
	ua := userAgent
	if c.cfg.userAgent != "" {
		ua = c.cfg.userAgent + " " + userAgent
	}
	h.Set("User-Agent", ua)
	if r.accept == "" {
		r.accept = "application/json"
	}
	h.Set("Accept", r.accept)
	if r.body != nil {
		h.Set("Content-Type", "application/json")
	}
	var token string
	switch r.auth {
	case authKey:
		token = c.cfg.apiKey
	case authAdmin:
		token = c.cfg.adminToken
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if r.method == http.MethodPost && (!r.repeatable || cc.idempotencyKey != "") {
		// One key per call, sent unchanged by every retry of it: the server
		// runs the call once and replays its answer to the retries.
		key := cc.idempotencyKey
		if key == "" {
			key = NewIdempotencyKey()
		}
		h.Set(headerIdempotencyKey, key)
	}
	if cc.requestID != "" {
		h.Set(headerRequestID, cc.requestID)
	}
	for name, vs := range cc.header {
		h.Del(name)
		for _, v := range vs {
			h.Add(name, v)
		}
	}
	return req, nil
}

// NewIdempotencyKey returns a fresh random Idempotency-Key: 16 random bytes,
// base64url (22 characters).
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// decodeError turns a non-2xx answer into an *Error. An answer without the
// API's Error body (a proxy's HTML page, say) still becomes an *Error, with
// the status, an empty Code and the start of the body as Message.
func decodeError(status int, body []byte, requestID string) error {
	var er ErrorResponse
	if err := json.Unmarshal(body, &er); err == nil && er.Error.Code != "" {
		return NewError(status, er.Error, requestID)
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut-- // not inside a character
		}
		msg = msg[:cut] + "…"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &Error{Status: status, Message: "unexpected answer: " + msg, RequestID: requestID}
}

// checkRetry decides whether an attempt is retried: connection errors
// (except those no retry can fix, such as a bad certificate), 429 and 5xx
// other than 501. Never other 4xx, and never once ctx is done. A 429 or 503
// whose Retry-After is longer than maxRetryAfter is not retried either.
func (c *Client) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	}
	if resp.StatusCode != http.StatusTooManyRequests && (resp.StatusCode < 500 || resp.StatusCode == http.StatusNotImplemented) {
		return false, nil
	}
	if wait, ok := retryAfter(resp); ok {
		// Not waited out: a wait longer than allowed, or one that would
		// outlast the caller's deadline. The caller gets the answer, with
		// its retry_after, rather than a bare deadline error later.
		if wait > c.cfg.maxRetryAfter {
			return false, nil
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return false, nil
		}
	}
	return true, nil
}

// backoff waits as long as the server's Retry-After says on a 429 or 503,
// and otherwise an exponential time (min·2^attempt, at most max) with jitter
// over its upper half, so that many clients do not retry in step.
func backoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil {
		if wait, ok := retryAfter(resp); ok {
			return wait
		}
	}
	wait := max
	if attempt < 32 {
		if d := min << attempt; d > 0 && d < max {
			wait = d
		}
	}
	return wait/2 + rand.N(wait/2+1)
}

// retryAfter reads the Retry-After of a 429 or 503: delay-seconds or an
// HTTP-date.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		// Anything beyond a day is as good as "not soon" (and must not
		// overflow a Duration).
		return time.Duration(min(secs, 86400)) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(time.Until(at), 0), true
	}
	return 0, false
}

// pathf builds an API path, escaping each argument as one path segment.
func pathf(format string, args ...string) string {
	esc := make([]any, len(args))
	for i, a := range args {
		esc[i] = url.PathEscape(a)
	}
	return fmt.Sprintf(format, esc...)
}
