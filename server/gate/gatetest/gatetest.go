// Package gatetest starts the vetting gate's real counterparts for tests:
// Debian's clamd with a two-signature EICAR database, a local SMTP server
// (github.com/emersion/go-smtp) that keeps what it receives, an RDAP
// server answering RFC 9083 domain objects, a download server, and signed
// packages (a notarised zipped .app signed in-process, a PE signed with
// osslsigncode) under roots made for the test. It also holds an in-memory
// contact.Store for tests that do not exercise the database's.
package gatetest

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/xpromo/xpromo/server/gate/clamav"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/internal/testtool"
)

// EICAR is the anti-virus test file: harmless, detected by agreement.
const EICAR = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

// ErrNoClamd: clamd is not installed.
var ErrNoClamd = errors.New("clamd is not installed (Debian: apt-get install clamav-daemon)")

// Clamd starts clamd on a loopback TCP port with a database of two EICAR
// signatures and returns its address (tcp://127.0.0.1:port); it stops with
// the test. Without clamd the test is skipped, or fails when
// XPROMO_TEST_REQUIRE_TOOLS is set (make test, CI).
func Clamd(t testing.TB) string {
	t.Helper()
	addr, stop, err := StartClamd()
	NeedClamd(t, err)
	t.Cleanup(stop)
	return addr
}

// NeedClamd skips (or, with XPROMO_TEST_REQUIRE_TOOLS, fails) the test when
// err is ErrNoClamd, and fails it on any other error.
func NeedClamd(t testing.TB, err error) {
	t.Helper()
	switch {
	case errors.Is(err, ErrNoClamd):
		testtool.Missing(t, "%v", err)
	case err != nil:
		t.Fatal(err)
	}
}

// StartClamd starts a clamd as Clamd does, for a whole test binary
// (TestMain): stop it when done.
func StartClamd() (addr string, stop func(), err error) {
	bin, err := exec.LookPath("clamd")
	if err != nil {
		bin = "/usr/sbin/clamd"
		if _, err := os.Stat(bin); err != nil {
			return "", nil, ErrNoClamd
		}
	}
	dir, err := os.MkdirTemp("", "gatetest-clamd")
	if err != nil {
		return "", nil, err
	}
	fail := func(err error) (string, func(), error) {
		os.RemoveAll(dir)
		return "", nil, err
	}
	db := filepath.Join(dir, "db")
	if err := os.Mkdir(db, 0o755); err != nil {
		return fail(err)
	}
	sum := md5.Sum([]byte(EICAR))
	if err := os.WriteFile(filepath.Join(db, "test.hdb"), fmt.Appendf(nil, "%s:%d:Test.EICAR.MD5\n", hex.EncodeToString(sum[:]), len(EICAR)), 0o644); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(db, "test.ndb"), fmt.Appendf(nil, "Test.EICAR.Body:0:*:%s\n", hex.EncodeToString([]byte("EICAR-STANDARD-ANTIVIRUS-TEST-FILE"))), 0o644); err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	tcp := ln.Addr().String()
	ln.Close()
	host, port, _ := net.SplitHostPort(tcp)
	conf := filepath.Join(dir, "clamd.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "Foreground yes\nDatabaseDirectory %s\nTCPAddr %s\nTCPSocket %s\nPidFile %s\nLogFile %s\n",
		db, host, port, filepath.Join(dir, "clamd.pid"), filepath.Join(dir, "clamd.log")), 0o644); err != nil {
		return fail(err)
	}
	cmd := exec.Command(bin, "-c", conf)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		cmd.Process.Kill()
		<-exited
		os.RemoveAll(dir)
	}
	addr = "tcp://" + tcp
	client, err := clamav.New(clamav.Config{Address: addr, Timeout: 10 * time.Second})
	if err != nil {
		stop()
		return "", nil, err
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := client.Ping(ctx)
		cancel()
		if err == nil {
			return addr, stop, nil
		}
		select {
		case werr := <-exited:
			exited <- werr // for stop
			stop()
			return "", nil, fmt.Errorf("clamd exited (%v):\n%s", werr, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("clamd did not answer PING: %v\n%s", err, out.String())
		}
	}
}

// Message is a challenge email as a mail client reads it.
type Message struct {
	To   []string
	Text string
	Link string // the verification link
	Code string // the 6-digit code
}

