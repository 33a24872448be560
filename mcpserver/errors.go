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

// A tool that fails answers a tool error (isError: true) whose
// structuredContent is the API's Error body, so that an agent can act on the
// stable code and on retry_after:
//
//	{"error": {"code": "below_minimum", "message": "…", "retry_after": null, "request_id": "req_…"}}
//
// The text content carries the same JSON, for clients that read only text.

// Codes for failures that never got an answer from the API (they are in the
// API's catalogue too).
const (
	codeUnavailable = xpromo.CodeUnavailable // the API could not be reached
	codeInternal    = xpromo.CodeInternal    // an answer the tool could not use
)

// toolError is the structuredContent of a tool error.
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

// errorResult is the tool error for a failed call of the REST API.
func errorResult(err error) *mcp.CallToolResult {
	var body errorBody
	var e *xpromo.Error
	switch {
	case errors.As(err, &e):
		body = errorBody{Code: e.Code, Message: e.Message, RetryAfter: e.RetryAfter, RequestID: e.RequestID}
		if body.Code == "" {
			// Not the API's Error body (a proxy's page, say).
			body.Code = codeInternal
			if e.Status == http.StatusBadGateway || e.Status == http.StatusServiceUnavailable || e.Status == http.StatusGatewayTimeout {
				body.Code = codeUnavailable
			}
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		body = errorBody{Code: codeUnavailable, Message: "the call was cancelled or timed out before the API answered: " + err.Error()}
	default:
		// Connection refused, DNS, TLS…: the SDK already retried.
		body = errorBody{Code: codeUnavailable, Message: "the xpromo API could not be reached: " + err.Error()}
	}
	return newErrorResult(body)
}

func newErrorResult(body errorBody) *mcp.CallToolResult {
	te := toolError{Error: body}
	text, _ := json.Marshal(te)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(text))},
		StructuredContent: te,
		IsError:           true,
	}
}

// Prefixes of the messages of the tool errors mcp-go makes itself
// (server/input_validation.go, output_validation.go).
const (
	inputRefusedPrefix  = "input schema validation failed"
	outputRefusedPrefix = "output schema validation failed"
	argumentsPrefix     = "invalid arguments"
)

// explainRefusal turns a tool error made by mcp-go itself (it refused the
// arguments, or a tool's answer broke its output schema) into the same
// error shape as the API's, with the API's code for the mistake. Tool
// errors of the tools themselves always carry structuredContent and are
// left alone.
func (s *Server) explainRefusal(_ context.Context, _ any, req *mcp.CallToolRequest, result any) {
	r, ok := result.(*mcp.CallToolResult)
	if !ok || r == nil || !r.IsError || r.StructuredContent != nil {
		return
	}
	text := ""
	if len(r.Content) > 0 {
		if tc, ok := mcp.AsTextContent(r.Content[0]); ok {
			text = tc.Text
		}
	}
	var body errorBody
	switch {
	case strings.HasPrefix(text, inputRefusedPrefix), strings.HasPrefix(text, argumentsPrefix):
		body = s.refusedArguments(req, text)
	case strings.HasPrefix(text, outputRefusedPrefix):
		body = errorBody{Code: codeInternal, Message: "the API's answer does not match this tool's output schema: " + text}
	default:
		return
	}
	*r = *newErrorResult(body)
}

// refusedArguments names the argument mcp-go's validation refused, with the
// API's code. If it cannot be found again (it should always be), the
// validator's own message is passed on with the code of a malformed value.
func (s *Server) refusedArguments(req *mcp.CallToolRequest, validatorMessage string) errorBody {
	t, ok := s.tools[req.Params.Name]
	if !ok {
		return errorBody{Code: codeInvalidType, Message: validatorMessage}
	}
	args, err := decodeArguments(req.GetRawArguments())
	if err != nil {
		return errorBody{Code: codeInvalidType, Message: err.Error()}
	}
	if v, ok := firstViolation(t.params, args); ok {
		return errorBody{Code: v.code, Message: v.message}
	}
	return errorBody{Code: codeInvalidType, Message: validatorMessage}
}
