package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// eofReader is an input that closes eof when its reader reaches the end.
type eofReader struct {
	r    io.Reader
	once sync.Once
	eof  chan struct{}
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.once.Do(func() { close(e.eof) })
	}
	return n, err
}

// slowRateCard is an API whose rate card answers only once release is
// closed.
func slowRateCard(t *testing.T, release <-chan struct{}) string {
	t.Helper()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/rate-card" {
			http.NotFound(w, r)
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(xpromo.RateCard{
			Currency: "EUR", TakeRate: 0.3, CreditBonus: 1.2, ReservedFloorShare: 0.3, PricingModel: "floor_plus_second_price",
			Categories: []xpromo.RateCardCategory{{Key: "productivity", Label: "Productivity", FloorCentsMin: 100, FloorCentsMax: 300}},
		})
	}))
	t.Cleanup(api.Close)
	return api.URL
}

// stdioInput is an initialize, then calls get_rate_card calls with ids 2,
// 3, …; the last line has no newline when unterminated.
func stdioInput(calls int, unterminated bool) string {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}` + "\n")
	b.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := range calls {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_rate_card","arguments":{}}}`+"\n", i+2)
	}
	s := b.String()
	if unterminated {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

// answers decodes the responses on out by id.
func answers(t *testing.T, out []byte) map[int]json.RawMessage {
	t.Helper()
	got := map[int]json.RawMessage{}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		if m.ID == nil {
			continue // a notification
		}
		if m.Error != nil {
			t.Errorf("request %d answered with a JSON-RPC error: %s", *m.ID, m.Error)
		}
		got[*m.ID] = m.Result
	}
	return got
}

// TestStdioAnswersEveryCallAfterEOF pipes several tool calls, then ends the
// input while they are still waiting for the API: every call must still be
// answered with the API's answer, not cancelled (`unavailable`) or lost.
func TestStdioAnswersEveryCallAfterEOF(t *testing.T) {
	for _, unterminated := range []bool{false, true} {
		t.Run(fmt.Sprintf("unterminated=%v", unterminated), func(t *testing.T) {
			const calls = 8 // more than mcp-go's 5 tool workers
			release := make(chan struct{})
			s := New(xpromo.NewClient(slowRateCard(t, release), xpromo.WithRetries(0)))
			in := &eofReader{r: strings.NewReader(stdioInput(calls, unterminated)), eof: make(chan struct{})}
			go func() {
				<-in.eof // every call was read: the API answers only now
				close(release)
			}()
			var out bytes.Buffer
			done := make(chan error, 1)
			go func() { done <- s.ServeStdio(context.Background(), in, &out, nil) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Minute):
				t.Fatal("ServeStdio did not return after its input ended")
			}
			got := answers(t, out.Bytes())
			if _, ok := got[1]; !ok {
				t.Error("initialize was not answered")
			}
			for id := 2; id < 2+calls; id++ {
				res, ok := got[id]
				if !ok {
					t.Errorf("call %d was not answered", id)
					continue
				}
				var r struct {
					IsError           bool            `json:"isError"`
					StructuredContent json.RawMessage `json:"structuredContent"`
				}
				if err := json.Unmarshal(res, &r); err != nil {
					t.Fatal(err)
				}
				if r.IsError || !strings.Contains(string(r.StructuredContent), `"productivity"`) {
					t.Errorf("call %d: %s, want the rate card", id, res)
				}
			}
		})
	}
}

// TestStdioDrainIsBounded: a call the API never answers does not keep
// ServeStdio from returning once its input ended; the call is then
// cancelled.
func TestStdioDrainIsBounded(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	s := New(xpromo.NewClient(slowRateCard(t, never), xpromo.WithRetries(0)))
	s.drainTimeout = 50 * time.Millisecond
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- s.ServeStdio(context.Background(), strings.NewReader(stdioInput(1, false)), &out, nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ServeStdio waited for ever for a call the API never answers")
	}
}

func TestInflightPairsRequestsAndResponses(t *testing.T) {
	f := newInflight()
	f.read([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`))
	f.read([]byte(`{"jsonrpc":"2.0","id":"a","method":"ping"}`))
	f.read([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)) // no answer due
	f.read([]byte(`{"jsonrpc":"2.0","id":9,"result":{}}`))                   // the client's answer to the server
	f.read([]byte(`not json`))
	ctx := context.Background()
	if n := f.drain(ctx, time.Millisecond); n != 2 {
		t.Fatalf("pending %d, want 2", n)
	}
	f.wrote([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`))
	f.wrote([]byte(`{"jsonrpc":"2.0","id":7.0,"result":{}}`))
	if n := f.drain(ctx, time.Millisecond); n != 1 {
		t.Fatalf("pending %d, want 1", n)
	}
	f.wrote([]byte(`{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"x"}}`))
	if n := f.drain(ctx, time.Millisecond); n != 0 {
		t.Fatalf("pending %d, want 0", n)
	}
}
