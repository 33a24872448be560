package contact_test

import (
	"context"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/gatetest"
)

const verifyURL = "https://api.xpromo.test/v1/contact/verify?lang=en"

var start = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

type fixture struct {
	svc   *contact.Service
	sink  *sink
	store *gatetest.Challenges
	clock *clocktest.Clock
}

// newFixture runs a challenge service that sends through a local SMTP
// server with STARTTLS and AUTH PLAIN, as a submission server would.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	snk := startSink(t, sinkOptions{startTLS: true, user: "gate", password: "s3cret"})
	mailer, err := contact.NewSMTPMailer(contact.SMTPConfig{
		Host: "127.0.0.1", Port: snk.addr.Port, TLS: contact.TLSStartTLS,
		Username: "gate", Password: "s3cret",
		From:    "xpromo <verify@xpromo.test>",
		RootCAs: snk.certPool, Timeout: 10 * time.Second,
	})
	require.NoError(t, err)
	return newFixtureWith(t, snk, mailer)
}

func newFixtureWith(t testing.TB, snk *sink, mailer contact.Mailer) *fixture {
	f := &fixture{sink: snk, store: &gatetest.Challenges{}, clock: clocktest.New(start)}
	svc, err := contact.New(contact.Config{
		Store: f.store, Mailer: mailer, VerifyURL: verifyURL, Product: "xpromo (test)", Now: f.clock.Now,
	})
	require.NoError(t, err)
	f.svc = svc
	return f
}

// inbox is a challenge email as its reader sees it.
type inbox struct {
	Header mail.Header
	Text   string
	Link   *url.URL
	Token  string
	Code   string
}

var (
	linkRE = regexp.MustCompile(`https?://\S+`)
	codeRE = regexp.MustCompile(`(?m)^\s+(\d{6})\s*$`)
)

// read parses a received message the way a mail client would (RFC 5322
// headers, MIME transfer encoding, RFC 2047 words) and finds the link and
// the code in its text.
func read(t testing.TB, r received) inbox {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(string(r.Data)))
	require.NoError(t, err)
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "text/plain", mediaType)
	require.True(t, strings.EqualFold(params["charset"], "utf-8"), "charset %q", params["charset"])
	var body io.Reader = msg.Body
	switch cte := strings.ToLower(msg.Header.Get("Content-Transfer-Encoding")); cte {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "", "7bit", "8bit":
	default:
		t.Fatalf("unexpected Content-Transfer-Encoding %q", cte)
	}
	text, err := io.ReadAll(body)
	require.NoError(t, err)

	in := inbox{Header: msg.Header, Text: string(text)}
	links := linkRE.FindAllString(in.Text, -1)
	require.Len(t, links, 1, "one link in:\n%s", in.Text)
	in.Link, err = url.Parse(links[0])
	require.NoError(t, err)
	in.Token = in.Link.Query().Get("token")
	codes := codeRE.FindAllStringSubmatch(in.Text, -1)
	require.Len(t, codes, 1, "one code in:\n%s", in.Text)
	in.Code = codes[0][1]
	return in
}

func decodedSubject(t testing.TB, h mail.Header) string {
	s, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	require.NoError(t, err)
	return s
}

