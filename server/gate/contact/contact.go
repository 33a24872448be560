// Package contact is the vetting gate's contact-email challenge: it mails
// the address an app declared a one-time link and a 6-digit code, and
// verifies whichever comes back, so the gate knows the address reaches
// someone who can act for the app.
//
// What it checks: that whoever reads the mailbox answered the newest
// challenge before it expired (24 h by default), once. The link carries a
// 256-bit random token; the code is a fallback for readers who cannot open
// links. Only SHA-256 hashes of the token and of the code (salted per
// challenge) are stored, through the narrow Store interface the caller
// implements.
//
// What it does not check: that the address belongs to the app's publisher
// (anyone who reads the mailbox passes), SPF/DKIM of the sender's domain,
// or that the message was read by a person rather than opened by a link
// scanner: mail security gateways that fetch every link will complete the
// challenge, which is why the public verification endpoint should answer a
// GET with a page whose button POSTs the token.
//
// Limits: a 6-digit code is guessable in a million tries, so each
// challenge accepts at most MaxCodeAttempts codes (counted before
// comparing, so concurrent guesses cannot exceed it); a reader of the store
// can brute-force a code offline from its hash, not a token. Sending is
// limited per subject (ResendInterval between emails, MaxPerDay a day). A
// newer challenge supersedes older ones: their links answer "expired".
package contact

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/xpromo/xpromo/server/ids"
)

// Reason codes of the contact check, as they appear in an app's `reasons`.
const (
	// ReasonContactUnverified: no challenge was answered (yet, or before
	// it expired).
	ReasonContactUnverified = "gate_contact_unverified"
	// ReasonContactUndeliverable: the address is not a valid address, or
	// the mail system refused it for good.
	ReasonContactUndeliverable = "gate_contact_undeliverable"
	// ReasonMailUnavailable: the challenge could not be sent for a reason
	// on the sending side (SMTP server down, 4xx); transient.
	ReasonMailUnavailable = "gate_mail_unavailable"
)

// Defaults used when the corresponding Config field is zero.
const (
	DefaultTTL             = 24 * time.Hour
	DefaultResendInterval  = time.Minute
	DefaultMaxPerDay       = 5
	DefaultMaxCodeAttempts = 5
	DefaultProduct         = "xpromo"
)

// ErrNotFound is what a Store returns when it holds no such challenge.
var ErrNotFound = errors.New("contact: no such challenge")

// Challenge is one challenge as the Store keeps it. Neither the token nor
// the code is in it: only their hashes.
type Challenge struct {
	ID        string
	Subject   string // what the address is the contact of (an app id)
	Email     string
	TokenHash []byte // SHA-256 of the token's 32 random bytes
	CodeSalt  []byte // 16 random bytes
	CodeHash  []byte // SHA-256 of CodeSalt followed by the 6 ASCII digits
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    time.Time // zero until answered
	// CodeAttempts counts codes tried against this challenge, right or
	// wrong.
	CodeAttempts int
}

// Store keeps challenges. The server's stores implement it; every method
// is one statement, and the two that change a challenge are atomic on
// their own.
type Store interface {
	// InsertChallenge saves a new challenge.
	InsertChallenge(ctx context.Context, c Challenge) error
	// ChallengeByTokenHash returns the challenge whose TokenHash is h, or
	// ErrNotFound.
	ChallengeByTokenHash(ctx context.Context, h []byte) (Challenge, error)
	// LatestChallenge returns subject's newest challenge, or ErrNotFound.
	LatestChallenge(ctx context.Context, subject string) (Challenge, error)
	// ChallengesSince returns the creation times of subject's challenges
	// created after since (strictly), oldest first.
	ChallengesSince(ctx context.Context, subject string, since time.Time) ([]time.Time, error)
	// ConsumeChallenge sets UsedAt to at if it is still zero and reports
	// whether it did: of two concurrent answers, one wins.
	ConsumeChallenge(ctx context.Context, id string, at time.Time) (bool, error)
	// AddCodeAttempt increments CodeAttempts and returns the new count.
	AddCodeAttempt(ctx context.Context, id string) (int, error)
}

// Config configures a Service.
type Config struct {
	Store  Store
	Mailer Mailer
	// VerifyURL is the public address of the verification endpoint; the
	// link in the email is VerifyURL with a "token" query parameter added.
	VerifyURL string
	// Product names the sender in the email; empty means DefaultProduct.
	Product         string
	TTL             time.Duration // how long a challenge can be answered
	ResendInterval  time.Duration // least time between two emails to a subject
	MaxPerDay       int           // most emails to a subject in 24 hours
	MaxCodeAttempts int           // most codes tried against one challenge
	Now             func() time.Time
}

// Service sends and verifies challenges.
type Service struct{ cfg Config }

