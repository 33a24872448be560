// Package openapitest checks live HTTP traffic against the OpenAPI document:
// every request and response a test makes through its Transport is validated
// with kin-openapi, an undocumented route or status fails the test, and the
// operations exercised are recorded so a test can demand that all were.
package openapitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/server/openapi"
)

func init() {
	// Non-JSON bodies the API serves: the integration guide and the test
	// checkout page are strings as far as the schema goes.
	openapi3filter.RegisterBodyDecoder("text/markdown", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
}

// Checker validates traffic against the embedded document.
type Checker struct {
	t      testing.TB
	doc    *openapi3.T
	router routers.Router

	mu   sync.Mutex
	seen map[string]map[int]bool // "METHOD /path" → statuses answered
}

// New loads and validates the document.
func New(t testing.TB) *Checker {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.Document)
	if err != nil {
		t.Fatalf("loading openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is invalid: %v", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("routing openapi.json: %v", err)
	}
	return &Checker{t: t, doc: doc, router: router, seen: map[string]map[int]bool{}}
}

// Client returns an HTTP client whose every exchange is checked.
func (c *Checker) Client() *http.Client {
	return &http.Client{Transport: c.Transport(http.DefaultTransport)}
}

// Transport wraps base with the checks.
func (c *Checker) Transport(base http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) { return c.roundTrip(base, req) })
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (c *Checker) roundTrip(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err != nil {
		return resp, err
	}

	// Validate on a copy of the request, as the server saw it.
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	what := req.Method + " " + req.URL.Path
	route, params, err := c.router.FindRoute(vreq)
	if err != nil {
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			c.t.Errorf("openapi: %s answered %d but the document has no such operation", what, resp.StatusCode)
		}
		return resp, nil
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route, Options: opts}
	// A request the document calls invalid must be refused: tests send such
	// requests on purpose, and a 2xx answer to one is a contract breach.
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && resp.StatusCode < 400 {
		c.t.Errorf("openapi: %s: the document says the request is invalid, yet the server answered %d: %v", what, resp.StatusCode, err)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(respBody)), Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		c.t.Errorf("openapi: %s answered %d, which the document does not allow: %v\nbody: %s", what, resp.StatusCode, err, truncate(respBody))
	}

	key := route.Method + " " + route.Path
	c.mu.Lock()
	if c.seen[key] == nil {
		c.seen[key] = map[int]bool{}
	}
	c.seen[key][resp.StatusCode] = true
	c.mu.Unlock()
	return resp, nil
}

func truncate(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// Operations returns every "METHOD /path" the document defines.
func (c *Checker) Operations() []string {
	var out []string
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, method+" "+path)
		}
	}
	sort.Strings(out)
	return out
}

// RequireAllExercised fails the test for each documented operation no
// request reached.
func (c *Checker) RequireAllExercised() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, op := range c.Operations() {
		if len(c.seen[op]) == 0 {
			c.t.Errorf("openapi: %s was never exercised", op)
		}
	}
}

// Seen reports the statuses an operation answered during the test.
func (c *Checker) Seen(op string) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for s := range c.seen[op] {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// RoutesMatch fails the test unless the router serves exactly the document's
// operations, apart from the operational paths listed in except (an entry
// ending in "/*" excepts the path and everything below it).
func (c *Checker) RoutesMatch(r chi.Routes, except ...string) {
	c.t.Helper()
	var served []string
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.TrimSuffix(route, "/")
		if route == "" {
			route = "/"
		}
		if !excepted(except, route) {
			served = append(served, method+" "+route)
		}
		return nil
	})
	if err != nil {
		c.t.Fatal(err)
	}
	sort.Strings(served)
	served = slices.Compact(served)
	documented := c.Operations()
	for _, op := range served {
		if !slices.Contains(documented, op) {
			c.t.Errorf("openapi: the router serves %s, which the document does not define", op)
		}
	}
	for _, op := range documented {
		if !slices.Contains(served, op) {
			c.t.Errorf("openapi: the document defines %s, which the router does not serve", op)
		}
	}
	if c.t.Failed() {
		c.t.Logf("served: %s", fmt.Sprint(served))
	}
}

// excepted tells whether route is one of except, or below one that ends in
// "/*" (a whole tree of pages, such as the dashboard's /dashboard/*).
func excepted(except []string, route string) bool {
	for _, e := range except {
		if e == route || (strings.HasSuffix(e, "/*") && (route == strings.TrimSuffix(e, "/*") || strings.HasPrefix(route, strings.TrimSuffix(e, "*")))) {
			return true
		}
	}
	return false
}
