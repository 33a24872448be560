package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ids"
)

const (
	levelWarn  = slog.LevelWarn
	levelError = slog.LevelError
)

// RequestIDHeader carries the request id in both directions.
const RequestIDHeader = "X-Request-Id"

// ModeHeader is set on every response in test mode, so nobody mistakes a
// test-mode server for a live one.
const ModeHeader = "Xpromo-Mode"

// maxRequestIDLen bounds a client-supplied request id.
const maxRequestIDLen = 128

type ctxKey int

const requestIDKey ctxKey = iota

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

func attrRequestID(ctx context.Context) slog.Attr {
	return slog.String("request_id", RequestID(ctx))
}

func errAttr(err error) slog.Attr { return slog.String("error", err.Error()) }

// requestID takes the caller's X-Request-Id when it is a sane token (so a
// request can be followed across services), otherwise makes one, and echoes
// it in the response.
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = ids.New("req")
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

// validRequestID accepts short printable ASCII without spaces; anything else
// could forge log lines or bloat them.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// quietRoutes are probed every few seconds by orchestrators and scrapers;
// their successful requests are logged at DEBUG so they do not drown the log.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// unmatchedRoute labels requests no route matched, so that arbitrary paths
// cannot blow up the metrics' cardinality.
const unmatchedRoute = "unmatched"

// observe writes the access log line and records the request metrics,
// labelled by the chi route pattern, never the raw path.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Latency uses the monotonic wall clock on purpose: the injected
		// clock is for domain time, and a test clock that jumps would make
		// nonsense durations.
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		// Deferred, so a response aborted by a panic (recoverer re-panics
		// when the header was already sent) is still counted and logged.
		defer func() { s.record(r, ww, time.Since(start)) }()
		next.ServeHTTP(ww, r)
	})
}

// record logs and counts one finished request.
func (s *Server) record(r *http.Request, ww middleware.WrapResponseWriter, elapsed time.Duration) {
	status := ww.Status()
	if status == 0 {
		status = http.StatusOK // the handler wrote nothing: net/http sends 200
		if errors.Is(r.Context().Err(), context.Canceled) {
			// Nothing was sent because the client went away first
			// (writeErr aborts such requests): a client abort, not a 200.
			status = StatusClientClosedRequest
		}
	}
	route := chi.RouteContext(r.Context()).RoutePattern()
	if route == "" {
		route = unmatchedRoute
	}
	s.metrics.observe(r.Method, route, status, elapsed)

	level := slog.LevelInfo
	switch {
	case status >= 500:
		level = levelError
	case quietRoutes[route] && status < 400:
		level = slog.LevelDebug
	}
	s.log.LogAttrs(r.Context(), level, "http request",
		slog.String("method", r.Method),
		slog.String("route", route),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		// The unit is in the key: slog's Duration is nanoseconds as a bare
		// integer in JSON, which nobody can read without the source.
		slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
		slog.Int("bytes", ww.BytesWritten()),
		attrRequestID(r.Context()),
	)
}

// recoverer turns a panic into a logged 500 with the JSON error body, so one
// bad request cannot take the process down.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww, ok := w.(middleware.WrapResponseWriter)
		if !ok {
			ww = middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				// net/http's way to abort a response; it must reach the server.
				panic(p)
			}
			err, isErr := p.(error)
			if !isErr {
				err = fmt.Errorf("%v", p)
			}
			s.log.LogAttrs(r.Context(), levelError, "panic serving request",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				attrRequestID(r.Context()),
				errAttr(err),
				slog.String("stack", string(debug.Stack())),
			)
			if ww.Status() != 0 {
				// The header is already out; the best left is to cut the
				// response short rather than append an error body to it.
				panic(http.ErrAbortHandler)
			}
			writeError(ww, http.StatusInternalServerError, apperr.Internal, "internal error; request id "+RequestID(r.Context()))
		}()
		next.ServeHTTP(ww, r)
	})
}

// announceMode marks every response of a test-mode server.
func (s *Server) announceMode(next http.Handler) http.Handler {
	if s.mode != ModeTest {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(ModeHeader, ModeTest)
		next.ServeHTTP(w, r)
	})
}

// DefaultBodyReaders is how many requests may send a body at once when
// Config.BodyReaders is 0 (docs/limits.md, "The process guard").
const DefaultBodyReaders = 256

// bodyGate bounds the request bodies the process holds at once. A request
// with a body (a Content-Length over 0, or chunked) takes one of the
// server's body slots, reads its body whole (at most MaxBodyBytes) and holds
// the slot until it is answered; with every slot taken it is answered 503
// unavailable with Retry-After at once, before a byte of its body is read.
// So however many clients send bodies, the bytes held for them are at most
// BodyReaders × MaxBodyBytes, and the walks over them at most BodyReaders.
//
// The body is handed on as read: a later reader (decodeJSON, idempotent,
// the /mcp handler) reads it from memory and applies its own limit as
// before. A body longer than MaxBodyBytes, or whose reading failed, is
// handed on as what was read followed by the rest (or the error), so those
// refusals stay the operation's own. A declared Content-Length over the
// limit is refused by the input policy without reading, so it takes no
// slot; nor does a call the server makes to itself for a tool of /mcp,
// whose /mcp request holds one already.
func (s *Server) bodyGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 || r.ContentLength > MaxBodyBytes || servingMCP(r.Context()) {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case s.bodySlots <- struct{}{}:
		default:
			retry := s.now().Add(time.Second)
			e := apperr.New(apperr.Unavailable, "the server is reading as many request bodies as it allows at once (%d); retry shortly", cap(s.bodySlots))
			e.RetryAfter = &retry
			s.writeErr(w, r, e)
			return
		}
		defer func() { <-s.bodySlots }()
		size := int64(512)
		if r.ContentLength > 0 {
			size = r.ContentLength + 1 // one more, so that reading ends at EOF in one go
		}
		buf := bytes.NewBuffer(make([]byte, 0, size))
		_, err := buf.ReadFrom(io.LimitReader(r.Body, MaxBodyBytes+1))
		var rest io.Reader = r.Body
		if err != nil {
			rest = errReader{err}
		}
		read := buf.Len()
		r.Body = readCloser{io.MultiReader(buf, rest), r.Body}
		if err == nil && read <= MaxBodyBytes {
			r.ContentLength = int64(read)
		}
		next.ServeHTTP(w, r)
	})
}

type readCloser struct {
	io.Reader
	io.Closer
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
