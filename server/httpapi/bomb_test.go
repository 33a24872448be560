package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/jsonbound"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// Issue 29: a JSON body built to exhaust the server (nested 50,000 deep,
// 20,000 wide, with a key of 300 bytes, or with 20,000 keys) sent to every
// operation of openapi.json and to /mcp, on both stores, is answered a 4xx
// with a catalogued code, and the memory the server allocates for it is
// bounded by a small multiple of its size.

// bomb is one body of a class of issue 29.
type bomb struct {
	name, body, code string // code: the refusal of an operation that takes a body
}

func bombs() []bomb {
	keys := make([]string, 20_000)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d":0`, i)
	}
	return []bomb{
		// The body of the issue: 100 KB, far under the body limit.
		{"depth (arrays)", strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000), apperr.JSONTooDeep},
		{"depth (objects)", strings.Repeat(`{"a":`, 10_000) + "1" + strings.Repeat("}", 10_000), apperr.JSONTooDeep},
		{"width (items)", `{"a":[` + strings.Repeat("0,", 20_000) + `0]}`, apperr.JSONTooWide},
		{"width (keys)", "{" + strings.Join(keys, ",") + "}", apperr.JSONTooWide},
		{"long key", `{"` + strings.Repeat("k", 300) + `":1}`, apperr.JSONKeyTooLong},
		{"long nested key", `{"a":[{"` + strings.Repeat("é", 200) + `":1}]}`, apperr.JSONKeyTooLong},
	}
}

// allocBound is what the test lets the process allocate for one bomb
// request, server and client together: 512 KiB of fixed cost (routing,
// connection, logging, the answer) and 4 times the body (the client's copy,
// the server's buffer, and a margin). The walk of issue 29 allocated over a
// gigabyte for the 100 KB body.
func allocBound(body string) uint64 { return 512<<10 + 4*uint64(len(body)) }

// allocated runs f and returns the bytes the process allocated meanwhile
// (runtime.MemStats.TotalAlloc, after a collection): an upper bound on how
// far the heap can have grown, whatever the timing.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestJSONBombs(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newInputEnv(t, s)
		plain := &http.Client{} // /mcp is not in openapi.json, and the bombs' answers are checked here
		send := func(method, path, auth, body string) (int, string) {
			req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if auth != "" {
				req.Header.Set("Authorization", "Bearer "+auth)
			}
			res, err := plain.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			return res.StatusCode, string(b)
		}
		refusedAs := func(what string, status int, body string, wantStatus int, wantCode string) {
			t.Helper()
			if !assert.True(t, status >= 400 && status < 500, "%s answered %d: %.300s", what, status, body) {
				return
			}
			var er xpromo.ErrorResponse
			if assert.NoError(t, json.Unmarshal([]byte(body), &er), "%s: %.300s", what, body) {
				assert.Equal(t, wantStatus, status, "%s: %.300s", what, body)
				assert.Equal(t, wantCode, er.Error.Code, "%s: %s", what, er.Error.Message)
			}
		}

		ops := operations(t)
		for _, b := range bombs() {
			var n int
			used := allocated(func() {
				for _, op := range ops {
					status, body := send(op.Method, e.target(op, "", ""), e.credentials(op), b.body)
					n++
					if op.Body == nil {
						refusedAs(op.ID+" "+b.name, status, body, 400, apperr.BodyNotAllowed)
					} else {
						refusedAs(op.ID+" "+b.name, status, body, 400, b.code)
					}
				}
				// /mcp answers a JSON-RPC error carrying the same code.
				status, body := send("POST", "/mcp", e.key, b.body)
				n++
				assert.Equal(t, 400, status, "/mcp %s: %.300s", b.name, body)
				var rpc struct {
					ID    *json.RawMessage `json:"id"`
					Error struct {
						Code int `json:"code"`
						Data struct {
							Code string `json:"code"`
						} `json:"data"`
					} `json:"error"`
				}
				if assert.NoError(t, json.Unmarshal([]byte(body), &rpc), "/mcp %s: %.300s", b.name, body) {
					assert.Equal(t, -32600, rpc.Error.Code, "/mcp %s: %s", b.name, body)
					assert.Equal(t, b.code, rpc.Error.Data.Code, "/mcp %s: %s", b.name, body)
				}
			})
			bound := uint64(n) * allocBound(b.body)
			t.Logf("%s (%d bytes) to %d operations and /mcp: %d KiB allocated (bound %d KiB)", b.name, len(b.body), n-1, used>>10, bound>>10)
			assert.LessOrEqual(t, used, bound, "%s: the process allocated %d bytes for %d requests", b.name, used, n)
		}

		// The body of the issue from 16 connections at once, 8 times each,
		// to a public operation and to /mcp.
		depth := bombs()[0].body
		const conns, each = 16, 8
		used := allocated(func() {
			var wg sync.WaitGroup
			for c := range conns {
				wg.Go(func() {
					for i := range each {
						path := "/v1/apps"
						if (c+i)%2 == 1 {
							path = "/mcp"
						}
						status, body := send("POST", path, "", depth)
						assert.Equal(t, 400, status, "%s: %.300s", path, body)
						assert.Contains(t, body, apperr.JSONTooDeep, path)
					}
				})
			}
			wg.Wait()
		})
		bound := conns * each * allocBound(depth)
		t.Logf("the depth bomb from %d connections × %d: %d KiB allocated (bound %d KiB)", conns, each, used>>10, bound>>10)
		assert.LessOrEqual(t, used, bound)

		// A batch is one message too many for /mcp; a single message within
		// the limits still reaches the MCP server.
		status, body := send("POST", "/mcp", "", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`)
		assert.Equal(t, 400, status, body)
		assert.Contains(t, body, "batch")
		status, body = send("POST", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		assert.Equal(t, 200, status, body)
		assert.Contains(t, body, `"result"`)
	})
}

// The limits the bombs break are the ones the documents state.
func TestJSONBombLimits(t *testing.T) {
	assert.Equal(t, jsonbound.Limits{MaxDepth: 32, MaxValues: 10_000, MaxKeyBytes: 256}, jsonbound.Request)
}
