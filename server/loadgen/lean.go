package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// The lean generator: what wrk does, in Go. Each worker holds one
// keep-alive connection and writes requests serialized ahead of the run,
// then reads each answer with net/http's parser; nothing is marshaled,
// signed or decoded while the clock runs. It measures the server, not the
// client: the SDK's client (JSON both ways, retries, options) costs as much
// CPU per request as the fill path itself, on the same cores.

// LeanRequest is one request, serialized ahead.
type LeanRequest struct {
	Method string
	Path   string // with the query, if any
	Header http.Header
	Body   []byte
}

// BlastConfig is one lean run.
type BlastConfig struct {
	URL         string // the server's base URL: http://host:port
	Requests    []LeanRequest
	Concurrency int
	Duration    time.Duration
	// OK tells a successful answer from its status and body; nil: any 2xx.
	OK func(status int, body []byte) bool
}

// Blast sends cfg.Requests in turn from cfg.Concurrency connections for
// cfg.Duration, as fast as the server answers, and reports as Run does:
// the latency of every request, from its first byte written to its
// answer's last byte read.
func Blast(ctx context.Context, op string, cfg BlastConfig) (OpStats, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return OpStats{}, fmt.Errorf("loadgen: the lean generator needs an http:// base URL, not %q", cfg.URL)
	}
	if len(cfg.Requests) == 0 {
		return OpStats{}, fmt.Errorf("loadgen: no request to send")
	}
	wire := make([][]byte, len(cfg.Requests))
	for i, r := range cfg.Requests {
		wire[i] = serialize(u.Host, r)
	}
	ok := cfg.OK
	if ok == nil {
		ok = func(status int, _ []byte) bool { return status/100 == 2 }
	}
	conc := max(cfg.Concurrency, 1)
	// Canceled by a timer, not a deadline: a deadline would also reach the
	// dialer, which could then fail an instant before ctx reports Err, and
	// count the run's own end as the server's error.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	time.AfterFunc(cfg.Duration, cancel)

	type sample struct {
		d   time.Duration
		err error
	}
	perWorker := make([][]sample, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conc {
		wg.Go(func() {
			var conn net.Conn
			var br *bufio.Reader
			defer func() {
				if conn != nil {
					conn.Close()
				}
			}()
			var body bytes.Buffer
			for i := w; ctx.Err() == nil; i += conc {
				if conn == nil {
					c, err := (&net.Dialer{}).DialContext(ctx, "tcp", u.Host)
					if err != nil {
						if ctx.Err() == nil {
							perWorker[w] = append(perWorker[w], sample{err: err})
						}
						return
					}
					conn, br = c, bufio.NewReaderSize(c, 16<<10)
					context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) }) // unblock at the end
				}
				t0 := time.Now()
				status, closing, err := roundTrip(conn, br, wire[i%len(wire)], &body)
				d := time.Since(t0)
				if ctx.Err() != nil {
					return // cut by the end of the run: not the server's answer
				}
				if err == nil && !ok(status, body.Bytes()) {
					err = &statusError{status}
				}
				perWorker[w] = append(perWorker[w], sample{d, err})
				if err != nil || closing {
					conn.Close()
					conn = nil
				}
			}
		})
	}
	wg.Wait()
	measured := time.Since(start)
	rec := NewRecorder()
	for _, ss := range perWorker {
		for _, s := range ss {
			rec.Record(op, s.d, s.err)
		}
	}
	stats := rec.Stats(measured)
	if len(stats) == 0 {
		return OpStats{Op: op}, fmt.Errorf("loadgen: no request answered")
	}
	return stats[0], nil
}

func serialize(host string, r LeanRequest) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: xpromo-loadgen-lean\r\n", r.Method, r.Path, host)
	for k, vs := range r.Header {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	if r.Body != nil {
		b.WriteString("Content-Length: " + strconv.Itoa(len(r.Body)) + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(r.Body)
	return b.Bytes()
}

// roundTrip writes one serialized request and reads its answer into body.
func roundTrip(conn net.Conn, br *bufio.Reader, req []byte, body *bytes.Buffer) (status int, closing bool, err error) {
	if _, err := conn.Write(req); err != nil {
		return 0, true, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, true, err
	}
	body.Reset()
	_, err = io.Copy(body, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Close, err
}

// statusError is an answer the lean generator's OK refused.
type statusError struct{ status int }

func (e *statusError) Error() string { return "HTTP " + strconv.Itoa(e.status) }
