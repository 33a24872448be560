package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/jsonbound"
	"github.com/xpromo/xpromo/server/openapi"
)

// MaxBodyBytes is the largest request body accepted (1 MiB).
const MaxBodyBytes = 1 << 20

// decodeJSON reads a JSON request body into dst strictly: the Content-Type
// must be application/json, the body at most 1 MiB, one JSON value with no
// fields dst does not define and every field of the right type. The input
// policy applies first (checkJSON): valid UTF-8 without NUL or lone
// surrogates, no field named twice, and each string and array within the
// bounds openapi.json gives the operation. Each failure is an *apperr.Error
// with its own code. An accepted body is usually read in one pass
// (decodeBody).
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	// The usual header exactly as written skips ParseMediaType's allocations.
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return apperr.New(apperr.UnsupportedMediaType, "the body must be sent with Content-Type: application/json")
		}
	}
	raw, err := readBody(w, r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return apperr.New(apperr.BodyTooLarge, "the body is larger than %d bytes", MaxBodyBytes)
		}
		return apperr.New(apperr.MalformedJSON, "the body could not be read: %v", err)
	}
	var schema *openapi.Schema
	if op := operationOf(r); op != nil {
		schema = op.Body
	}
	return decodeBody(raw, schema, dst)
}

// decodeBody decodes raw into dst under the input policy, in one pass
// (decodeFast) when the body is accepted and the one pass handles it, else
// in the two that word every refusal (decodeTwoPass).
//
// Both walks recurse per level of nesting, so the body's structure is
// bounded first (checkBound): no walk ever sees a body deeper, wider or with
// longer keys than jsonbound.Request.
func decodeBody(raw []byte, schema *openapi.Schema, dst any) error {
	if err := checkBound(raw); err != nil {
		return err
	}
	if decodeFast(raw, schema, dst) {
		return nil
	}
	// dst starts again from its zero value (every caller passes a zero
	// one), so nothing the one pass set can leak into it.
	if v := reflect.ValueOf(dst); v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().SetZero()
	}
	return decodeTwoPass(raw, schema, dst)
}

// decodeTwoPass is the input policy's walk over raw (checkJSON), then
// encoding/json's decode: the reference decodeFast is fuzzed against.
//
// It bounds the body's structure first too, as decodeBody does, so that the
// reference and the path it checks refuse the same bodies.
func decodeTwoPass(raw []byte, schema *openapi.Schema, dst any) error {
	if err := checkBound(raw); err != nil {
		return err
	}
	hard, soft := checkJSON(raw, schema)
	if hard != nil {
		return hard
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		// Exactly one value: anything but whitespace after it is malformed.
		if _, err2 := dec.Token(); err2 != io.EOF {
			return apperr.New(apperr.MalformedJSON, "the body must hold exactly one JSON value")
		}
		return soft
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		e := apperr.New(apperr.InvalidType, "field %q must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		e.Field = typeErr.Field
		return e
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		e := apperr.New(apperr.UnknownField, "unknown field %q", field)
		e.Field = field
		return e
	case errors.Is(err, io.EOF):
		return apperr.New(apperr.MalformedJSON, "the body is empty; a JSON object is required")
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.New(apperr.MalformedJSON, "the body is not valid JSON: %v", err)
	default:
		return apperr.New(apperr.MalformedJSON, "the body could not be read as JSON: %v", err)
	}
}

// checkBound applies jsonbound.Request to a JSON body (a request's, or a
// message to /mcp): the catalogued refusal of the first limit it breaks, or
// nil.
func checkBound(raw []byte) *apperr.Error {
	err := jsonbound.Check(raw, jsonbound.Request)
	if err == nil {
		return nil
	}
	var b *jsonbound.Error
	if !errors.As(err, &b) {
		return apperr.New(apperr.MalformedJSON, "the body is not valid JSON: %v", err)
	}
	switch b.Kind {
	case jsonbound.TooDeep:
		return apperr.New(apperr.JSONTooDeep, "the body nests arrays and objects deeper than %d levels (at byte %d)", b.Limit, b.Offset)
	case jsonbound.TooWide:
		return apperr.New(apperr.JSONTooWide, "the body holds more than %d values: arrays, objects, array items and object fields (at byte %d)", b.Limit, b.Offset)
	default:
		return apperr.New(apperr.JSONKeyTooLong, "the body has an object key longer than %d bytes (at byte %d)", b.Limit, b.Offset)
	}
}

// readBody reads the body, at most MaxBodyBytes, into a buffer sized by
// Content-Length when the client sent one (io.ReadAll would grow its buffer
// from 512 bytes).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if r.ContentLength <= 0 || r.ContentLength > MaxBodyBytes {
		return io.ReadAll(body)
	}
	// One byte more than declared, so that reading ends at EOF in one go.
	buf := make([]byte, 0, r.ContentLength+1)
	for {
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // a body longer than declared: grow
		}
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	default:
		return "an object"
	}
}

