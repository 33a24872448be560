package gate

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/gate/clamav"
	"github.com/xpromo/xpromo/server/gate/codesign"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/pkgread"
	"github.com/xpromo/xpromo/server/gate/rdap"
	"github.com/xpromo/xpromo/server/jobs"
)

// Reason codes the gate adds to those of the check libraries
// (docs/gate.md lists them all).
const (
	// ReasonSignatureUnsupported: the package's format carries a container
	// signature the gate does not verify (an MSIX bundle, dmg, a bare
	// Mach-O), so `signed` cannot be true. Ship a zipped .app or a signed
	// .pkg, a signed .exe, .msi or .msix.
	ReasonSignatureUnsupported = "gate_signature_unsupported_format"
	// ReasonSignerMismatch: the signature verifies, but its signer is not
	// the identity the package declares: a macOS app's signing identifier
	// is not the app's bundle_id, or a Windows package's declared publisher
	// (CompanyName, Manufacturer) is not the signer's organisation
	// (BindSigner).
	ReasonSignerMismatch = "gate_signer_mismatch"
	// ReasonPlatformMismatch: the package is for the other operating system
	// than the app's platform (a Windows installer for a mac app).
	ReasonPlatformMismatch = "gate_platform_mismatch"
	// ReasonDomainShared: the domain sits under a shared suffix
	// (github.io, s3.amazonaws.com …) whose age says nothing about the app.
	ReasonDomainShared = "gate_domain_shared"
)

// Status-history reasons the gate writes.
const (
	HistoryPassed  = "gate_passed"       // pending → approved
	HistoryRecheck = "recheck_requested" // rejected → pending (the app asked, or a scheduled re-check ran)
)

// Tx is what the gate needs from a transaction: the apps domain's.
type Tx interface {
	apps.Tx
}

// Service runs the vetting gate: Run is the handler of gate jobs
// (xpromo.JobGate), Recheck and the contact methods back the gate's
// endpoints. Its fields are its dependencies.
type Service struct {
	Apps   *apps.Service
	Update func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	View   func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

	Fetcher Fetcher
	Reader  pkgread.Reader
	// Roots are the code-signing roots real downloads must chain to; nil
	// trusts nothing (every real download is gate_untrusted_signer).
	Roots *x509.CertPool
	// SandboxRoots verify downloads the test-mode sandbox served
	// (Download.Sandbox), and nothing else.
	SandboxRoots *x509.CertPool
	// Notary looks notarisation tickets up online (Apple's ticket service,
	// --gate-notary-url); nil: only a stapled ticket counts. SandboxNotary
	// answers for downloads the sandbox served, and nothing else.
	Notary, SandboxNotary NotaryLookup
	// Revocation asks OCSP responders and CRL distribution points about a
	// verified signer's chain (--gate-revocation); nil: not checked.
	// SandboxRevocation answers for downloads the sandbox served, and
	// nothing else.
	Revocation, SandboxRevocation RevocationChecker
	// Scanner is nil when no clamd is configured: scanning a real
	// download is then gate_scanner_unavailable.
	Scanner Scanner
	Domains DomainChecker
	// Contact sends and verifies challenges; Challenges is its store, read
	// to learn whether the app's address answered. Both nil: the contact
	// check is gate_mail_unavailable.
	Contact    *contact.Service
	Challenges contact.Store
	// MaxAttempts is the job runner's: on the last attempt a check that
	// could not run becomes the outcome instead of a retry.
	MaxAttempts int
	Now         func() time.Time
	Log         *slog.Logger
}

// Result is what a gate job records: the score's GateResult and the
// evidence each check gathered.
type Result struct {
	apps.GateResult
	Evidence Evidence `json:"evidence"`
}

