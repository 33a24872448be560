package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
)

// MaxBodyBytes is the largest request body accepted (1 MiB).
const MaxBodyBytes = 1 << 20

// decodeJSON reads a JSON request body into dst strictly: the Content-Type
// must be application/json, the body at most 1 MiB, one JSON value with no
// fields dst does not define and every field of the right type. Each failure
// is an *apperr.Error with its own code.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return apperr.New(apperr.UnsupportedMediaType, "the body must be sent with Content-Type: application/json")
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		// Exactly one value: anything but whitespace after it is malformed.
		if _, err2 := dec.Token(); err2 != io.EOF {
			return apperr.New(apperr.MalformedJSON, "the body must hold exactly one JSON value")
		}
		return nil
	}
	var tooLarge *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &tooLarge):
		return apperr.New(apperr.BodyTooLarge, "the body is larger than %d bytes", MaxBodyBytes)
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

// writeErr answers with err as the API's Error body. Errors without an
// application code are logged and answered as a 500 that reveals nothing.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var e *apperr.Error
	if !errors.As(err, &e) {
		s.log.ErrorContext(r.Context(), "internal error", "err", err, "request_id", w.Header().Get(RequestIDHeader))
		writeError(w, http.StatusInternalServerError, apperr.Internal, "internal error; quote request id "+w.Header().Get(RequestIDHeader))
		return
	}
	status := apperr.HTTPStatus(e)
	if status >= 500 {
		s.log.ErrorContext(r.Context(), "server error", "code", e.Code, "err", e.Message, "request_id", w.Header().Get(RequestIDHeader))
	}
	body := errorBody{Error: errorDetail{Code: e.Code, Message: e.Message}}
	if e.RetryAfter != nil {
		// RFC3339Nano keeps a fraction of a second when there is one, so
		// retry_after is never rounded earlier than the instant it names.
		ts := e.RetryAfter.UTC().Format(time.RFC3339Nano)
		body.Error.RetryAfter = &ts
		if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
			secs := max(1, int(e.RetryAfter.Sub(s.now()).Seconds()+0.999))
			w.Header().Set("Retry-After", fmt.Sprint(secs))
		}
	}
	writeJSON(w, status, body)
}
