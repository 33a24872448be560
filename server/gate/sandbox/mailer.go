package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/xpromo/xpromo/server/gate/contact"
)

// inboxDelay is how long the sandbox's inbox waits before its reader opens
// a challenge email: long enough for the sender to have finished its
// business, short enough that test mode completes within seconds.
const inboxDelay = 500 * time.Millisecond

// Mailer delivers challenge emails to reserved domains into the sandbox's
// inbox and passes every other recipient to next. The inbox renders the
// message as an RFC 5322 email, reads it back as a mail client would, finds
// the verification link in its text and, after Send has returned, calls
// follow with it, as the address's reader would click it. Local parts
// choose otherwise: "unverified" is accepted and never answered, "bounce"
// is refused for good (an error wrapping contact.ErrUndeliverable, as a
// 550 answer is).
func (s *Sandbox) Mailer(next contact.Mailer, follow func(ctx context.Context, link string) error) contact.Mailer {
	return &inbox{s: s, next: next, follow: follow}
}

type inbox struct {
	s      *Sandbox
	next   contact.Mailer
	follow func(ctx context.Context, link string) error
}

func (m *inbox) Send(ctx context.Context, msg contact.Message) error {
	if !Reserved(msg.To) {
		if m.next == nil {
			return fmt.Errorf("%w: %v", contact.ErrMailUnavailable, errNoNext("SMTP server"))
		}
		return m.next.Send(ctx, msg)
	}
	local := strings.ToLower(msg.To[:max(strings.LastIndexByte(msg.To, '@'), 0)])
	switch local {
	case "bounce":
		return fmt.Errorf("%w: 550 5.1.1 <%s>: recipient address rejected (sandbox: bounce@)", contact.ErrUndeliverable, msg.To)
	case "unverified":
		return nil
	}
	raw, err := render(msg)
	if err != nil {
		return fmt.Errorf("%w: %w", contact.ErrMailUnavailable, err)
	}
	select {
	case m.s.inbox <- struct{}{}:
	default:
		return fmt.Errorf("%w: 452 4.3.1 the sandbox inbox is busy, try again later", contact.ErrMailUnavailable)
	}
	if m.s.ctx.Err() != nil {
		<-m.s.inbox
		return fmt.Errorf("%w: %w", contact.ErrMailUnavailable, errClosed)
	}
	m.s.wg.Add(1)
	go func() {
		defer m.s.wg.Done()
		defer func() { <-m.s.inbox }()
		m.read(raw)
	}()
	return nil
}

// read opens a delivered message after inboxDelay and follows its link.
func (m *inbox) read(raw []byte) {
	t := time.NewTimer(inboxDelay)
	defer t.Stop()
	select {
	case <-m.s.ctx.Done():
		return
	case <-t.C:
	}
	link, err := verificationLink(raw)
	if err != nil || m.follow == nil {
		return
	}
	ctx, cancel := context.WithTimeout(m.s.ctx, 30*time.Second)
	defer cancel()
	m.follow(ctx, link) // a failure leaves the challenge unanswered: gate_contact_unverified
}

// render writes msg as the SMTP mailer would send it.
func render(msg contact.Message) ([]byte, error) {
	g := gomail.NewMsg()
	if err := g.From("xpromo sandbox <gate@sandbox.invalid>"); err != nil {
		return nil, err
	}
	if err := g.To(msg.To); err != nil {
		return nil, err
	}
	g.Subject(msg.Subject)
	g.SetGenHeader("Auto-Submitted", "auto-generated")
	g.SetDate()
	g.SetBodyString(gomail.TypeTextPlain, msg.Text)
	var b bytes.Buffer
	if _, err := g.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var linkRE = regexp.MustCompile(`https?://[^\s<>"]+`)

// verificationLink parses an RFC 5322 message and returns the first link
// in its plain-text body that carries a token query parameter.
func verificationLink(raw []byte) (string, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return "", err
	}
	var body io.Reader = msg.Body
	if mt, _, err := mime.ParseMediaType(msg.Header.Get("Content-Type")); err == nil && !strings.HasPrefix(mt, "text/") {
		return "", fmt.Errorf("sandbox inbox: a %s message", mt)
	}
	if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	text, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil {
		return "", err
	}
	for _, l := range linkRE.FindAllString(string(text), -1) {
		if u, err := url.Parse(l); err == nil && u.Query().Get("token") != "" {
			return l, nil
		}
	}
	return "", errors.New("sandbox inbox: no verification link in the message")
}