func TestFollowTheLinkFromTheReceivedEmail(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sent, err := f.svc.Send(ctx, contact.Request{Subject: "app_1", Email: "dev@app.example", AppName: "Clipboard Pro"})
	require.NoError(t, err)
	assert.Equal(t, start.Add(24*time.Hour), sent.ExpiresAt)

	msgs := f.sink.all()
	require.Len(t, msgs, 1)
	m := msgs[0]
	assert.True(t, m.TLS, "sent after STARTTLS")
	assert.Equal(t, "gate", m.User, "sent authenticated")
	assert.Equal(t, "verify@xpromo.test", m.From)
	assert.Equal(t, []string{"dev@app.example"}, m.To)

	in := read(t, m)
	assert.Equal(t, `Confirm the contact address of "Clipboard Pro" on xpromo (test)`, decodedSubject(t, in.Header))
	assert.Equal(t, "auto-generated", in.Header.Get("Auto-Submitted"))
	assert.Regexp(t, `^<[0-9a-f]{32}@xpromo\.test>$`, in.Header.Get("Message-Id"))
	assert.Contains(t, in.Text, `The app "Clipboard Pro" was registered on xpromo (test)`)
	assert.Contains(t, in.Text, "until 22 November 2026 10:00 UTC")
	assert.Equal(t, "api.xpromo.test", in.Link.Host)
	assert.Equal(t, "/v1/contact/verify", in.Link.Path)
	assert.Equal(t, "en", in.Link.Query().Get("lang"), "the configured URL's query is kept")
	assert.Len(t, in.Token, 43, "32 random bytes, base64url")

	// Neither the token nor the code is stored.
	stored, err := f.store.LatestChallenge(ctx, "app_1")
	require.NoError(t, err)
	assert.NotContains(t, string(stored.TokenHash), in.Token)
	assert.NotContains(t, string(stored.CodeHash), in.Code)

	f.clock.Advance(23 * time.Hour)
	v, err := f.svc.VerifyToken(ctx, in.Token)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusOK, v.Status)
	assert.Equal(t, "app_1", v.Subject)
	assert.Equal(t, "dev@app.example", v.Email)
	assert.Equal(t, sent.ChallengeID, v.ChallengeID)
	assert.Equal(t, start.Add(23*time.Hour), v.VerifiedAt)

	v, err = f.svc.VerifyToken(ctx, in.Token)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusUsed, v.Status, "the link works once")
	v, err = f.svc.VerifyCode(ctx, "app_1", in.Code)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusUsed, v.Status, "and so does the code of the same challenge")
}

func TestTheCodeFromTheReceivedEmail(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.svc.Send(ctx, contact.Request{Subject: "app_1", Email: "dev@app.example", AppName: "Clipboard Pro"})
	require.NoError(t, err)
	in := read(t, f.sink.all()[0])

	v, err := f.svc.VerifyCode(ctx, "app_2", in.Code)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusUnknown, v.Status, "a code answers its own subject's challenge only")

	v, err = f.svc.VerifyCode(ctx, "app_1", wrong(in.Code))
	require.NoError(t, err)
	assert.Equal(t, contact.StatusUnknown, v.Status)
	assert.Equal(t, 4, v.AttemptsLeft)

	for _, malformed := range []string{"", "12345", "1234567", "12345a", "１２３４５６"} {
		v, err = f.svc.VerifyCode(ctx, "app_1", malformed)
		require.NoError(t, err)
		assert.Equal(t, contact.StatusUnknown, v.Status, malformed)
	}

	v, err = f.svc.VerifyCode(ctx, "app_1", in.Code)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusOK, v.Status)
	v, err = f.svc.VerifyToken(ctx, in.Token)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusUsed, v.Status)
}

func wrong(code string) string {
	n, _ := strconv.Atoi(code)
	return strconv.Itoa(1_000_000 + (n+1)%1_000_000)[1:]
}

func TestTooManyWrongCodesLockTheCodeButNotTheLink(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.svc.Send(ctx, contact.Request{Subject: "app_1", Email: "dev@app.example"})
	require.NoError(t, err)
	in := read(t, f.sink.all()[0])
	assert.Equal(t, "Confirm the contact address of your app on xpromo (test)", decodedSubject(t, in.Header))
	assert.Contains(t, in.Text, "An app was registered")

	for left := 4; left >= 0; left-- {
		v, err := f.svc.VerifyCode(ctx, "app_1", wrong(in.Code))
		require.NoError(t, err)
		assert.Equal(t, left, v.AttemptsLeft)
		if left == 0 {
			assert.Equal(t, contact.StatusLocked, v.Status)
		} else {
			assert.Equal(t, contact.StatusUnknown, v.Status)
		}
	}
	v, err := f.svc.VerifyCode(ctx, "app_1", in.Code)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusLocked, v.Status, "the right code no longer works")

	v, err = f.svc.VerifyToken(ctx, in.Token)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusOK, v.Status, "the 256-bit link still does")
}

