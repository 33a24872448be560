package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/server/apperr"
)

// The MCP endpoint. The tools (package mcpserver) call the REST API through
// the SDK client; on the reference server that client's transport is
// InProcessTransport, which hands each request to this server's own router:
// the same middleware, handlers and error bodies as a REST caller gets, with
// no network hop.

// mcpRequestKey marks a request served on behalf of a request to /mcp; its
// value is that /mcp request.
type mcpRequestKey struct{}

// MountMCP mounts the MCP endpoint h (the Streamable HTTP transport: POST,
// and DELETE to end a session) at /mcp, behind realIP, identify and rateLimit like
// /v1: each request to /mcp counts once against the caller's budget (per
// key, else per IP; as a write, since it is a POST). The REST call its tool
// makes in-process is not counted a second time (see rateLimit).
//
// The body is bounded like a REST body before h (mcp-go, which reads it
// whole and decodes it with encoding/json) sees it (checkMCPBody): at most
// MaxBodyBytes, within jsonbound.Request, and one JSON-RPC message, not a
// batch. A refusal is a JSON-RPC error without id, as the MCP specification
// has a server answer a message it cannot take (docs/mcp.md). Authentication
// is the REST API's: h passes the request's Authorization header through to
// the REST call, which refuses a bad key with 401 unauthorized as a tool
// error.
func (s *Server) MountMCP(h http.Handler) {
	serve := func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			raw, status, refusal := readMCPBody(w, r)
			if refusal != nil {
				writeMCPRefusal(w, status, refusal)
				return
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
		} else {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), mcpRequestKey{}, r)))
	}
	mcp := s.router.With(s.realIP, s.identify, s.rateLimit)
	mcp.Post("/mcp", serve)
	mcp.Delete("/mcp", serve)
}

// JSON-RPC 2.0's error codes for a message that is not JSON and one that is
// not a valid request.
const (
	jsonRPCParseError     = -32700
	jsonRPCInvalidRequest = -32600
)

// mcpRefusal is a JSON-RPC error answering a body /mcp does not take. Its
// data carries the catalogued code the REST API would answer (json_too_deep,
// body_too_large, …), when there is one.
type mcpRefusal struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    *struct {
		Code string `json:"code"`
	} `json:"data,omitempty"`
}

// readMCPBody reads the body of a POST to /mcp and checks it: at most
// MaxBodyBytes (413), within jsonbound.Request (400), and one message, not
// a JSON-RPC batch (400): MCP's Streamable HTTP transport sends one message
// per POST since revision 2025-06-18, and mcp-go takes no batch, so the
// bound on a batch is one.
func readMCPBody(w http.ResponseWriter, r *http.Request) ([]byte, int, *mcpRefusal) {
	raw, err := readBody(w, r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, http.StatusRequestEntityTooLarge, newMCPRefusal(jsonRPCInvalidRequest, apperr.BodyTooLarge, fmt.Sprintf("the request body is larger than %d bytes", MaxBodyBytes))
		}
		return nil, http.StatusBadRequest, newMCPRefusal(jsonRPCParseError, "", "the request body could not be read: "+err.Error())
	}
	if e := checkBound(raw); e != nil {
		return nil, http.StatusBadRequest, newMCPRefusal(jsonRPCInvalidRequest, e.Code, e.Message)
	}
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		return nil, http.StatusBadRequest, newMCPRefusal(jsonRPCInvalidRequest, "", "a JSON-RPC batch is not accepted: send one message per POST (MCP Streamable HTTP, revision 2025-06-18 and later)")
	}
	return raw, 0, nil
}

func newMCPRefusal(rpcCode int, code, message string) *mcpRefusal {
	m := &mcpRefusal{Code: rpcCode, Message: message}
	if code != "" {
		m.Data = &struct {
			Code string `json:"code"`
		}{code}
	}
	return m
}

// writeMCPRefusal answers status with a JSON-RPC error response whose id is
// null: the message it refuses was never read.
func writeMCPRefusal(w http.ResponseWriter, status int, m *mcpRefusal) {
	writeJSON(w, status, struct {
		JSONRPC string      `json:"jsonrpc"`
		ID      *int        `json:"id"`
		Error   *mcpRefusal `json:"error"`
	}{"2.0", nil, m})
}

// servingMCP reports whether ctx belongs to a REST call made for a request
// to /mcp, which was rate limited already.
func servingMCP(ctx context.Context) bool {
	_, ok := ctx.Value(mcpRequestKey{}).(*http.Request)
	return ok
}

// InProcessTransport returns an http.RoundTripper that answers each request
// with this server's own router, in the calling goroutine: for an SDK
// client inside the server (the MCP tools). The request's scheme and host
// are ignored. Made while serving a request to /mcp, the call carries that
// request's client address (rate limits and idempotency scopes of
// unauthenticated calls), Host (links the server hands out, when no BaseURL
// is configured) and request id (so both appear under one id in the logs).
func (s *Server) InProcessTransport() http.RoundTripper { return inProcess{s} }

type inProcess struct{ s *Server }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	// The call starts afresh in the router: without the routing state of
	// the /mcp request it may have been made for (chi would take a request
	// that carries it for one routed to a sub-router).
	ctx := context.WithValue(req.Context(), chi.RouteCtxKey, (*chi.Context)(nil))
	in := req.Clone(ctx)
	in.RemoteAddr = "127.0.0.1:0"
	if outer, ok := ctx.Value(mcpRequestKey{}).(*http.Request); ok {
		in.RemoteAddr, in.Host, in.TLS = outer.RemoteAddr, outer.Host, outer.TLS
		if id := RequestID(ctx); id != "" && in.Header.Get(RequestIDHeader) == "" {
			in.Header.Set(RequestIDHeader, id)
		}
	}
	in.RequestURI = in.URL.RequestURI()
	if in.Body == nil {
		in.Body = http.NoBody
	}
	w := &recorder{header: http.Header{}}
	err := t.serve(w, in)
	if req.Body != nil {
		req.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          io.NopCloser(bytes.NewReader(w.body.Bytes())),
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}, nil
}

// serve runs the router; a response aborted because the caller went away
// (http.ErrAbortHandler, see writeErr) is the transport error a network
// client would get: the context's.
func (t inProcess) serve(w http.ResponseWriter, r *http.Request) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler || r.Context().Err() == nil {
				panic(p)
			}
			err = r.Context().Err()
		}
	}()
	t.s.ServeHTTP(w, r)
	return nil
}
