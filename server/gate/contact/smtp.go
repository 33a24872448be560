package contact

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// Message is one plain-text email.
type Message struct {
	To      string
	Subject string
	Text    string
}

// Mailer sends a Message. SMTPMailer is the real one; errors wrap
// ErrUndeliverable (the recipient's server refused the address for good) or
// ErrMailUnavailable (anything that may work later).
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

var (
	// ErrUndeliverable: the address is invalid or the mail system refused
	// the recipient with a permanent (5xx) answer.
	ErrUndeliverable = errors.New("contact: the address cannot receive mail")
	// ErrMailUnavailable: the SMTP server could not be reached or refused
	// the message for a reason that is not the recipient's (a 4xx answer,
	// a network error, a configuration problem such as failed
	// authentication).
	ErrMailUnavailable = errors.New("contact: mail could not be sent")
)

// TLSMode is how the connection to the SMTP server is secured.
type TLSMode string

const (
	// TLSStartTLS upgrades the connection with STARTTLS and fails when the
	// server does not offer it (submission, port 587). The default.
	TLSStartTLS TLSMode = "starttls"
	// TLSImplicit speaks TLS from the first byte (SMTPS, port 465).
	TLSImplicit TLSMode = "implicit"
	// TLSOpportunistic uses STARTTLS when offered and plain text otherwise.
	TLSOpportunistic TLSMode = "opportunistic"
	// TLSNone never encrypts: only for a relay on the same host or a test.
	TLSNone TLSMode = "none"
)

// SMTPConfig configures an SMTPMailer.
type SMTPConfig struct {
	Host string
	Port int // zero: 587, or 465 with TLSImplicit
	TLS  TLSMode
	// Username and Password, when Username is set, authenticate with the
	// strongest mechanism both sides support (go-mail's auto-discovery;
	// PLAIN and LOGIN only over TLS).
	Username string
	Password string
	// From is the sender, an RFC 5322 address ("xpromo <verify@xpromo.example>").
	From string
	// HELO is the name given in EHLO; empty means go-mail's default (the
	// host name).
	HELO string
	// Timeout bounds connecting and each SMTP command; zero means 15 s.
	Timeout time.Duration
	// RootCAs verifies the server's certificate; nil means the system's
	// roots.
	RootCAs *x509.CertPool
}

// SMTPMailer sends mail through one SMTP server (a submission server or a
// relay) with github.com/wneessen/go-mail. It opens one connection per
// message: challenges are rare.
type SMTPMailer struct {
	cfg  SMTPConfig
	from *mail.Address
}

// NewSMTPMailer checks cfg and returns a mailer for it.
func NewSMTPMailer(cfg SMTPConfig) (*SMTPMailer, error) {
	if cfg.Host == "" {
		return nil, errors.New("contact: SMTP host is not set")
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("contact: SMTP From %q: %w", cfg.From, err)
	}
	switch cfg.TLS {
	case "":
		cfg.TLS = TLSStartTLS
	case TLSStartTLS, TLSImplicit, TLSOpportunistic, TLSNone:
	default:
		return nil, fmt.Errorf("contact: unknown SMTP TLS mode %q", cfg.TLS)
	}
	if cfg.Port == 0 {
		cfg.Port = 587
		if cfg.TLS == TLSImplicit {
			cfg.Port = 465
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	return &SMTPMailer{cfg: cfg, from: from}, nil
}

// Send sends m. The message is marked as automatically generated (RFC
// 3834 Auto-Submitted), so well-behaved autoresponders stay quiet.
func (s *SMTPMailer) Send(ctx context.Context, m Message) error {
	to, err := parseRecipient(m.To)
	if err != nil {
		return err
	}
	msg := gomail.NewMsg()
	msg.FromMailAddress(s.from)
	msg.ToMailAddress(to)
	msg.Subject(m.Subject)
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	msg.SetGenHeader(gomail.HeaderXAutoResponseSuppress, "All")
	msg.SetMessageIDWithValue(messageID(s.from.Address)) // not go-mail's, which names this host
	msg.SetDate()
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)

	opts := []gomail.Option{
		gomail.WithPort(s.cfg.Port),
		gomail.WithTimeout(s.cfg.Timeout),
		gomail.WithTLSConfig(&tls.Config{ServerName: s.cfg.Host, RootCAs: s.cfg.RootCAs, MinVersion: tls.VersionTLS12}),
	}
	switch s.cfg.TLS {
	case TLSStartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case TLSOpportunistic:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case TLSImplicit:
		opts = append(opts, gomail.WithSSL())
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	}
	if s.cfg.HELO != "" {
		opts = append(opts, gomail.WithHELO(s.cfg.HELO))
	}
	if s.cfg.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(s.cfg.Username), gomail.WithPassword(s.cfg.Password))
	}
	client, err := gomail.NewClient(s.cfg.Host, opts...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMailUnavailable, err)
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		var se *gomail.SendError
		if errors.As(err, &se) && se.Reason == gomail.ErrSMTPRcptTo && !se.IsTemp() {
			return fmt.Errorf("%w: %s: %w", ErrUndeliverable, to.Address, err)
		}
		return fmt.Errorf("%w: %w", ErrMailUnavailable, err)
	}
	return nil
}

// messageID returns a unique id in the sender's domain (RFC 5322 §3.6.4).
func messageID(from string) string {
	var b [16]byte
	rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:]) + from[strings.LastIndexByte(from, '@'):]
}

// maxAddressLen is the longest address SMTP can carry (RFC 5321 §4.5.3.1:
// a 256-octet path including the angle brackets).
const maxAddressLen = 254

// parseRecipient accepts one bare address ("dev@app.example"), not a list
// nor a display name: the contact address is data, not a header.
func parseRecipient(s string) (*mail.Address, error) {
	if len(s) > maxAddressLen {
		return nil, fmt.Errorf("%w: the address is longer than %d bytes", ErrUndeliverable, maxAddressLen)
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return nil, fmt.Errorf("%w: %q is not a plain email address", ErrUndeliverable, s)
	}
	return a, nil
}
