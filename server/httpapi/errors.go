package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/server/apperr"
)

// errorBody is the API's Error shape: {"error":{"code","message","retry_after"}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfter is an RFC 3339 date-time, or null; always present.
	RetryAfter *string `json:"retry_after"`
}

// writeError answers with the JSON error body and no retry_after. code is
// one of server/apperr's catalogued codes (the tests check that status
// matches the catalogue).
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: clip(message)}})
}

// writeJSON encodes v as the response body. Encoding errors after the header
// is sent cannot be reported to the client, so they are dropped: the values
// written here are plain structs that always encode.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, apperr.NotFound, "no route for "+r.URL.Path)
}

// methodsToTry are the methods reported in Allow on a 405.
var methodsToTry = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

// methodNotAllowed answers 405 with the Allow header RFC 9110 requires. chi
// does not hand the allowed methods to a custom handler, so they are found by
// matching the path against the root router once per method.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	var allowed []string
	for _, m := range methodsToTry {
		if s.router.Match(chi.NewRouteContext(), m, path) {
			allowed = append(allowed, m)
		} else if m == http.MethodHead && s.router.Match(chi.NewRouteContext(), http.MethodGet, path) {
			allowed = append(allowed, m) // served by the GetHead middleware
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
	}
	writeError(w, http.StatusMethodNotAllowed, apperr.MethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path)
}