// Evidence is what the checks saw; absent parts did not run.
type Evidence struct {
	Download  *DownloadEvidence  `json:"download,omitempty"`
	Package   *PackageEvidence   `json:"package,omitempty"`
	Signature *SignatureEvidence `json:"signature,omitempty"`
	Malware   *MalwareEvidence   `json:"malware,omitempty"`
	Domain    *DomainEvidence    `json:"domain,omitempty"`
	Contact   *ContactEvidence   `json:"contact,omitempty"`
	// Details explains each reason code of the result, by code.
	Details map[string]string `json:"details,omitempty"`
}

type DownloadEvidence struct {
	URL      string `json:"url"`
	FinalURL string `json:"final_url"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Sandbox  bool   `json:"sandbox,omitempty"`
}

type PackageEvidence struct {
	Format    string   `json:"format"`
	Platform  string   `json:"platform,omitempty"`
	BundleIDs []string `json:"bundle_ids"`
	Name      string   `json:"name,omitempty"`
	Version   string   `json:"version,omitempty"`
	Publisher string   `json:"publisher,omitempty"`
	// FeedURL is the bundle's SUFeedURL (its Sparkle appcast), which the
	// scoring job reads release cadence from.
	FeedURL string `json:"feed_url,omitempty"`
	// Container is "zip:<path>" when the download is a zip around one
	// installer and the package described is that installer.
	Container string `json:"container,omitempty"`
	// DiskImage is what a .dmg says about itself (its partitions, the
	// filesystem read, its chunk types, its own code signature).
	DiskImage *DiskImageEvidence `json:"disk_image,omitempty"`
}

// DiskImageEvidence describes a .dmg: the app path inside it, and its own
// code signature: Signed and NotaryTicket say the trailer points at one
// (and it has a ticket slot); SignatureVerified that it verified, by
// Signer (the leaf's common name), as the app's signature did.
type DiskImageEvidence struct {
	Partitions        []string `json:"partitions"`
	Filesystem        string   `json:"filesystem,omitempty"`
	Chunks            []string `json:"chunks,omitempty"`
	AppPath           string   `json:"app_path,omitempty"`
	Signed            bool     `json:"signed"`
	NotaryTicket      bool     `json:"notary_ticket"`
	SignatureVerified bool     `json:"signature_verified"`
	Signer            string   `json:"signer,omitempty"`
}

type SignatureEvidence struct {
	Kind      string `json:"kind"`
	SignerCN  string `json:"signer_cn"`
	SignerOrg string `json:"signer_org,omitempty"`
	// The verified leaf certificate: its subject and issuer (RFC 4514),
	// serial number (hex) and SHA-256 fingerprint (hex) — what the
	// signature proves, next to what the package declares.
	SignerSubject     string     `json:"signer_subject,omitempty"`
	SignerIssuer      string     `json:"signer_issuer,omitempty"`
	SignerSerial      string     `json:"signer_serial,omitempty"`
	SignerSHA256      string     `json:"signer_sha256,omitempty"`
	DeclaredPublisher string     `json:"declared_publisher,omitempty"`
	TeamID            string     `json:"team_id,omitempty"`
	SigningIdentity   string     `json:"signing_identity,omitempty"`
	Notarized         bool       `json:"notarized"`
	Timestamp         *time.Time `json:"timestamp,omitempty"`

	// NotarySource says what decided notarisation: "online" (the ticket
	// service), or where the stapled ticket was found: "stapled-bundle" (an
	// app's Contents/CodeResources), "stapled-signature" (the signature's
	// ticket slot), "stapled-trailer" (a .pkg's t8lr trailer); empty when
	// there is none.
	NotarySource string `json:"notary_source,omitempty"`
	// NotaryRecord is the record name asked of the ticket service
	// ("2/<digest type>/<digest>"), NotaryLookup its answer: "found", "not
	// found", or "unavailable …" (then the stapled ticket decided). Both
	// empty when no lookup ran.
	NotaryRecord string `json:"notary_record,omitempty"`
	NotaryLookup string `json:"notary_lookup,omitempty"`

	// What revocation checking found (docs/gate.md, "Revocation"): the
	// chain's status (good, revoked, unknown, unchecked), the source that
	// decided it (ocsp, crl, none) and its URL; for a revoked certificate
	// the RFC 5280 reason and the revocation time; Detail says why an
	// unknown status passed (soft-fail) or a revoked one did or did not.
	RevocationStatus string     `json:"revocation_status,omitempty"`
	RevocationSource string     `json:"revocation_source,omitempty"`
	RevocationURL    string     `json:"revocation_url,omitempty"`
	RevocationReason string     `json:"revocation_reason,omitempty"`
	RevokedAt        *time.Time `json:"revoked_at,omitempty"`
	RevocationDetail string     `json:"revocation_detail,omitempty"`
}

type MalwareEvidence struct {
	Infected  bool   `json:"infected"`
	Signature string `json:"signature,omitempty"`
	Bytes     int64  `json:"bytes"`
}

type DomainEvidence struct {
	Domain        string     `json:"domain"`
	RDAPURL       string     `json:"rdap_url,omitempty"`
	RegisteredAt  *time.Time `json:"registered_at,omitempty"`
	EligibleAt    *time.Time `json:"eligible_at,omitempty"`
	PrivateSuffix string     `json:"private_suffix,omitempty"`
}

type ContactEvidence struct {
	Email      string     `json:"email"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	VerifiedAt *time.Time `json:"verified_at,omitempty"`
	// NextCheckAt is when the gate looks again (the challenge's expiry).
	NextCheckAt *time.Time `json:"next_check_at,omitempty"`
}