// Inbox is a local SMTP server (no TLS, no authentication) keeping every
// message. Recipients starting with "nobody@" are refused with 550,
// "busy@" with 451.
type Inbox struct {
	Host string
	Port int

	mu       sync.Mutex
	messages []Message
	t        testing.TB
}

// SMTP starts an Inbox.
func SMTP(t testing.TB) *Inbox {
	t.Helper()
	in := &Inbox{t: t}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{in: in}, nil }))
	srv.Domain = "inbox.test"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.MaxMessageBytes = 1 << 20
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	in.Host, in.Port = "127.0.0.1", ln.Addr().(*net.TCPAddr).Port
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return in
}

// Messages returns the messages received so far.
func (in *Inbox) Messages() []Message {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Message(nil), in.messages...)
}

// Last returns the newest message to addr (ok false when none).
func (in *Inbox) Last(addr string) (Message, bool) {
	ms := in.Messages()
	for i := len(ms) - 1; i >= 0; i-- {
		for _, to := range ms[i].To {
			if to == addr {
				return ms[i], true
			}
		}
	}
	return Message{}, false
}

type session struct {
	in *Inbox
	to []string
}

func (s *session) AuthMechanisms() []string             { return nil }
func (s *session) Mail(string, *smtp.MailOptions) error { return nil }
func (s *session) Reset()                               { s.to = nil }
func (s *session) Logout() error                        { return nil }

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	switch {
	case strings.HasPrefix(to, "nobody@"):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	case strings.HasPrefix(to, "busy@"):
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	}
	s.to = append(s.to, to)
	return nil
}

var (
	linkRE = regexp.MustCompile(`https?://\S+`)
	codeRE = regexp.MustCompile(`(?m)^\s+(\d{6})\s*$`)
)

// Data parses the message as a mail client would (RFC 5322, MIME transfer
// encoding) and finds the link and the code in its text.
func (s *session) Data(r io.Reader) error {
	msg, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	var body io.Reader = msg.Body
	if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	if _, _, err := mime.ParseMediaType(msg.Header.Get("Content-Type")); err != nil {
		return err
	}
	text, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	m := Message{To: s.to, Text: string(text), Link: linkRE.FindString(string(text))}
	if c := codeRE.FindStringSubmatch(string(text)); c != nil {
		m.Code = c[1]
	}
	s.in.mu.Lock()
	s.in.messages = append(s.in.messages, m)
	s.in.mu.Unlock()
	return nil
}

// RDAP is a local RDAP server: GET /domain/<name> answers an RFC 9083
// domain object with the registration date set for the name, else 404.
type RDAP struct {
	*httptest.Server
	mu         sync.Mutex
	registered map[string]time.Time
}

