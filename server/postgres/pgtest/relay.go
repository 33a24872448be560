package pgtest

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Relay is a TCP relay in front of a test database that plays the ways a
// primary goes away: it can swallow what clients send while keeping every
// connection open (a partitioned or frozen primary), cut the connection
// carrying a chosen text before relaying it (a failover mid-transaction),
// and refuse connections (a primary that is down).
type Relay struct {
	ln      net.Listener
	to      string
	url     string
	held    atomic.Bool
	refused atomic.Bool
	cutOn   atomic.Pointer[string]
	mu      sync.Mutex
	conns   []net.Conn
}

// NewRelay starts a relay to the server of dbURL and returns it with the
// URL that reaches the same database through it. It closes when the test
// ends.
func NewRelay(t testing.TB, dbURL string) *Relay {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	r := &Relay{ln: ln, to: u.Host}
	u.Host = ln.Addr().String()
	r.url = u.String()
	t.Cleanup(r.Close)
	go r.serve()
	return r
}

// URL is the database's URL through the relay.
func (r *Relay) URL() string { return r.url }

// Hold stops forwarding: from now on what clients send, on every
// connection and on new ones, is swallowed and nothing comes back.
func (r *Relay) Hold() { r.held.Store(true) }

// Cut closes the connection whose client next sends a message containing
// text (any message when text is empty), before relaying it. Once.
func (r *Relay) Cut(text string) { r.cutOn.Store(&text) }

// Refuse closes every connection and refuses new ones.
func (r *Relay) Refuse() {
	r.refused.Store(true)
	r.closeAll()
}

// Resume forwards again. The connections open until now are closed (those
// held lost bytes): clients connect afresh, as they would to the primary
// after a failover.
func (r *Relay) Resume() {
	r.held.Store(false)
	r.refused.Store(false)
	r.closeAll()
}

// Close stops the relay and closes its connections.
func (r *Relay) Close() {
	r.ln.Close()
	r.closeAll()
}

func (r *Relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		if r.refused.Load() {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", r.to)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, c, s)
		r.mu.Unlock()
		go func() { io.Copy(c, s); c.Close() }()
		go r.forward(c, s)
	}
}

// forward relays what the client c sends to the server s.
func (r *Relay) forward(c, s net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 && !r.held.Load() {
			if cut := r.cutOn.Load(); cut != nil && bytes.Contains(buf[:n], []byte(*cut)) && r.cutOn.CompareAndSwap(cut, nil) {
				c.Close()
				s.Close()
				return
			}
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			s.Close()
			return
		}
	}
}

func (r *Relay) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}
