package assembly

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/clamav"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/notary"
	"github.com/xpromo/xpromo/server/gate/rdap"
	"github.com/xpromo/xpromo/server/gate/revocation"
	"github.com/xpromo/xpromo/server/gate/sandbox"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/storage"
)

// GateConfig configures the vetting gate's counterparts (docs/gate.md,
// "Configuration"). The zero value is test mode's: no code-signing roots,
// no clamd, no SMTP server, RDAP through IANA's bootstrap file.
type GateConfig struct {
	// RootsFile is a PEM file of the code-signing roots real downloads must
	// chain to (Microsoft's code-signing roots, Apple Root CA).
	RootsFile string
	// ClamdAddress is clamd's address (tcp://host:port, host:port,
	// unix:///path or /path). ClamdMaxStreamBytes is the most streamed to
	// it (0: 100 MiB); keep it at or below clamd's StreamMaxLength.
	ClamdAddress        string
	ClamdMaxStreamBytes int64
	// RDAP: a fixed server, or IANA's bootstrap file from a URL or a file.
	RDAPBaseURL, RDAPBootstrapURL, RDAPBootstrapFile string
	// NotaryURL is the notarisation ticket lookup (Apple's CloudKit
	// records lookup, notary.DefaultURL, when empty); "off": none, only a
	// stapled ticket counts.
	NotaryURL string
	// Revocation is "on" (the default when empty) or "off": whether the
	// signer's chain is checked over OCSP and CRL (docs/gate.md,
	// "Revocation").
	Revocation string
	// SMTP server that mails the contact challenges.
	SMTP contact.SMTPConfig
	// MaxDownloadBytes and DownloadTimeout bound a download (0: 1 GiB, 10
	// minutes); Budget is a gate job's time budget (0: 15 minutes).
	MaxDownloadBytes int64
	DownloadTimeout  time.Duration
	Budget           time.Duration
	// AllowLoopback lets download_url, RDAP and the bootstrap URL be on
	// 127.0.0.1 and ::1, for counterparts on this machine (tests). Test mode
	// only: Build refuses it in live mode.
	AllowLoopback bool
	// Challenges keeps the contact challenges. nil: the server's store.
	Challenges contact.Store
}

// DefaultGateBudget is a gate job's time budget: a 1 GiB download at its
// 10 minutes, the scan and the rest.
const DefaultGateBudget = 15 * time.Minute

// errGateLiveConfig lists what live mode needs for the real checks.
var errGateLoopbackInLive = errors.New("gate: the loopback setting lets download_url reach the server's own machine; it is refused in live mode")