func TestChallengesExpire(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.svc.Send(ctx, contact.Request{Subject: "app_1", Email: "dev@app.example"})
	require.NoError(t, err)
	in := read(t, f.sink.all()[0])

	f.clock.Advance(24 * time.Hour)
	v, err := f.svc.VerifyToken(ctx, in.Token)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusExpired, v.Status)
	v, err = f.svc.VerifyCode(ctx, "app_1", in.Code)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusExpired, v.Status)
}

func TestANewEmailSupersedesTheOldOne(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	req := contact.Request{Subject: "app_1", Email: "dev@app.example"}
	_, err := f.svc.Send(ctx, req)
	require.NoError(t, err)
	f.clock.Advance(time.Minute)
	_, err = f.svc.Send(ctx, req)
	require.NoError(t, err)
	msgs := f.sink.all()
	require.Len(t, msgs, 2)
	first, second := read(t, msgs[0]), read(t, msgs[1])
	assert.NotEqual(t, first.Token, second.Token)

	v, err := f.svc.VerifyToken(ctx, first.Token)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusExpired, v.Status)
	v, err = f.svc.VerifyToken(ctx, second.Token)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusOK, v.Status)
}

func TestResendLimits(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	req := contact.Request{Subject: "app_1", Email: "dev@app.example"}
	_, err := f.svc.Send(ctx, req)
	require.NoError(t, err)

	f.clock.Advance(30 * time.Second)
	_, err = f.svc.Send(ctx, req)
	var limit *contact.LimitError
	require.ErrorAs(t, err, &limit)
	assert.Equal(t, start.Add(time.Minute), limit.RetryAfter)
	assert.Empty(t, contact.ReasonFor(err), "a limit says nothing about the address")

	// Another subject is not limited by this one.
	_, err = f.svc.Send(ctx, contact.Request{Subject: "app_2", Email: "dev@app.example"})
	require.NoError(t, err)

	f.clock.Advance(30 * time.Second)
	for range 4 { // five in all within 24 h
		_, err = f.svc.Send(ctx, req)
		require.NoError(t, err)
		f.clock.Advance(time.Hour)
	}
	_, err = f.svc.Send(ctx, req)
	require.ErrorAs(t, err, &limit)
	assert.Equal(t, start.Add(24*time.Hour), limit.RetryAfter, "when the first of the five leaves the window")
	assert.Len(t, f.sink.all(), 6)

	f.clock.Advance(limit.RetryAfter.Sub(f.clock.Now()))
	_, err = f.svc.Send(ctx, req)
	require.NoError(t, err)
}

func TestUnknownTokens(t *testing.T) {
	f := newFixture(t)
	for _, token := range []string{"", "x", "not base64!", strings.Repeat("A", 43), strings.Repeat("A", 44)} {
		v, err := f.svc.VerifyToken(context.Background(), token)
		require.NoError(t, err)
		assert.Equal(t, contact.StatusUnknown, v.Status, token)
	}
}

// Of two clicks on one link at the same moment, one completes the
// challenge and the other is told it was used.
func TestConcurrentAnswersCompleteOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.svc.Send(ctx, contact.Request{Subject: "app_1", Email: "dev@app.example"})
	require.NoError(t, err)
	in := read(t, f.sink.all()[0])

	var wg sync.WaitGroup
	statuses := make(chan contact.Status, 8)
	for i := range 8 {
		wg.Go(func() {
			var v contact.Verification
			var err error
			if i%2 == 0 {
				v, err = f.svc.VerifyToken(ctx, in.Token)
			} else {
				v, err = f.svc.VerifyCode(ctx, "app_1", in.Code)
			}
			assert.NoError(t, err)
			statuses <- v.Status
		})
	}
	wg.Wait()
	close(statuses)
	count := map[contact.Status]int{}
	for s := range statuses {
		count[s]++
	}
	assert.Equal(t, map[contact.Status]int{contact.StatusOK: 1, contact.StatusUsed: 7}, count)
}