// failure is a check that did not pass.
type failure struct {
	reason    string
	transient bool
	detail    string
}

// report is the outcome of one run of the five checks.
type report struct {
	gate     xpromo.Gate
	failures []failure // in check order
	// contactWait: the four other checks passed and a challenge is out,
	// unanswered; the gate looks again at contactNext.
	contactWait bool
	contactNext time.Time
	// eligibleAt is when a too-young domain becomes old enough.
	eligibleAt *time.Time
	evidence   Evidence
}

func (r *report) fail(reason string, transient bool, format string, args ...any) {
	r.failures = append(r.failures, failure{reason: reason, transient: transient, detail: fmt.Sprintf(format, args...)})
}

func (r *report) definitive() bool {
	for _, f := range r.failures {
		if !f.transient {
			return true
		}
	}
	return false
}

func (r *report) firstTransient() *failure {
	for i := range r.failures {
		if r.failures[i].transient {
			return &r.failures[i]
		}
	}
	return nil
}

// verdict is what the outcome rules make of a report.
type verdict int

const (
	approve verdict = iota
	reject
	wait // pending: the contact challenge is out
)

// verdict: any failure rejects (a transient one only reaches here on the
// last attempt, or next to a definitive one), with the first definitive
// failure's code as the history reason (else the first's); all four checks
// passed and the contact not verified yet waits; everything passed
// approves.
func (r *report) verdict() (verdict, string) {
	for _, f := range r.failures {
		if !f.transient {
			return reject, f.reason
		}
	}
	switch {
	case len(r.failures) > 0:
		return reject, r.failures[0].reason
	case r.contactWait:
		return wait, contact.ReasonContactUnverified
	}
	return approve, HistoryPassed
}

func (r *report) result() Result {
	res := Result{GateResult: apps.GateResult{Gate: r.gate, Reasons: []string{}}, Evidence: r.evidence}
	details := map[string]string{}
	for _, f := range r.failures {
		if _, seen := details[f.reason]; !seen {
			res.Reasons = append(res.Reasons, f.reason)
			details[f.reason] = f.detail
		}
	}
	if r.contactWait {
		res.Reasons = append(res.Reasons, contact.ReasonContactUnverified)
		details[contact.ReasonContactUnverified] = "a challenge was mailed to the contact address and is not answered yet"
	}
	if r.eligibleAt != nil {
		res.RetryAfter = r.eligibleAt
	}
	if len(details) > 0 {
		res.Evidence.Details = details
	}
	return res
}

