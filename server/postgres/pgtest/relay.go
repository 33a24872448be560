package pgtest

import (
	"bytes"
	"encoding/binary"
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
	// Counts of the protocol messages clients sent: statements (Query,
	// Execute) and round trips (Query, Sync: each waits for the server's
	// ReadyForQuery).
	statements, roundTrips atomic.Int64
	mu                     sync.Mutex
	conns                  []net.Conn
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

// Counts returns the statements and round trips clients sent through the
// relay so far (startup and TLS negotiation not counted).
func (r *Relay) Counts() (statements, roundTrips int64) {
	return r.statements.Load(), r.roundTrips.Load()
}

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
	var m messages
	for {
		n, err := c.Read(buf)
		if n > 0 && !r.held.Load() {
			m.count(r, buf[:n])
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

// messages follows the frames of one client's stream: after the startup
// message (length first, no type), each is a type byte and a length.
type messages struct {
	started bool
	skip    int    // bytes left of the current frame
	head    []byte // a frame header split across reads
}

func (m *messages) count(r *Relay, b []byte) {
	for len(b) > 0 {
		if m.skip > 0 {
			k := min(m.skip, len(b))
			m.skip, b = m.skip-k, b[k:]
			continue
		}
		want := 5
		if !m.started {
			want = 4
		}
		k := min(want-len(m.head), len(b))
		m.head, b = append(m.head, b[:k]...), b[k:]
		if len(m.head) < want {
			return
		}
		h := m.head
		m.head = m.head[:0]
		if !m.started {
			m.started = true
			m.skip = int(binary.BigEndian.Uint32(h)) - 4
			continue
		}
		switch h[0] {
		case 'Q':
			r.statements.Add(1)
			r.roundTrips.Add(1)
		case 'E':
			r.statements.Add(1)
		case 'S':
			r.roundTrips.Add(1)
		}
		m.skip = int(binary.BigEndian.Uint32(h[1:])) - 4
	}
}
