package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"
)

// DefaultStdioDrainTimeout bounds how long ServeStdio, once its input has
// ended, waits for the calls still in flight to answer: long enough for a
// REST call and its retries, short enough that a stuck call cannot keep
// the process alive.
const DefaultStdioDrainTimeout = 60 * time.Second

// The stdio transport of mcp-go (v1.2.1) cancels the context of every
// request still being served as soon as its input ends, and stops its
// tool workers: `printf '…' | xpromo-mcp` lost the last calls, which
// answered `unavailable` (their REST call was cancelled) or nothing at all.
// ServeStdio therefore hands it an input that reports its end only after
// every request read from it has been answered on the output (or the drain
// timeout passed): inflight pairs the requests with their responses by
// JSON-RPC id.

// inflight counts the requests read and not yet answered, by JSON-RPC id.
type inflight struct {
	mu      sync.Mutex
	pending map[string]int
	changed chan struct{} // closed and replaced when a request is answered
}

func newInflight() *inflight {
	return &inflight{pending: map[string]int{}, changed: make(chan struct{})}
}

// rpcMessage is what inflight reads of a JSON-RPC message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// messages decodes a line: one message, or a batch of them.
func messages(line []byte) []rpcMessage {
	line = bytes.TrimSpace(line)
	var batch []rpcMessage
	if len(line) > 0 && line[0] == '[' {
		if json.Unmarshal(line, &batch) != nil {
			return nil
		}
		return batch
	}
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return []rpcMessage{m}
}

// idKey is the id as the server echoes it: 7 and 7.0 are one id.
func idKey(raw json.RawMessage) (string, bool) {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v == nil {
		return "", false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// read notes the requests of a line the client sent.
func (f *inflight) read(line []byte) {
	for _, m := range messages(line) {
		if m.Method == nil {
			continue // a response to a request of the server, or garbage
		}
		if k, ok := idKey(m.ID); ok {
			f.mu.Lock()
			f.pending[k]++
			f.mu.Unlock()
		}
	}
}

// wrote notes the responses of a line the server wrote.
func (f *inflight) wrote(line []byte) {
	for _, m := range messages(line) {
		if m.Method != nil || (m.Result == nil && m.Error == nil) {
			continue // a notification or a request of the server
		}
		k, ok := idKey(m.ID)
		if !ok {
			continue
		}
		f.mu.Lock()
		if f.pending[k] > 0 {
			if f.pending[k]--; f.pending[k] == 0 {
				delete(f.pending, k)
			}
			close(f.changed)
			f.changed = make(chan struct{})
		}
		f.mu.Unlock()
	}
}

// drain waits until every request read was answered, ctx is done or
// timeout passed; it returns how many are still unanswered.
func (f *inflight) drain(ctx context.Context, timeout time.Duration) int {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		n, changed := 0, f.changed
		for _, c := range f.pending {
			n += c
		}
		f.mu.Unlock()
		if n == 0 {
			return 0
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return n
		case <-deadline.C:
			return n
		}
	}
}

// drainingReader passes the client's input through line by line, noting
// its requests, and reports its end only after drain.
type drainingReader struct {
	ctx     context.Context
	src     *bufio.Reader
	calls   *inflight
	timeout time.Duration
	log     *slog.Logger

	line []byte // the rest of the line being passed on
	err  error  // the input's end (or failure), reported once line is passed on
}

func (r *drainingReader) Read(p []byte) (int, error) {
	if len(r.line) == 0 {
		if r.err != nil {
			return 0, r.finish()
		}
		line, err := r.src.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] != '\n' {
			// The last line had no newline: mcp-go would drop it.
			line = append(line, '\n')
		}
		r.calls.read(line)
		r.line, r.err = line, err
		if len(line) == 0 {
			return 0, r.finish()
		}
	}
	n := copy(p, r.line)
	r.line = r.line[n:]
	return n, nil
}

// finish reports the input's end: at EOF, once the calls in flight are
// answered.
func (r *drainingReader) finish() error {
	if errors.Is(r.err, io.EOF) {
		if left := r.calls.drain(r.ctx, r.timeout); left > 0 && r.ctx.Err() == nil {
			r.log.Warn("input ended; calls still unanswered after the drain timeout are abandoned", "calls", left, "timeout", r.timeout)
		}
	}
	return r.err
}

// answerWriter passes the server's output through, noting its responses
// once each line is written.
type answerWriter struct {
	mu    sync.Mutex
	dst   io.Writer
	calls *inflight
	part  []byte // a line written in several pieces, so far
}

func (w *answerWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.dst.Write(p)
	w.part = append(w.part, p[:n]...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		w.calls.wrote(w.part[:i])
		w.part = append(w.part[:0], w.part[i+1:]...)
	}
	return n, err
}