func (s *Service) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// Run is the handler of gate jobs (jobs.Runner.Handle(xpromo.JobGate, …)):
// it runs the checks outside any transaction and returns the outcome to
// apply in the transaction that completes the job. A check that could not
// run (a transient failure) retries the job, unless another check already
// failed for good or this is the runner's last attempt: then the outcome
// says so and the app is rejected.
func (s *Service) Run(ctx context.Context, job apps.Job) (jobs.Outcome[Tx], error) {
	var app apps.App
	var open bool // the gate may still decide the app
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		a, ok, err := tx.GetApp(ctx, job.AppID, false)
		if err != nil {
			return err
		}
		if !ok {
			return jobs.Permanent("not_found", "the job's app does not exist")
		}
		h, err := tx.AppStatusHistory(ctx, a.ID)
		app, open = a, gateOpen(a, h)
		return err
	})
	if err != nil {
		return jobs.Outcome[Tx]{}, err
	}
	rep, err := s.check(ctx, app, job, open)
	if err != nil {
		return jobs.Outcome[Tx]{}, err
	}
	if t := rep.firstTransient(); t != nil && !rep.definitive() && job.Attempts < s.MaxAttempts {
		e := jobs.Transient(t.reason, "%s; the gate will try again", t.detail)
		if rep.contactNext.After(s.now()) && t.reason == contact.ReasonMailUnavailable {
			e.RetryAfter = rep.contactNext.Sub(s.now())
		}
		return jobs.Outcome[Tx]{}, e
	}
	result := rep.result()
	raw, err := json.Marshal(result)
	if err != nil {
		return jobs.Outcome[Tx]{}, err
	}
	return jobs.Outcome[Tx]{Result: raw, Apply: func(ctx context.Context, tx Tx) error {
		return s.apply(ctx, tx, job, rep)
	}}, nil
}

// gateOpen reports whether the gate may still move the app: it is pending,
// or the gate itself rejected it (a re-check). An app an operator (or
// trading) decided is not the gate's to move.
func gateOpen(a apps.App, h []apps.StatusChange) bool {
	switch {
	case a.Status == xpromo.AppStatusPending:
		return true
	case a.Status == xpromo.AppStatusRejected:
		return len(h) > 0 && h[len(h)-1].Actor == apps.ActorGate
	}
	return false
}

