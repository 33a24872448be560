package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// The failover test (server/failovertest) runs the same load against
// several server instances on one database and breaks the database
// instead of the server: Config.Fault, Config.Instances and
// Config.Observe. Without them a run is the crash test as before.

// FaultResult is what a Config.Fault did, for the cycle's line.
type FaultResult struct {
	// Summary is printed in the cycle's line.
	Summary string
}

// Response is one answer (or transport failure) an instance gave the
// harness's clients, as Config.Observe sees it.
type Response struct {
	Sent     time.Time // when the request went out
	At       time.Time // when its answer (or failure) came
	Instance int       // 0-based
	Method   string
	Path     string
	Status   int    // 0: no answer (Err)
	Code     string // the Error body's code, for 4xx and 5xx
	// RetryAfter: the answer carried a Retry-After header.
	RetryAfter bool
	Err        string
}

// pinKey pins a request to one instance (contexts of the clock moves).
type pinKey struct{}

// spread is the clients' transport with several instances: requests go
// to them in turn (or to the one their context pins), and every answer is
// reported to observe.
type spread struct {
	next    http.RoundTripper
	hosts   []string // host:port of each instance
	turn    atomic.Uint64
	observe func(Response)
}

func (s *spread) RoundTrip(req *http.Request) (*http.Response, error) {
	i, pinned := req.Context().Value(pinKey{}).(int)
	if !pinned {
		i = int(s.turn.Add(1) % uint64(len(s.hosts)))
	}
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = s.hosts[i], s.hosts[i]
	sent := time.Now()
	resp, err := s.next.RoundTrip(req)
	if s.observe == nil {
		return resp, err
	}
	r := Response{Sent: sent, At: time.Now(), Instance: i, Method: req.Method, Path: req.URL.Path}
	if err != nil {
		r.Err = err.Error()
		s.observe(r)
		return resp, err
	}
	r.Status, r.RetryAfter = resp.StatusCode, resp.Header.Get("Retry-After") != ""
	if resp.StatusCode >= 400 {
		// The code is in the Error body; read it (bounded) and hand the
		// client the same bytes.
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil {
			r.Code = e.Error.Code
		}
		if rerr != nil {
			r.Err = rerr.Error()
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	s.observe(r)
	return resp, nil
}

// syncClocks has every instance but the one that moved learn the test
// clock's new offset: an instance reads the stored offset only when it
// starts or advances itself, so each of the others advances by a second
// (which the run's devices then follow).
func (h *harness) syncClocks(ctx context.Context, moved int) error {
	for i := range h.srvs {
		if i == moved {
			continue
		}
		state, err := h.setup.AdminAdvanceClock(context.WithValue(ctx, pinKey{}, i), time.Second)
		if err != nil {
			return fmt.Errorf("advancing instance %d's test clock to the others': %w", i+1, err)
		}
		h.clock.follow(state.Now)
	}
	return nil
}
