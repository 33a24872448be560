package contact_test

// The test counterpart of the mail system: a real SMTP server
// (github.com/emersion/go-smtp) that keeps what it receives, with the
// authentication and TLS options these tests need. The in-memory
// contact.Store is gatetest.Challenges; the server's stores implement
// contact.Store for real.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// received is one message as the sink got it.
type received struct {
	From string
	To   []string
	Data []byte
	TLS  bool
	User string // authenticated user, if any
}

// sink is a local SMTP server. Recipients starting with "nobody@" are
// refused with 550, "busy@" with 451.
type sink struct {
	mu       sync.Mutex
	messages []received
	addr     *net.TCPAddr
	certPool *x509.CertPool
}

type sinkOptions struct {
	startTLS bool // offer STARTTLS (with a certificate for 127.0.0.1)
	implicit bool // speak TLS from the first byte
	user     string
	password string // AUTH PLAIN required when set
}

func startSink(t testing.TB, o sinkOptions) *sink {
	t.Helper()
	s := &sink{}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{sink: s, opts: o, conn: c}, nil
	}))
	srv.Domain = "sink.test"
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.MaxMessageBytes = 1 << 20
	srv.AllowInsecureAuth = !o.startTLS && !o.implicit
	var cert tls.Certificate
	if o.startTLS || o.implicit {
		cert, s.certPool = selfSigned(t)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.implicit {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	s.addr = ln.Addr().(*net.TCPAddr)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *sink) all() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.messages)
}

type session struct {
	sink *sink
	opts sinkOptions
	conn *smtp.Conn
	user string
	msg  received
}

func (s *session) AuthMechanisms() []string {
	if s.opts.password == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.opts.user || pass != s.opts.password {
			return errors.New("invalid credentials")
		}
		s.user = user
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.opts.password != "" && s.user == "" {
		return smtp.ErrAuthRequired
	}
	s.msg = received{From: from, User: s.user}
	if _, ok := s.conn.TLSConnectionState(); ok {
		s.msg.TLS = true
	}
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	switch {
	case strings.HasPrefix(to, "nobody@"):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	case strings.HasPrefix(to, "busy@"):
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	}
	s.msg.To = append(s.msg.To, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.msg.Data = b
	s.sink.mu.Lock()
	s.sink.messages = append(s.sink.messages, s.msg)
	s.sink.mu.Unlock()
	return nil
}

func (s *session) Reset()        { s.msg = received{} }
func (s *session) Logout() error { return nil }

// selfSigned makes a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