// StartRDAP starts an RDAP server; its base URL is r.URL + "/".
func StartRDAP(t testing.TB) *RDAP {
	r := &RDAP{registered: map[string]time.Time{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		name := strings.ToLower(strings.TrimPrefix(req.URL.Path, "/domain/"))
		r.mu.Lock()
		at, ok := r.registered[name]
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/rdap+json")
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"rdapConformance":["rdap_level_0"],"errorCode":404,"title":"Not Found"}`)
			return
		}
		fmt.Fprintf(w, `{"rdapConformance":["rdap_level_0"],"objectClassName":"domain","handle":"1_DOMAIN","ldhName":%q,
"status":["active"],"events":[{"eventAction":"registration","eventDate":%q},{"eventAction":"expiration","eventDate":"2035-01-01T00:00:00Z"}]}`,
			strings.ToUpper(name), at.UTC().Format(time.RFC3339))
	}))
	t.Cleanup(r.Close)
	return r
}

// Register makes the server answer name as registered at at.
func (r *RDAP) Register(name string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registered[name] = at
}

// Downloads is a local download server: GET /<path> answers the bytes put
// there, else 404.
type Downloads struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
}

// StartDownloads starts a download server.
func StartDownloads(t testing.TB) *Downloads {
	d := &Downloads{files: map[string][]byte{}, hits: map[string]int{}}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		b, ok := d.files[r.URL.Path]
		d.hits[r.URL.Path]++
		d.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	}))
	t.Cleanup(d.Close)
	return d
}

// Put serves b at path ("/Snip.zip") and returns its URL.
func (d *Downloads) Put(path string, b []byte) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.files[path] = b
	return d.URL + path
}

// Hits is how many times path was asked for.
func (d *Downloads) Hits(path string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits[path]
}

// PKI holds the test's code-signing roots and signers.
type PKI struct {
	Root  *fixture.Cert // the configured code-signing root
	DevID *fixture.Cert // a Developer ID Application-shaped leaf
	PE    *fixture.Cert // an Authenticode code-signing leaf
	Other *fixture.Cert // a root nobody configured
}

var (
	pkiOnce sync.Once
	pki     *PKI
)

// Certs returns the test PKI (made once per process: RSA keys are slow).
func Certs() *PKI {
	pkiOnce.Do(func() {
		root := fixture.NewRoot("Test Code Signing Root")
		pki = &PKI{
			Root: root,
			DevID: root.Issue(fixture.CertOptions{CommonName: "Developer ID Application: Example Ltd (TEAM123456)", Organization: "Example Ltd",
				OrgUnit: "TEAM123456", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, DeveloperID: true}),
			PE:    root.Issue(fixture.CertOptions{CommonName: "Example Publisher", Organization: "Example Ltd", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}),
			Other: fixture.NewRoot("Somebody Else's Root"),
		}
	})
	return pki
}

// Roots is a pool of the configured root.
func (p *PKI) Roots() *x509.CertPool { return p.Root.Pool() }

var codeResources = []byte(`<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>files</key><dict/></dict></plist>`)

// AppOptions shape a zipped macOS app.
type AppOptions struct {
	Signer    *fixture.Cert // nil: unsigned
	Notarized bool          // a stapled ticket
	Extra     []fixture.File
}

// App returns a zipped Hello.app declaring bundleID.
func App(bundleID string, o AppOptions) []byte {
	plist := fixture.InfoPlist(bundleID, "Hello", false)
	exe := fixture.MachO(nil)
	if o.Signer != nil {
		exe = fixture.SignMachO(exe, o.Signer, fixture.MachOSignOptions{InfoPlist: plist, Resources: codeResources, Runtime: true})
	}
	files := []fixture.File{
		{Name: "Hello.app/Contents/Info.plist", Data: plist},
		{Name: "Hello.app/Contents/MacOS/Hello", Data: exe, Mode: 0o100755},
		{Name: "Hello.app/Contents/_CodeSignature/CodeResources", Data: codeResources},
	}
	if o.Notarized {
		files = append(files, fixture.File{Name: "Hello.app/Contents/CodeResources", Data: []byte("s8ChAAAAstapled-ticket")})
	}
	return fixture.Zip(append(files, o.Extra...)...)
}

// DMG returns a UDIF disk image (zlib chunks) of an HFS+ volume holding
// the Hello.app App would zip, and an "Applications" link, signed by
// o.Signer too (nil: unsigned); Notarized staples the ticket to the image's
// signature, as stapler does for a .dmg.
// extra are further files of the volume.
func DMG(bundleID string, o AppOptions, extra ...fixture.HFSFile) []byte {
	return DMGChunks(bundleID, o, 0, extra...)
}

// DMGChunks is DMG with every chunk of the volume of the given type
// (fixture.ChunkLZFSE: an ULFO image; fixture.ChunkLZMA: ULMO); 0 means
// hdiutil's UDZO (zlib, zero chunks for zeros).
func DMGChunks(bundleID string, o AppOptions, chunk uint32, extra ...fixture.HFSFile) []byte {
	z := App(bundleID, AppOptions{Signer: o.Signer, Extra: o.Extra})
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		panic(err)
	}
	vol := []fixture.HFSFile{{Name: "Applications", Data: []byte("/Applications"), Mode: 0o120755}}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			panic(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			panic(err)
		}
		vol = append(vol, fixture.HFSFile{Name: f.Name, Data: b, Mode: uint16(0o100000 | f.Mode().Perm())})
	}
	part := fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: fixture.HFSPlus("Hello", append(vol, extra...)...)}
	if chunk != 0 {
		part.Chunk = func(int, []byte) uint32 { return chunk }
	}
	img := fixture.UDIF(nil, part)
	if o.Signer == nil {
		return img
	}
	var ticket []byte
	if o.Notarized {
		ticket = []byte("s8ChAAAAstapled-dmg-ticket")
	}
	return fixture.SignDMG(img, o.Signer, ticket)
}

// WithFile is an extra file for AppOptions.Extra.
func WithFile(name string, data []byte) fixture.File { return fixture.File{Name: name, Data: data} }

// PE returns a Windows executable whose version info declares bundleID,
// signed with signer by osslsigncode (nil: unsigned). Without osslsigncode
// the test is skipped.
func PE(t testing.TB, bundleID string, signer *fixture.Cert) []byte {
	t.Helper()
	exe := fixture.PE(map[string]string{"InternalName": bundleID, "ProductName": "Hello App", "CompanyName": "Example Ltd"})
	if signer == nil {
		return exe
	}
	return Sign(t, exe, "exe", signer)
}

// SignedMSI is MSI(bundleID) Authenticode-signed with signer by osslsigncode.
func SignedMSI(t testing.TB, bundleID string, signer *fixture.Cert) []byte {
	t.Helper()
	return Sign(t, MSI(bundleID), "msi", signer)
}

// Sign signs a PE or an MSI (ext names which) with osslsigncode. Without
// osslsigncode the test is skipped.
func Sign(t testing.TB, file []byte, ext string, signer *fixture.Cert) []byte {
	t.Helper()
	testtool.Command(t, "osslsigncode", "Debian: apt-get install osslsigncode; it signs the Windows fixtures")
	dir := t.TempDir()
	certs, key := signer.WritePEM(dir)
	in, out := filepath.Join(dir, "in."+ext), filepath.Join(dir, "out."+ext)
	must(t, os.WriteFile(in, file, 0o600))
	if b, err := exec.Command("osslsigncode", "sign", "-certs", certs, "-key", key, "-n", "Hello App", "-in", in, "-out", out).CombinedOutput(); err != nil {
		t.Fatalf("osslsigncode sign: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	must(t, err)
	return b
}

// MSI returns an .msi whose ProductName is bundleID.
func MSI(bundleID string) []byte {
	return fixture.MSI(map[string]string{"ProductName": bundleID, "ProductCode": "{11111111-2222-3333-4444-555555555555}",
		"UpgradeCode": "{66666666-7777-8888-9999-000000000000}", "Manufacturer": "Example Ltd", "ProductVersion": "1.0.0"})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Challenges is an in-memory contact.Store.
type Challenges struct {
	mu         sync.Mutex
	challenges []contact.Challenge
}

var _ contact.Store = (*Challenges)(nil)

func (m *Challenges) InsertChallenge(_ context.Context, c contact.Challenge) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.challenges = append(m.challenges, c)
	return nil
}

func (m *Challenges) ChallengeByTokenHash(_ context.Context, h []byte) (contact.Challenge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.challenges {
		if bytes.Equal(c.TokenHash, h) {
			return c, nil
		}
	}
	return contact.Challenge{}, contact.ErrNotFound
}

func (m *Challenges) LatestChallenge(_ context.Context, subject string) (contact.Challenge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.challenges) - 1; i >= 0; i-- {
		if m.challenges[i].Subject == subject {
			return m.challenges[i], nil
		}
	}
	return contact.Challenge{}, contact.ErrNotFound
}

func (m *Challenges) ChallengesSince(_ context.Context, subject string, since time.Time) ([]time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []time.Time
	for _, c := range m.challenges {
		if c.Subject == subject && c.CreatedAt.After(since) {
			out = append(out, c.CreatedAt)
		}
	}
	return out, nil
}

func (m *Challenges) ConsumeChallenge(_ context.Context, id string, at time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.challenges {
		if m.challenges[i].ID == id {
			if !m.challenges[i].UsedAt.IsZero() {
				return false, nil
			}
			m.challenges[i].UsedAt = at
			return true, nil
		}
	}
	return false, contact.ErrNotFound
}

func (m *Challenges) AddCodeAttempt(_ context.Context, id string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.challenges {
		if m.challenges[i].ID == id {
			m.challenges[i].CodeAttempts++
			return m.challenges[i].CodeAttempts, nil
		}
	}
	return 0, contact.ErrNotFound
}
