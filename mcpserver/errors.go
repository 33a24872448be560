package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// A tool that fails answers a tool error: isError true, and one text
// content holding the API's Error body, so that an agent (and a person in
// an MCP client) reads the stable code, the message and retry_after:
//
//	{"error": {"code": "below_minimum", "message": "…", "retry_after": null, "request_id": "req_…"}}
//
// There is no structuredContent: a tool's output schema describes its
// answer, not the Error body, and a strict client rejects structured
// content that breaks the schema. The code and message are the API's, for
// every mistake the API can see (see arguments.go).

// Codes for failures that never got an answer from the API (they are in the
// API's catalogue too).
const (
	codeUnavailable  = xpromo.CodeUnavailable // the API could not be reached
	codeInternal     = xpromo.CodeInternal    // an answer the tool could not use
	codeUnauthorized = "unauthorized"
)

// toolError is the text content of a tool error: the REST Error body.
type toolError struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code       string     `json:"code"`
	Message    string     `json:"message"`
	RetryAfter *time.Time `json:"retry_after"`
	// RequestID is the server's X-Request-Id, when the API answered.
	RequestID string `json:"request_id,omitempty"`
}

// errorBodyOf is the Error body for a failed call of the REST API.
func errorBodyOf(err error) errorBody {
	var e *xpromo.Error
	var bad badArgument
	switch {
	case errors.As(err, &bad):
		return errorBody{Code: bad.code, Message: bad.message}
	case errors.As(err, &e):
		body := errorBody{Code: e.Code, Message: e.Message, RetryAfter: e.RetryAfter, RequestID: e.RequestID}
		if body.Code == "" {
			// Not the API's Error body (a proxy's page, say).
			body.Code = codeInternal
			if e.Status == http.StatusBadGateway || e.Status == http.StatusServiceUnavailable || e.Status == http.StatusGatewayTimeout {
				body.Code = codeUnavailable
			}
		}
		return body
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errorBody{Code: codeUnavailable, Message: "the call was cancelled or timed out before the API answered: " + err.Error()}
	default:
		// Connection refused, DNS, TLS…: the SDK already retried.
		return errorBody{Code: codeUnavailable, Message: "the xpromo API could not be reached: " + err.Error()}
	}
}

func newErrorResult(body errorBody) *mcp.CallToolResult {
	text, _ := json.Marshal(toolError{Error: body})
	return &mcp.CallToolResult{
		Content: []mcp.Content{mcp.NewTextContent(string(text))},
		IsError: true,
	}
}

// missingKeyMessage replaces the API's unauthorized message for a session
// without a key (stdio): the API tells a REST caller to send an
// Authorization header, which an agent talking to xpromo-mcp cannot do.
const missingKeyMessage = "this tool needs the app's API key, and this session has none: " +
	"set XPROMO_API_KEY in the environment of xpromo-mcp (the MCP client's server configuration) to the key register_app issued, " +
	"or call register_app, which issues one"

// badKeyMessage is the same for a session whose key the API refused.
const badKeyMessage = "the API key of this session (XPROMO_API_KEY of xpromo-mcp) is not valid: " +
	"set it to the key register_app issued (rotated keys stop working), or call register_app for a new app"

// forSession words an unauthorized answer for a caller using the session's
// key rather than credentials of its own.
func (s *Server) forSession(body errorBody, c caller) errorBody {
	if !c.session || body.Code != codeUnauthorized {
		return body
	}
	if c.key == "" {
		body.Message = missingKeyMessage
		if s.rememberIssuedKey {
			body.Message += " (this session then uses it)"
		}
	} else {
		body.Message = badKeyMessage
	}
	return body
}

// Prefix of the message of the tool error mcp-go makes itself when a tool's
// answer breaks its output schema (server/output_validation.go).
const outputRefusedPrefix = "output schema validation failed"

// explainRefusal turns the tool error mcp-go makes itself when an answer
// breaks the tool's output schema into the API's error shape, code
// internal. Tool errors of the tools themselves are left alone.
func (s *Server) explainRefusal(_ context.Context, _ any, _ *mcp.CallToolRequest, result any) {
	r, ok := result.(*mcp.CallToolResult)
	if !ok || r == nil || !r.IsError || len(r.Content) == 0 {
		return
	}
	tc, ok := mcp.AsTextContent(r.Content[0])
	if !ok || !strings.HasPrefix(tc.Text, outputRefusedPrefix) {
		return
	}
	*r = *newErrorResult(errorBody{Code: codeInternal, Message: "the API's answer does not match this tool's output schema: " + tc.Text})
}