// StatusClientClosedRequest is nginx's status for a request whose client
// went away before the answer: it appears in the access log and the
// metrics, never on the wire.
const StatusClientClosedRequest = 499

// maxMessageRunes bounds an error message: messages quote what the client
// sent, and a client must not get a megabyte back, nor put one in the log.
const maxMessageRunes = 1000

// writeErr answers with err as the API's Error body. Errors without an
// application code are logged and answered as a 500 that reveals nothing,
// unless the client has gone: then the request is a client abort (INFO,
// status 499 in the access log) and no answer is written. A request that ran
// out of its deadline (--request-timeout) answers 503 unavailable, and every
// unavailable and idempotency_key_in_use answer carries retry_after and
// Retry-After.
//
// Only a failure that reaches the client is logged as an error: written
// into the recorder of a keyed request's run (runUnit), the log line waits
// for that answer to be sent, and a run that is retried drops it.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var e *apperr.Error
	isApp := errors.As(err, &e)
	if clientGone(r, err, isApp) {
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "client closed request", errAttr(err), attrRequestID(r.Context()))
		// Abort rather than write: nobody reads the answer, and an answer
		// written here would be stored for the request's Idempotency-Key
		// and replayed to the client's retry. net/http closes the
		// connection quietly; idempotent releases the key.
		panic(http.ErrAbortHandler)
	}
	if !isApp && errors.Is(err, context.DeadlineExceeded) && r.Context().Err() != nil {
		e, isApp = apperr.New(apperr.Unavailable, "the request did not finish within the server's deadline; retry after retry_after"), true
	}
	requestID := w.Header().Get(RequestIDHeader)
	if !isApp {
		s.logFailure(w, r, "internal error", slog.String("err", err.Error()), slog.String("request_id", requestID))
		writeError(w, http.StatusInternalServerError, apperr.Internal, "internal error; quote request id "+requestID)
		return
	}
	status := apperr.HTTPStatus(e)
	if status >= 500 {
		s.logFailure(w, r, "server error", slog.String("code", e.Code), slog.String("err", e.Message), slog.String("cause", errDetail(err)), slog.String("request_id", requestID))
	}
	retryAfter := e.RetryAfter
	if retryAfter == nil && (e.Code == apperr.Unavailable || e.Code == apperr.IdempotencyKeyInUse) {
		t := s.now().Add(unavailableRetryAfter)
		retryAfter = &t
	}
	body := errorBody{Error: errorDetail{Code: e.Code, Message: clip(e.Message)}}
	if retryAfter != nil {
		// RFC3339Nano keeps a fraction of a second when there is one, so
		// retry_after is never rounded earlier than the instant it names.
		ts := retryAfter.UTC().Format(time.RFC3339Nano)
		body.Error.RetryAfter = &ts
		// 409 idempotency_key_in_use too: its client is to come back, and
		// in a failover it meets one while the first attempt's instance
		// waits for the database.
		if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable || e.Code == apperr.IdempotencyKeyInUse {
			secs := max(1, int(retryAfter.Sub(s.now()).Seconds()+0.999))
			w.Header().Set("Retry-After", fmt.Sprint(secs))
		}
	}
	writeJSON(w, status, body)
}

// unavailableRetryAfter is the retry_after of an unavailable answer that
// names none: a failover takes seconds, and clients back off from there.
const unavailableRetryAfter = time.Second

// logFailure logs a 5xx answer at ERROR, now or, in a keyed request's run, once the answer is sent.
func (s *Server) logFailure(w http.ResponseWriter, r *http.Request, msg string, attrs ...slog.Attr) {
	ctx := r.Context()
	emit := func() { s.log.LogAttrs(ctx, levelError, msg, attrs...) }
	if rec, ok := w.(*recorder); ok && rec.deferLogs {
		rec.logs = append(rec.logs, emit)
		return
	}
	emit()
}

// errDetail is err's text with the causes an application error carries
// (the database error behind a 503), for the log; clients get the message.
func errDetail(err error) string {
	var parts []string
	var walk func(error)
	walk = func(err error) {
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case *apperr.Error:
		default:
			parts = append(parts, err.Error())
		}
	}
	walk(err)
	if len(parts) == 0 {
		return err.Error()
	}
	return strings.Join(parts, "; ")
}

// clientGone reports whether err is the failure of a request its client
// cancelled (it closed the connection): the request's context is cancelled
// and err is that cancellation, or an error without an application code.
func clientGone(r *http.Request, err error, isApp bool) bool {
	if !errors.Is(r.Context().Err(), context.Canceled) {
		return false
	}
	return !isApp || errors.Is(err, context.Canceled)
}

// clip shortens an error message to maxMessageRunes characters.
func clip(msg string) string {
	if utf8.RuneCountInString(msg) <= maxMessageRunes {
		return msg
	}
	n := 0
	for i := range msg {
		if n == maxMessageRunes {
			return msg[:i] + "…"
		}
		n++
	}
	return msg
}