// check runs the five checks on app. With open false (an operator decided
// the app) no challenge is mailed: the contact is only read.
func (s *Service) check(ctx context.Context, app apps.App, job apps.Job, open bool) (*report, error) {
	rep := &report{}
	s.checkDomain(ctx, app, rep)
	if err := s.checkDownload(ctx, app, rep); err != nil {
		return nil, err
	}
	// The contact is asked only once everything else passed: no challenge
	// mail goes to an app the gate rejects anyway.
	if len(rep.failures) == 0 {
		if err := s.checkContact(ctx, app, job, open, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

func (s *Service) checkDomain(ctx context.Context, app apps.App, rep *report) {
	if s.Domains == nil {
		rep.fail(rdap.ReasonRDAPUnavailable, true, "no RDAP service is configured")
		return
	}
	res := s.Domains.Check(ctx, app.Domain)
	ev := &DomainEvidence{Domain: res.Name.Domain, RDAPURL: res.URL, PrivateSuffix: res.Name.PrivateSuffix}
	if ev.Domain == "" {
		ev.Domain = app.Domain
	}
	if !res.RegisteredAt.IsZero() {
		reg, elig := res.RegisteredAt.UTC(), res.EligibleAt.UTC()
		ev.RegisteredAt, ev.EligibleAt = &reg, &elig
	}
	rep.evidence.Domain = ev
	switch {
	case res.Reason == rdap.ReasonDomainTooYoung:
		rep.eligibleAt = ev.EligibleAt
		rep.fail(res.Reason, false, "%s was registered on %s; it is eligible from %s", res.Name.Domain,
			res.RegisteredAt.UTC().Format(time.DateOnly), res.EligibleAt.UTC().Format(time.RFC3339))
	case res.Reason != "":
		detail := res.Reason
		if res.Err != nil {
			detail = res.Err.Error()
		}
		rep.fail(res.Reason, res.Retryable(), "%s", detail)
	case res.Name.PrivateSuffix != "":
		// The registry's date is the suffix owner's (github.io), not the
		// app's: it proves nothing about the app's domain.
		rep.fail(ReasonDomainShared, false, "%s is under the shared suffix %s, whose age says nothing about the app", app.Domain, res.Name.PrivateSuffix)
	default:
		rep.gate.DomainAgeOK = true
	}
}

// checkDownload fetches the package and runs bundle_match, signed and
// malware_clean on it.
func (s *Service) checkDownload(ctx context.Context, app apps.App, rep *report) error {
	d, err := s.Fetcher.Fetch(ctx, FetchRequest{URL: app.DownloadURL, Platform: app.Platform, BundleID: app.BundleID})
	if err != nil {
		var ce *CheckError
		if !errors.As(err, &ce) {
			return err
		}
		rep.fail(ce.Reason, ce.Transient, "%s", ce.Error())
		return nil
	}
	defer func() {
		if err := d.Close(); err != nil {
			s.log().Warn("removing a download", slog.String("path", d.Path), slog.String("error", err.Error()))
		}
	}()
	rep.evidence.Download = &DownloadEvidence{URL: d.URL, FinalURL: d.FinalURL, Size: d.Size, SHA256: d.SHA256, Sandbox: d.Sandbox}

	f, err := d.Open()
	if err != nil {
		return fmt.Errorf("gate: opening the download: %w", err)
	}
	defer f.Close()
	if err := s.checkPackage(ctx, f, d.Size, d.Sandbox, app, rep); err != nil {
		return err
	}

	// malware_clean
	if s.Scanner == nil {
		rep.fail(clamav.ReasonScannerUnavailable, true, "no malware scanner (clamd) is configured")
		return nil
	}
	res, err := s.Scanner.Scan(ctx, d)
	rep.evidence.Malware = &MalwareEvidence{Infected: res.Infected, Signature: res.Signature, Bytes: res.Bytes}
	switch r := clamav.ReasonFor(res, err); r {
	case "":
		rep.gate.MalwareClean = true
	case clamav.ReasonMalwareFound:
		rep.fail(r, false, "the scanner found %s", res.Signature)
	case clamav.ReasonScannerUnavailable:
		// The app's owner reads the detail: the scanner's address stays in
		// the log.
		s.log().Warn("malware scan failed", slog.String("app_id", app.ID), slog.String("error", err.Error()))
		rep.fail(r, true, "the malware scanner did not answer")
	default:
		rep.fail(r, false, "%s", err.Error())
	}
	return nil
}

// checkPackage runs bundle_match and signed on a package: the gate's jobs
// on a download, `xpromo-server gate inspect` on a local file (Inspect).
// sandbox selects the sandbox's root instead of the configured ones.
func (s *Service) checkPackage(ctx context.Context, f io.ReaderAt, size int64, sandbox bool, app apps.App, rep *report) error {
	// A zip around one Windows installer: the installer is what is read
	// and verified (one level, pkgread.Unwrap).
	nested, err := pkgread.Unwrap(ctx, f, size, s.Reader.Limits, 0)
	if err != nil {
		r := pkgread.ReasonOf(err)
		if r == "" {
			return err
		}
		rep.evidence.Package = &PackageEvidence{Format: pkgread.FormatZip.String(), BundleIDs: []string{}}
		rep.fail(string(r), false, "%s", err.Error())
		return nil
	}
	container := ""
	if nested != nil {
		defer nested.Close()
		f, size, container = nested.File, nested.Size, "zip:"+nested.Path
	}

	// bundle_match
	id, err := s.Reader.Read(ctx, f, size)
	if id != nil {
		rep.evidence.Package = &PackageEvidence{Format: id.Format.String(), Platform: string(id.Platform), BundleIDs: id.BundleIDs,
			Name: id.Name, Version: id.Version, Publisher: id.Publisher, FeedURL: id.FeedURL, Container: container}
		if rep.evidence.Package.BundleIDs == nil {
			rep.evidence.Package.BundleIDs = []string{}
		}
		if d := id.DMG; d != nil {
			rep.evidence.Package.DiskImage = &DiskImageEvidence{Partitions: d.Partitions, Filesystem: d.Filesystem, Chunks: d.Chunks,
				AppPath: id.AppPath, Signed: d.Signed, NotaryTicket: d.NotaryTicket}
			if d.Partitions == nil {
				rep.evidence.Package.DiskImage.Partitions = []string{}
			}
		}
	}
	if err == nil {
		err = pkgread.Match(id, app.BundleID)
	}
	if want := platformOf(app.Platform); err == nil && id.Platform != "" && id.Platform != want {
		rep.fail(ReasonPlatformMismatch, false, "the package is a %s package (%s); the app is registered for %s", id.Platform, id.Format, want)
	} else if err != nil {
		r := pkgread.ReasonOf(err)
		if r == "" {
			return err // a cancelled context: the job's own failure
		}
		rep.fail(string(r), false, "%s", err.Error())
	} else {
		rep.gate.BundleMatch = true
	}

	// signed
	format := pkgread.FormatUnknown
	if id != nil {
		format = id.Format
	}
	roots := s.Roots
	if sandbox {
		roots = s.SandboxRoots
	}
	if roots == nil {
		roots = x509.NewCertPool() // never the system's: trusts nothing
	}
	v := &codesign.Verifier{Roots: roots, Now: s.Now}
	var sig *codesign.Result
	switch format {
	case pkgread.FormatZip:
		sig, err = v.VerifyApp(ctx, f, size)
	case pkgread.FormatPE:
		sig, err = v.VerifyPE(ctx, f, size)
	case pkgread.FormatMSI:
		sig, err = v.VerifyMSI(ctx, f, size)
	case pkgread.FormatDMG:
		sig, err = v.VerifyDMGApp(ctx, f, size)
	case pkgread.FormatPKG:
		sig, err = v.VerifyPKG(ctx, f, size)
	case pkgread.FormatMSIX:
		sig, err = v.VerifyMSIX(ctx, f, size)
	case pkgread.FormatUnknown:
		err = nil // the package reason says it all
	default:
		err = nil
		rep.fail(ReasonSignatureUnsupported, false, "the gate does not verify the signature of a %s; ship a zipped .app, a .dmg or a signed .pkg (macOS) or a signed .exe, .msi or .msix (Windows)", format)
	}
	var nc notaryCheck
	if sig != nil {
		nc, err = s.checkNotarisation(ctx, sandbox, sig, err)
		rep.evidence.Signature = SignatureEvidenceOf(sig, id)
		if pk := rep.evidence.Package; sig.Image != nil && pk != nil && pk.DiskImage != nil {
			pk.DiskImage.SignatureVerified, pk.DiskImage.Signer = true, sig.Image.SignerCommonName
		}
		rep.evidence.Signature.NotaryRecord, rep.evidence.Signature.NotaryLookup = nc.record, nc.outcome
	}
	// Revocation: of a chain that verified (a signature only missing its
	// notarisation still has one).
	revoked := ""
	if sig != nil && (err == nil || codesign.ReasonOf(err) == codesign.ReasonNotNotarized) {
		if v := s.checkRevocation(ctx, sandbox, sig, rep.evidence.Signature); v.Fail {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			revoked = v.Detail
		}
	}
	switch {
	case err != nil:
		r := codesign.ReasonOf(err)
		if r == "" {
			return err
		}
		rep.fail(string(r), false, "%s", err.Error())
		if revoked != "" {
			rep.fail(ReasonSignatureRevoked, false, "%s", revoked)
		}
	case sig == nil:
	case revoked != "":
		rep.fail(ReasonSignatureRevoked, false, "%s", revoked)
	default:
		if detail := BindSigner(sig, id, app.BundleID); detail != "" {
			rep.fail(ReasonSignerMismatch, false, "%s", detail)
		} else {
			rep.gate.Signed = true
		}
	}
	return nil
}

// platformOf is the package platform an app's platform ships.
func platformOf(p xpromo.Platform) pkgread.Platform {
	if p == xpromo.PlatformWin {
		return pkgread.Windows
	}
	return pkgread.MacOS
}

// checkContact: verified iff the app's newest challenge is for its current
// contact_email and was answered. Otherwise a live challenge is waited for;
// an expired unanswered one rejects (unless this job was queued after it
// expired — a re-check —, which sends a new one); with none, one is sent.
func (s *Service) checkContact(ctx context.Context, app apps.App, job apps.Job, open bool, rep *report) error {
	ev := &ContactEvidence{Email: app.ContactEmail}
	rep.evidence.Contact = ev
	if s.Challenges == nil || s.Contact == nil {
		rep.fail(contact.ReasonMailUnavailable, true, "no contact challenge store is configured")
		return nil
	}
	now := s.Now()
	c, err := s.Challenges.LatestChallenge(ctx, app.ID)
	found := err == nil
	if err != nil && !errors.Is(err, contact.ErrNotFound) {
		return fmt.Errorf("gate: reading the contact challenge: %w", err)
	}
	if found && c.Email == app.ContactEmail {
		exp := c.ExpiresAt.UTC()
		ev.ExpiresAt = &exp
		switch {
		case !c.UsedAt.IsZero():
			at := c.UsedAt.UTC()
			ev.VerifiedAt = &at
			rep.gate.ContactVerified = true
			return nil
		case now.Before(c.ExpiresAt) && job.LastError != contact.ReasonMailUnavailable:
			// A challenge is out (a retry after a failed send does not
			// trust it: its mail may never have left).
			rep.contactWait, rep.contactNext = true, c.ExpiresAt
			ev.NextCheckAt = &exp
			return nil
		case !now.Before(c.ExpiresAt) && job.CreatedAt.Before(c.ExpiresAt):
			rep.fail(contact.ReasonContactUnverified, false, "the challenge mailed to %s expired at %s unanswered", app.ContactEmail, exp.Format(time.RFC3339))
			return nil
		}
	}
	if !open {
		rep.fail(contact.ReasonContactUnverified, false, "not asked: the app's status was decided by an operator")
		return nil
	}
	sent, err := s.Contact.Send(ctx, contact.Request{Subject: app.ID, Email: app.ContactEmail, AppName: app.Name})
	var limit *contact.LimitError
	switch {
	case err == nil:
	case errors.As(err, &limit):
		rep.contactNext = limit.RetryAfter
		rep.fail(contact.ReasonMailUnavailable, true, "a challenge was mailed too recently; the next may go at %s", limit.RetryAfter.UTC().Format(time.RFC3339))
		return nil
	case contact.ReasonFor(err) == contact.ReasonContactUndeliverable:
		rep.fail(contact.ReasonContactUndeliverable, false, "%s", err.Error())
		return nil
	case contact.ReasonFor(err) == contact.ReasonMailUnavailable:
		s.log().Warn("mailing the contact challenge failed", slog.String("app_id", app.ID), slog.String("error", err.Error()))
		rep.fail(contact.ReasonMailUnavailable, true, "the challenge email could not be sent (the mail server is unavailable)")
		return nil
	default:
		return err
	}
	exp := sent.ExpiresAt.UTC()
	ev.ExpiresAt = &exp
	// Someone (the test-mode sandbox's inbox, a quick reader) may have
	// answered already.
	if c, err := s.Challenges.LatestChallenge(ctx, app.ID); err == nil && c.ID == sent.ChallengeID && !c.UsedAt.IsZero() {
		at := c.UsedAt.UTC()
		ev.VerifiedAt = &at
		rep.gate.ContactVerified = true
		return nil
	}
	rep.contactWait, rep.contactNext = true, sent.ExpiresAt
	ev.NextCheckAt = &exp
	return nil
}

// apply writes the outcome of rep in the transaction completing job: the
// app is re-read there, so an operator's decision made while the checks ran
// is never overwritten.
func (s *Service) apply(ctx context.Context, tx Tx, job apps.Job, rep *report) error {
	a, ok, err := tx.GetApp(ctx, job.AppID, true)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("gate: app %s vanished", job.AppID)
	}
	h, err := tx.AppStatusHistory(ctx, a.ID)
	if err != nil {
		return err
	}
	gateRejected := a.Status == xpromo.AppStatusRejected && gateOpen(a, h)
	// The scoring job reads what the gate saw: a new result is scored now
	// (queued first, so the score.updated below shows it).
	if err := s.queueScoring(ctx, tx, a.ID); err != nil {
		return err
	}
	if !gateOpen(a, h) {
		// Decided by an operator (or trading): the result is recorded,
		// nothing moves.
		return s.Apps.ScoreUpdated(ctx, tx, a.ID)
	}
	v, reason := rep.verdict()
	// Follow-up jobs first, so the score.updated the move writes shows them
	// (next_review_at).
	switch {
	case v == reject && rep.eligibleAt != nil:
		if err := s.queue(ctx, tx, a.ID, *rep.eligibleAt); err != nil {
			return err
		}
	case v == wait:
		if err := s.queue(ctx, tx, a.ID, rep.contactNext); err != nil {
			return err
		}
	}
	if gateRejected {
		// A scheduled re-check: back to pending, then to the new outcome,
		// in this one transaction.
		if _, err := s.Apps.Transition(ctx, tx, a.ID, xpromo.AppStatusPending, HistoryRecheck, apps.ActorGate); err != nil {
			return err
		}
	}
	switch v {
	case approve:
		_, err = s.Apps.Transition(ctx, tx, a.ID, xpromo.AppStatusApproved, reason, apps.ActorGate)
	case reject:
		_, err = s.Apps.Transition(ctx, tx, a.ID, xpromo.AppStatusRejected, reason, apps.ActorGate)
	default:
		if !gateRejected {
			err = s.Apps.ScoreUpdated(ctx, tx, a.ID) // the result changed, the status did not
		}
	}
	return err
}

// queue queues a gate job for appID at runAfter, unless one is already
// queued to run by then.
func (s *Service) queue(ctx context.Context, tx Tx, appID string, runAfter time.Time) error {
	_, err := s.queueJob(ctx, tx, appID, runAfter)
	return err
}

func (s *Service) queueJob(ctx context.Context, tx Tx, appID string, runAfter time.Time) (apps.Job, error) {
	return apps.QueueJob(ctx, tx, appID, xpromo.JobGate, runAfter, s.now())
}

// queueScoring has a scoring job for appID run now: reputation reads what
// the gate just recorded. A scoring job already queued (the registration's,
// waiting for this result) is brought forward rather than joined by a second.
func (s *Service) queueScoring(ctx context.Context, tx Tx, appID string) error {
	_, err := apps.QueueJobSoon(ctx, tx, appID, xpromo.JobScoring, s.now(), s.now())
	return err
}