// New checks cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Mailer == nil {
		return nil, errors.New("contact: Store and Mailer are required")
	}
	u, err := url.Parse(cfg.VerifyURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("contact: VerifyURL %q is not an absolute http(s) URL", cfg.VerifyURL)
	}
	if cfg.Product == "" {
		cfg.Product = DefaultProduct
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.ResendInterval <= 0 {
		cfg.ResendInterval = DefaultResendInterval
	}
	if cfg.MaxPerDay <= 0 {
		cfg.MaxPerDay = DefaultMaxPerDay
	}
	if cfg.MaxCodeAttempts <= 0 {
		cfg.MaxCodeAttempts = DefaultMaxCodeAttempts
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{cfg: cfg}, nil
}

// LimitError: a challenge was sent too recently or too often; another can
// be sent at RetryAfter.
type LimitError struct{ RetryAfter time.Time }

func (e *LimitError) Error() string {
	return fmt.Sprintf("contact: too many challenges; another can be sent at %s", e.RetryAfter.Format(time.RFC3339))
}

// Request is what a challenge is about.
type Request struct {
	Subject string // the app id
	Email   string // the contact address to check
	AppName string // shown in the email
}

// Sent describes a challenge that went out.
type Sent struct {
	ChallengeID string
	ExpiresAt   time.Time
}

// Send creates a challenge for r and mails it. Errors: *LimitError, or
// wrapping ErrUndeliverable or ErrMailUnavailable (ReasonFor maps them), or
// the store's. The challenge is stored before the mail is sent, so a
// failed send still counts towards the limits and leaves nothing that
// could be answered.
func (s *Service) Send(ctx context.Context, r Request) (Sent, error) {
	if _, err := parseRecipient(r.Email); err != nil {
		return Sent{}, err
	}
	now := s.cfg.Now()
	if err := s.checkLimits(ctx, r.Subject, now); err != nil {
		return Sent{}, err
	}

	var token [32]byte
	var salt [16]byte
	rand.Read(token[:]) // crypto/rand.Read never fails (Go 1.24+)
	rand.Read(salt[:])
	code := randomCode()
	tokenHash := sha256.Sum256(token[:])
	c := Challenge{
		ID:        ids.New("cch"),
		Subject:   r.Subject,
		Email:     r.Email,
		TokenHash: tokenHash[:],
		CodeSalt:  salt[:],
		CodeHash:  codeHash(salt[:], code),
		CreatedAt: now,
		ExpiresAt: now.Add(s.cfg.TTL),
	}
	if err := s.cfg.Store.InsertChallenge(ctx, c); err != nil {
		return Sent{}, fmt.Errorf("contact: storing the challenge: %w", err)
	}
	msg := s.compose(r, base64.RawURLEncoding.EncodeToString(token[:]), code, c.ExpiresAt)
	if err := s.cfg.Mailer.Send(ctx, msg); err != nil {
		return Sent{}, err
	}
	return Sent{ChallengeID: c.ID, ExpiresAt: c.ExpiresAt}, nil
}

func (s *Service) checkLimits(ctx context.Context, subject string, now time.Time) error {
	times, err := s.cfg.Store.ChallengesSince(ctx, subject, now.Add(-24*time.Hour))
	if err != nil {
		return fmt.Errorf("contact: reading recent challenges: %w", err)
	}
	if len(times) >= s.cfg.MaxPerDay {
		// The window frees a place when the oldest of the last MaxPerDay
		// leaves it.
		return &LimitError{RetryAfter: times[len(times)-s.cfg.MaxPerDay].Add(24 * time.Hour)}
	}
	if len(times) > 0 {
		if next := times[len(times)-1].Add(s.cfg.ResendInterval); now.Before(next) {
			return &LimitError{RetryAfter: next}
		}
	}
	return nil
}

func (s *Service) compose(r Request, token, code string, expires time.Time) Message {
	link, _ := url.Parse(s.cfg.VerifyURL) // checked by New
	q := link.Query()
	q.Set("token", token)
	link.RawQuery = q.Encode()
	what, subject := "An app", fmt.Sprintf("Confirm the contact address of your app on %s", s.cfg.Product)
	if name := printable(r.AppName, 100); name != "" {
		what = fmt.Sprintf("The app %q", name)
		subject = fmt.Sprintf("Confirm the contact address of %q on %s", name, s.cfg.Product)
	}
	text := fmt.Sprintf(`Hello,

%[1]s was registered on %[2]s with this address as its contact.
To confirm that this address reaches the people behind the app, open this link:

  %[3]s

or enter this code where you were asked for it:

  %[4]s

The link and the code work once, until %[5]s.

If you did not register this app, ignore this message: the address is not
used unless it is confirmed.

-- 
%[2]s
`, what, s.cfg.Product, link.String(), code, expires.UTC().Format("2 January 2006 15:04 UTC"))
	return Message{
		To:      r.Email,
		Subject: subject,
		Text:    text,
	}
}

// printable keeps at most n runes of s, dropping control and format
// characters (a name must not bend the mail's lines or direction).
func printable(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if n == 0 {
			break
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			continue
		}
		b.WriteRune(r)
		n--
	}
	return strings.TrimSpace(b.String())
}

