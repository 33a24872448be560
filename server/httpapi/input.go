package httpapi

import (
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/openapi"
	"github.com/xpromo/xpromo/server/textcheck"
)

// The input policy (docs/errors.md, "Input policy"): what any request must
// look like before a handler sees it. One rule set for every operation, read
// from openapi.json, so the document and the server cannot disagree about
// which operations take a body, which query parameters exist and how long
// each string may be:
//
//   - the path, the query and the headers the server reads are valid UTF-8
//     without NUL (invalid_encoding);
//   - a path parameter longer than the document allows names nothing
//     (not_found);
//   - a query parameter the operation does not define is refused
//     (unknown_parameter), and so is one given twice (repeated_parameter)
//     unless the document makes it an array (the events API's type);
//   - an operation without a documented body refuses any body
//     (body_not_allowed); one with a body refuses a Content-Length over
//     MaxBodyBytes at once (body_too_large).
//
// The body itself is checked as it is decoded (decodeJSON): its structure
// first (checkBound: jsonbound.Request's depth, values and key length, in
// one linear pass before any walk), then (checkJSON) encoding, duplicate
// fields, and each string's length, pattern and characters, against the
// same document.

// readHeaders are the request headers the server reads, stores or logs.
var readHeaders = []string{
	"Accept", "Authorization", "Content-Type", "Idempotency-Key", "Prefer",
	"X-Forwarded-For", "X-Payment", RequestIDHeader,
}

// documented maps "METHOD /path" to the operation openapi.json defines.
var documented = sync.OnceValue(func() map[string]*openapi.Operation {
	ops, err := openapi.Operations()
	if err != nil {
		panic(err) // the embedded document; its tests would fail first
	}
	m := make(map[string]*openapi.Operation, len(ops))
	for _, op := range ops {
		m[op.Method+" "+op.Path] = op
	}
	return m
})

// operationOf returns the documented operation r was routed to, or nil
// (routes the document does not describe, and before routing).
func operationOf(r *http.Request) *openapi.Operation {
	rctx := chi.RouteContext(r.Context())
	if rctx == nil {
		return nil
	}
	pattern := rctx.RoutePattern()
	ops := documented()
	if op := lookupOp(ops, r.Method, pattern); op != nil {
		return op
	}
	if r.Method == http.MethodHead {
		return lookupOp(ops, http.MethodGet, pattern) // served by GetHead
	}
	return nil
}

// lookupOp finds ops["METHOD /path"]: indexed by string(bytes), the lookup
// does not allocate, as method+" "+pattern did, twice a request.
func lookupOp(ops map[string]*openapi.Operation, method, pattern string) *openapi.Operation {
	var buf [128]byte
	return ops[string(append(append(append(buf[:0], method...), ' '), pattern...))]
}

// input applies the policy to the request line, the headers and the
// presence of a body. It is mounted on each route after routing (so that it
// knows the operation) and before idempotent, which reads the body.
func (s *Server) input(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := operationOf(r)
		err := checkTarget(r, op)
		if err == nil {
			err = checkHeaders(r.Header, op)
		}
		if err == nil && op != nil {
			err = checkBodyPresence(r, op)
		}
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkTarget checks the path and the query.
func checkTarget(r *http.Request, op *openapi.Operation) error {
	if !textcheck.Encoded(r.URL.Path) || !textcheck.Encoded(r.URL.RawPath) || !textcheck.Encoded(r.RequestURI) {
		return apperr.New(apperr.InvalidEncoding, "the path must be valid UTF-8 without NUL (%%00)")
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return apperr.New(apperr.InvalidEncoding, "the query string is not valid percent-encoding: %v", err)
	}
	names := make([]string, 0, len(query))
	for name, values := range query {
		if !textcheck.Encoded(name) {
			return apperr.New(apperr.InvalidEncoding, "a query parameter name is not valid UTF-8 or holds a NUL")
		}
		for _, v := range values {
			if !textcheck.Encoded(v) {
				return fieldErr(apperr.InvalidEncoding, name, "query parameter %q must be valid UTF-8 without NUL", name)
			}
		}
		names = append(names, name)
	}
	if op == nil {
		return nil
	}
	slices.Sort(names) // the same request always gets the same answer
	for _, name := range names {
		if _, ok := op.Query[name]; !ok {
			return fieldErr(apperr.UnknownParameter, name, "%s", unknownParameter(op, name))
		}
		if n := len(query[name]); n > 1 && !op.Query[name].Matches("array") {
			return fieldErr(apperr.RepeatedParameter, name, "query parameter %q is given %d times; send it once", name, n)
		}
	}
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		for i, key := range rctx.URLParams.Keys {
			if max, ok := maxLength(op.PathParams[key]); ok && utf8.RuneCountInString(rctx.URLParams.Values[i]) > max {
				return apperr.New(apperr.NotFound, "not found: %s is at most %d characters", key, max)
			}
		}
	}
	return nil
}

func unknownParameter(op *openapi.Operation, name string) string {
	if len(op.Query) == 0 {
		return "this operation takes no query parameters, not " + strconv.Quote(name)
	}
	known := slices.Sorted(maps.Keys(op.Query))
	return "unknown query parameter " + strconv.Quote(name) + "; this operation takes " + strings.Join(known, ", ")
}

// checkHeaders checks the headers the server reads (net/http already
// refuses control characters in header values; UTF-8 is the policy's own),
// and the length of the header parameters the operation documents.
func checkHeaders(h http.Header, op *openapi.Operation) error {
	for _, name := range readHeaders {
		for _, v := range h.Values(name) {
			if !textcheck.Encoded(v) {
				return apperr.New(apperr.InvalidEncoding, "the %s header must be valid UTF-8 without NUL", name)
			}
		}
	}
	if op == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(op.Headers)) {
		max, ok := maxLength(op.Headers[name])
		if !ok {
			continue
		}
		for _, v := range h.Values(name) {
			if utf8.RuneCountInString(v) > max {
				return fieldErr(errorCode(op.Headers[name], apperr.TooLong), name, "the %s header is longer than %d characters", name, max)
			}
		}
	}
	return nil
}

// errorCode is the code the document gives a value of s (x-error-code), or
// fallback.
func errorCode(s *openapi.Schema, fallback string) string {
	for _, r := range s.Rules("string") {
		if r.ErrorCode != "" {
			return r.ErrorCode
		}
	}
	return fallback
}

// checkBodyPresence refuses a body where the operation takes none, and a
// declared length over the limit where it takes one.
func checkBodyPresence(r *http.Request, op *openapi.Operation) error {
	if op.Body != nil {
		if r.ContentLength > MaxBodyBytes {
			return apperr.New(apperr.BodyTooLarge, "the body is larger than %d bytes", MaxBodyBytes)
		}
		return nil
	}
	refuse := r.ContentLength > 0
	if r.ContentLength < 0 { // length unknown (chunked): is there a first byte?
		var b [1]byte
		n, _ := io.ReadFull(r.Body, b[:])
		refuse = n > 0
	}
	if refuse {
		return apperr.New(apperr.BodyNotAllowed, "%s %s takes no body; send the request without one", op.Method, op.Path)
	}
	return nil
}

// maxLength is the tightest maxLength of a string under s.
func maxLength(s *openapi.Schema) (int, bool) {
	best, found := 0, false
	for _, rule := range s.Rules("string") {
		if rule.MaxLength != nil && (!found || *rule.MaxLength < best) {
			best, found = *rule.MaxLength, true
		}
	}
	return best, found
}

func fieldErr(code, field, format string, args ...any) *apperr.Error {
	e := apperr.New(code, format, args...)
	e.Field = field
	return e
}