func TestDeliveryFailures(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for email, reason := range map[string]string{
		"nobody@app.example":                  contact.ReasonContactUndeliverable, // 550 5.1.1
		"busy@app.example":                    contact.ReasonMailUnavailable,      // 451 4.3.0
		"Dev <dev@app.example>":               contact.ReasonContactUndeliverable, // not a bare address
		"dev@app.example, x@evil.test":        contact.ReasonContactUndeliverable,
		"dev@app.example\r\nBcc: x@evil.test": contact.ReasonContactUndeliverable,
		strings.Repeat("a", 250) + "@x.test":  contact.ReasonContactUndeliverable,
	} {
		_, err := f.svc.Send(ctx, contact.Request{Subject: "app_" + email, Email: email})
		assert.Equal(t, reason, contact.ReasonFor(err), "%q: %v", email, err)
	}
	assert.Empty(t, f.sink.all())
}

func TestAppNameCannotBendTheMessage(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.Send(context.Background(), contact.Request{
		Subject: "app_1", Email: "dev@app.example",
		AppName: "Evil\r\nBcc: victim@evil.test\r\n\r\nhttps://evil.test/?token=x \u202eemaN",
	})
	require.NoError(t, err)
	msgs := f.sink.all()
	require.Len(t, msgs, 1)
	assert.Equal(t, []string{"dev@app.example"}, msgs[0].To)
	msg, err := mail.ReadMessage(strings.NewReader(string(msgs[0].Data)))
	require.NoError(t, err)
	assert.Empty(t, msg.Header.Get("Bcc"))
	subject := decodedSubject(t, msg.Header)
	assert.NotContains(t, subject, "\n")
	assert.NotContains(t, subject, "\u202e")
	// The name is quoted; the link a reader is asked to open is still ours
	// (the name's fake one is on the same line as the text around it).
	in, _ := io.ReadAll(quotedprintable.NewReader(msg.Body))
	assert.Regexp(t, `(?m)^  https://api\.xpromo\.test/v1/contact/verify\?`, string(in))
}

func TestSMTPServerDownIsTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there any more
	mailer, err := contact.NewSMTPMailer(contact.SMTPConfig{
		Host: "127.0.0.1", Port: port, TLS: contact.TLSNone, From: "verify@xpromo.test", Timeout: 5 * time.Second,
	})
	require.NoError(t, err)
	f := newFixtureWith(t, nil, mailer)
	_, err = f.svc.Send(context.Background(), contact.Request{Subject: "app_1", Email: "dev@app.example"})
	assert.ErrorIs(t, err, contact.ErrMailUnavailable)
	assert.Equal(t, contact.ReasonMailUnavailable, contact.ReasonFor(err))
}