func randomCode() string {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return fmt.Sprintf("%06d", n.Int64())
}

func codeHash(salt []byte, code string) []byte {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(code))
	return h.Sum(nil)
}

// Status is the answer to a verification.
type Status string

const (
	StatusOK      Status = "ok"      // the challenge is answered now
	StatusExpired Status = "expired" // too late, or a newer challenge was sent
	StatusUsed    Status = "used"    // answered before
	StatusUnknown Status = "unknown" // no such token, or a wrong code
	// StatusLocked: too many codes were tried against the challenge; its
	// link still works, its code no longer does.
	StatusLocked Status = "locked"
)

// Verification is the outcome of VerifyToken or VerifyCode.
type Verification struct {
	Status      Status
	ChallengeID string // empty for StatusUnknown without a challenge
	Subject     string
	Email       string
	VerifiedAt  time.Time // set with StatusOK
	// AttemptsLeft is how many more codes may be tried (VerifyCode only).
	AttemptsLeft int
}

// VerifyToken answers the link's token. The error is the store's only.
func (s *Service) VerifyToken(ctx context.Context, token string) (Verification, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) != 32 {
		return Verification{Status: StatusUnknown}, nil
	}
	h := sha256.Sum256(raw)
	c, err := s.cfg.Store.ChallengeByTokenHash(ctx, h[:])
	if errors.Is(err, ErrNotFound) {
		return Verification{Status: StatusUnknown}, nil
	}
	if err != nil {
		return Verification{}, fmt.Errorf("contact: reading the challenge: %w", err)
	}
	return s.answer(ctx, c, s.cfg.Now())
}

// VerifyCode answers the 6-digit code of subject's newest challenge. The
// error is the store's only.
func (s *Service) VerifyCode(ctx context.Context, subject, code string) (Verification, error) {
	if !isCode(code) {
		return Verification{Status: StatusUnknown}, nil
	}
	c, err := s.cfg.Store.LatestChallenge(ctx, subject)
	if errors.Is(err, ErrNotFound) {
		return Verification{Status: StatusUnknown}, nil
	}
	if err != nil {
		return Verification{}, fmt.Errorf("contact: reading the challenge: %w", err)
	}
	now := s.cfg.Now()
	v := Verification{ChallengeID: c.ID, Subject: c.Subject, Email: c.Email}
	switch {
	case !c.UsedAt.IsZero():
		v.Status = StatusUsed
		return v, nil
	case !now.Before(c.ExpiresAt):
		v.Status = StatusExpired
		return v, nil
	}
	// Count the attempt before comparing, so that concurrent guesses
	// cannot together try more than MaxCodeAttempts codes.
	n, err := s.cfg.Store.AddCodeAttempt(ctx, c.ID)
	if err != nil {
		return Verification{}, fmt.Errorf("contact: counting the attempt: %w", err)
	}
	if n > s.cfg.MaxCodeAttempts {
		v.Status = StatusLocked
		return v, nil
	}
	if subtle.ConstantTimeCompare(codeHash(c.CodeSalt, code), c.CodeHash) != 1 {
		v.Status, v.AttemptsLeft = StatusUnknown, s.cfg.MaxCodeAttempts-n
		if v.AttemptsLeft == 0 {
			v.Status = StatusLocked
		}
		return v, nil
	}
	return s.answer(ctx, c, now)
}

func isCode(s string) bool {
	if len(s) != 6 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// answer completes challenge c if it can still be answered.
func (s *Service) answer(ctx context.Context, c Challenge, now time.Time) (Verification, error) {
	v := Verification{ChallengeID: c.ID, Subject: c.Subject, Email: c.Email}
	if !c.UsedAt.IsZero() {
		v.Status = StatusUsed
		return v, nil
	}
	if !now.Before(c.ExpiresAt) {
		v.Status = StatusExpired
		return v, nil
	}
	latest, err := s.cfg.Store.LatestChallenge(ctx, c.Subject)
	if err != nil {
		return Verification{}, fmt.Errorf("contact: reading the latest challenge: %w", err)
	}
	if latest.ID != c.ID { // superseded by a newer email
		v.Status = StatusExpired
		return v, nil
	}
	won, err := s.cfg.Store.ConsumeChallenge(ctx, c.ID, now)
	if err != nil {
		return Verification{}, fmt.Errorf("contact: completing the challenge: %w", err)
	}
	if !won {
		v.Status = StatusUsed
		return v, nil
	}
	v.Status, v.VerifiedAt = StatusOK, now
	return v, nil
}

// ReasonFor maps an error of Send to its reason code ("" for errors that
// are not about the address or the mail: a LimitError, a store failure).
func ReasonFor(err error) string {
	switch {
	case errors.Is(err, ErrUndeliverable):
		return ReasonContactUndeliverable
	case errors.Is(err, ErrMailUnavailable):
		return ReasonMailUnavailable
	}
	return ""
}