// gateService builds the vetting gate on the apps service.
func gateService(cfg Config, store storage.Store, appsSvc *apps.Service) (*gate.Service, error) {
	g := cfg.Gate
	live := cfg.Mode != httpapi.ModeTest
	if live {
		if g.AllowLoopback {
			return nil, errGateLoopbackInLive
		}
		var missing []string
		if g.RootsFile == "" {
			missing = append(missing, "code-signing roots (--gate-roots-file)")
		}
		if g.ClamdAddress == "" {
			missing = append(missing, "clamd (--clamd-address)")
		}
		if g.SMTP.Host == "" || g.SMTP.From == "" {
			missing = append(missing, "an SMTP server and sender (--smtp-host, --smtp-from)")
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("gate: live mode runs the real checks and needs %s", strings.Join(missing, ", "))
		}
	}
	opts := outbound.Options{RequireHTTPS: live, TestOnlyAllowLoopback: g.AllowLoopback}
	svc := &gate.Service{
		Apps:    appsSvc,
		Update:  storage.Updater[gate.Tx](store),
		View:    storage.Viewer[gate.Tx](store),
		Fetcher: gate.NewHTTPFetcher(gate.HTTPFetcher{Options: opts, MaxBytes: g.MaxDownloadBytes, Timeout: g.DownloadTimeout}),
		Now:     cfg.Now,
		Log:     cfg.Logger.With("component", "gate"),
	}
	if g.RootsFile != "" {
		roots, err := gate.LoadRoots(g.RootsFile)
		if err != nil {
			return nil, err
		}
		svc.Roots = roots
	}
	if g.ClamdAddress != "" {
		c, err := clamav.New(clamav.Config{Address: g.ClamdAddress, MaxStreamBytes: g.ClamdMaxStreamBytes})
		if err != nil {
			return nil, fmt.Errorf("gate: clamd: %w", err)
		}
		svc.Scanner = gate.ClamdScanner{Client: c}
	}
	domains, err := rdap.New(rdap.Config{
		BaseURL: g.RDAPBaseURL, BootstrapURL: g.RDAPBootstrapURL, BootstrapFile: g.RDAPBootstrapFile,
		HTTP: outbound.New(outbound.Options{RequireHTTPS: live, TestOnlyAllowLoopback: g.AllowLoopback, Timeout: 20 * time.Second}),
		Now:  cfg.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	svc.Domains = domains
	if g.NotaryURL != "off" {
		svc.Notary = &notary.Client{URL: g.NotaryURL, HTTP: outbound.New(outbound.Options{RequireHTTPS: live, TestOnlyAllowLoopback: g.AllowLoopback,
			Timeout: 20 * time.Second, MaxResponseBytes: notary.MaxAnswerBytes + 1})}
	}
	switch g.Revocation {
	case "", "on":
		// OCSP and CRLs are served over plain http by design (RFC 5280,
		// RFC 6960: their answers are signed, and an https fetch would
		// itself need a revocation check): RequireHTTPS stays off here.
		// server/outbound's address rules still hold.
		svc.Revocation = &revocation.Client{Now: cfg.Now, HTTP: outbound.New(outbound.Options{TestOnlyAllowLoopback: g.AllowLoopback,
			Timeout: 15 * time.Second, MaxResponseBytes: revocation.MaxCRLBytes + 1})}
	case "off":
	default:
		return nil, fmt.Errorf("gate: --gate-revocation is on or off, not %q", g.Revocation)
	}

	var mailer contact.Mailer = noMailer{}
	if g.SMTP.Host != "" {
		m, err := contact.NewSMTPMailer(g.SMTP)
		if err != nil {
			return nil, fmt.Errorf("gate: %w", err)
		}
		mailer = m
	}
	svc.Challenges = g.Challenges
	if svc.Challenges == nil {
		svc.Challenges = storage.ContactStore(store)
	}

	// Test mode: reserved names (RFC 2606: example.com/.net/.org, *.example,
	// *.test) are answered by the built-in sandbox counterparts — a signed
	// package built for the app, an RDAP answer, an inbox that follows the
	// link — and every other name still reaches the real ones above. What
	// reads their answers (pkgread, codesign, the outcome rules) is the same.
	if !live {
		sb, err := sandbox.New(cfg.Now)
		if err != nil {
			return nil, fmt.Errorf("gate: sandbox: %w", err)
		}
		svc.SandboxRoots = sb.Roots()
		svc.Fetcher = sb.Fetcher(svc.Fetcher)
		svc.Scanner = sb.Scanner(svc.Scanner) // no clamd: its built-in EICAR matcher, for sandbox downloads only
		svc.Domains = sb.Domains(svc.Domains)
		svc.SandboxNotary = sb.Notary()
		if svc.Revocation != nil {
			svc.SandboxRevocation = sb.Revocation()
		}
		mailer = sb.Mailer(mailer, svc.Follow)
	}

	// The link in the challenge email. xpromo-server always sets BaseURL
	// (its listen address by default); a server assembled without one (in
	// tests) links to localhost.
	base := cfg.BaseURL
	if base == "" {
		base = "http://localhost"
	}
	svc.Contact, err = contact.New(contact.Config{Store: svc.Challenges, Mailer: mailer, VerifyURL: base + httpapi.ContactVerifyPath, Now: cfg.Now})
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	return svc, nil
}

// noMailer is the mailer of a server without an SMTP server: every
// challenge fails as gate_mail_unavailable, saying what to configure.
type noMailer struct{}

func (noMailer) Send(context.Context, contact.Message) error {
	return fmt.Errorf("%w: no SMTP server is configured (--smtp-host)", contact.ErrMailUnavailable)
}

// registerGate makes the job runner run gate jobs with svc.
func registerGate(cfg Config, runner *jobs.Runner[storage.Tx], svc *gate.Service) {
	budget := cfg.Gate.Budget
	if budget <= 0 {
		budget = DefaultGateBudget
	}
	svc.MaxAttempts = runner.MaxAttempts()
	runner.Handle(xpromo.JobGate, budget, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
		out, err := svc.Run(ctx, j)
		res := jobs.Outcome[storage.Tx]{Result: out.Result}
		if out.Apply != nil {
			res.Apply = func(ctx context.Context, tx storage.Tx) error { return out.Apply(ctx, tx) }
		}
		return res, err
	})
}