func TestTLSModes(t *testing.T) {
	ctx := context.Background()
	msg := contact.Message{To: "dev@app.example", Subject: "s", Text: "t"}
	send := func(snk *sink, cfg contact.SMTPConfig) error {
		cfg.Host, cfg.Port, cfg.From, cfg.RootCAs = "127.0.0.1", snk.addr.Port, "verify@xpromo.test", snk.certPool
		m, err := contact.NewSMTPMailer(cfg)
		require.NoError(t, err)
		return m.Send(ctx, msg)
	}

	t.Run("implicit TLS (SMTPS)", func(t *testing.T) {
		snk := startSink(t, sinkOptions{implicit: true})
		require.NoError(t, send(snk, contact.SMTPConfig{TLS: contact.TLSImplicit}))
		require.Len(t, snk.all(), 1)
		assert.True(t, snk.all()[0].TLS)
	})
	t.Run("STARTTLS required but not offered", func(t *testing.T) {
		snk := startSink(t, sinkOptions{})
		err := send(snk, contact.SMTPConfig{TLS: contact.TLSStartTLS})
		assert.ErrorIs(t, err, contact.ErrMailUnavailable)
		assert.Empty(t, snk.all())
	})
	t.Run("opportunistic falls back to plain text", func(t *testing.T) {
		snk := startSink(t, sinkOptions{})
		require.NoError(t, send(snk, contact.SMTPConfig{TLS: contact.TLSOpportunistic}))
		require.Len(t, snk.all(), 1)
		assert.False(t, snk.all()[0].TLS)
	})
	t.Run("an untrusted certificate is refused", func(t *testing.T) {
		snk := startSink(t, sinkOptions{startTLS: true})
		snk.certPool = nil // the system roots do not know the test certificate
		err := send(snk, contact.SMTPConfig{TLS: contact.TLSStartTLS})
		assert.ErrorIs(t, err, contact.ErrMailUnavailable)
		assert.Empty(t, snk.all())
	})
	t.Run("wrong credentials are the sender's problem, not the address's", func(t *testing.T) {
		snk := startSink(t, sinkOptions{startTLS: true, user: "gate", password: "s3cret"})
		err := send(snk, contact.SMTPConfig{TLS: contact.TLSStartTLS, Username: "gate", Password: "nope"})
		assert.ErrorIs(t, err, contact.ErrMailUnavailable)
		assert.Empty(t, snk.all())
	})
}

func TestConfigIsChecked(t *testing.T) {
	for _, cfg := range []contact.SMTPConfig{
		{From: "verify@xpromo.test"},
		{Host: "smtp.test", From: "not an address"},
		{Host: "smtp.test", From: "verify@xpromo.test", TLS: "ssl"},
	} {
		_, err := contact.NewSMTPMailer(cfg)
		assert.Error(t, err, "%+v", cfg)
	}
	mailer, err := contact.NewSMTPMailer(contact.SMTPConfig{Host: "smtp.test", From: "verify@xpromo.test"})
	require.NoError(t, err)
	for _, u := range []string{"", "/verify", "javascript:alert(1)", "ftp://x/verify"} {
		_, err := contact.New(contact.Config{Store: &gatetest.Challenges{}, Mailer: mailer, VerifyURL: u})
		assert.Error(t, err, u)
	}
	_, err = contact.New(contact.Config{Mailer: mailer, VerifyURL: verifyURL})
	assert.Error(t, err)
}

// Tokens and codes come from anyone on the internet: whatever they are,
// verification answers a status, never an error or a panic, and only the
// mailed token or code completes the challenge.
func FuzzVerify(f *testing.F) {
	fx := newFixture(f)
	_, err := fx.svc.Send(context.Background(), contact.Request{Subject: "app_1", Email: "dev@app.example"})
	if err != nil {
		f.Fatal(err)
	}
	in := read(f, fx.sink.all()[0])
	f.Add("", "")
	f.Add(strings.Repeat("A", 43), "000000")
	f.Add("VnOZlkNYheAmByjlcObI5rQ2gvB_JpXtim2BU3slksw", "12345\x00")
	f.Fuzz(func(t *testing.T, token, code string) {
		v, err := fx.svc.VerifyToken(context.Background(), token)
		if err != nil || (v.Status == contact.StatusOK && token != in.Token) {
			t.Fatalf("VerifyToken(%q) = %+v, %v", token, v, err)
		}
		v, err = fx.svc.VerifyCode(context.Background(), "app_1", code)
		if err != nil || (v.Status == contact.StatusOK && code != in.Code) {
			t.Fatalf("VerifyCode(%q) = %+v, %v", code, v, err)
		}
	})
}
