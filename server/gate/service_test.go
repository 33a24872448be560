package gate_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/clamav"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/gatetest"
	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/gate/rdap"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
	"github.com/xpromo/xpromo/server/webhooks"
)

var ctx = context.Background()

// world is a store with the gate wired to real local counterparts: a
// download server, an RDAP server, clamd and an SMTP server.
type world struct {
	t          *testing.T
	store      storage.Store
	clock      *clocktest.Clock
	apps       *apps.Service
	gate       *gate.Service
	runner     *jobs.Runner[storage.Tx]
	dl         *gatetest.Downloads
	rdap       *gatetest.RDAP
	inbox      *gatetest.Inbox
	challenges *gatetest.Challenges
}

// The counterparts that take time to start are shared by a test's stores.
type counterparts struct {
	clamd string
	inbox *gatetest.Inbox
}

func newWorld(t *testing.T, s storage.Store, cp counterparts) *world {
	// The fixtures' certificates are valid from an hour ago: the clock
	// starts at the wall clock's now.
	clock := clocktest.New(time.Now().UTC().Truncate(time.Second))
	w := &world{t: t, store: s, clock: clock, dl: gatetest.StartDownloads(t), rdap: gatetest.StartRDAP(t), inbox: cp.inbox, challenges: &gatetest.Challenges{}}
	w.apps = &apps.Service{Update: storage.Updater[apps.Tx](s), View: storage.Viewer[apps.Tx](s), Now: clock.Now}
	loop := outbound.Options{TestOnlyAllowLoopback: true}
	domains, err := rdap.New(rdap.Config{BaseURL: w.rdap.URL + "/", HTTP: outbound.New(loop), Now: clock.Now})
	require.NoError(t, err)
	mailer, err := contact.NewSMTPMailer(contact.SMTPConfig{Host: cp.inbox.Host, Port: cp.inbox.Port, TLS: contact.TLSNone, From: "xpromo <verify@xpromo.dev>"})
	require.NoError(t, err)
	cs, err := contact.New(contact.Config{Store: w.challenges, Mailer: mailer, VerifyURL: "https://xpromo.dev/v1/contact/verify", Now: clock.Now})
	require.NoError(t, err)
	w.runner = &jobs.Runner[storage.Tx]{Update: s.Update, Now: clock.Now, Holder: "runner-a", Backoff: []time.Duration{time.Minute, time.Hour}}
	w.gate = &gate.Service{
		Apps: w.apps, Update: storage.Updater[gate.Tx](s), View: storage.Viewer[gate.Tx](s),
		Fetcher: gate.NewHTTPFetcher(gate.HTTPFetcher{Options: loop, Dir: t.TempDir()}),
		Roots:   gatetest.Certs().Roots(), Domains: domains,
		Contact: cs, Challenges: w.challenges,
		MaxAttempts: w.runner.MaxAttempts(), Now: clock.Now,
	}
	if cp.clamd != "" {
		c, err := clamav.New(clamav.Config{Address: cp.clamd})
		require.NoError(t, err)
		w.gate.Scanner = gate.ClamdScanner{Client: c}
	}
	handle(w.runner, w.gate)
	return w
}

// handle registers the gate on a runner, as the server does (package assembly).
func handle(r *jobs.Runner[storage.Tx], g *gate.Service) {
	r.Handle(xpromo.JobGate, time.Minute, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
		out, err := g.Run(ctx, j)
		res := jobs.Outcome[storage.Tx]{Result: out.Result}
		if out.Apply != nil {
			res.Apply = func(ctx context.Context, tx storage.Tx) error { return out.Apply(ctx, tx) }
		}
		return res, err
	})
}

// appSpec is an app to register: its package and the facts about it.
type appSpec struct {
	name, bundleID, domain, email string
	platform                      string
	pkg                           []byte // nil: nothing served (404)
	registered                    time.Time
}

var seq int

func (w *world) register(spec appSpec) apps.App {
	w.t.Helper()
	seq++
	if spec.name == "" {
		spec.name = "Snip"
	}
	if spec.platform == "" {
		spec.platform = "mac"
	}
	if spec.bundleID == "" {
		spec.bundleID = "com.snip.app"
	}
	if spec.domain == "" {
		spec.domain = fmt.Sprintf("snip%d.dev", seq)
	}
	if spec.email == "" {
		spec.email = "dev@" + spec.domain
	}
	if spec.registered.IsZero() {
		spec.registered = w.clock.Now().AddDate(-2, 0, 0)
	}
	w.rdap.Register(spec.domain, spec.registered)
	path := fmt.Sprintf("/%d/Snip.zip", seq)
	u := w.dl.URL + path
	if spec.pkg != nil {
		u = w.dl.Put(path, spec.pkg)
	}
	a, _, _, err := w.apps.Register(ctx, apps.RegisterParams{Name: spec.name, Platform: spec.platform, BundleID: spec.bundleID,
		Domain: spec.domain, DownloadURL: u, ContactEmail: spec.email})
	require.NoError(w.t, err)
	return a
}

func signedApp(bundleID string) []byte {
	return gatetest.App(bundleID, gatetest.AppOptions{Signer: gatetest.Certs().DevID, Notarized: true})
}

// run runs the due jobs once and returns how many ran.
func (w *world) run() int {
	w.t.Helper()
	n, err := w.runner.RunDue(ctx)
	require.NoError(w.t, err)
	return n
}

func (w *world) score(appID string) xpromo.Score {
	w.t.Helper()
	sc, err := w.apps.Score(ctx, appID)
	require.NoError(w.t, err)
	return sc
}

// rejected registers spec and runs the gate: the app must end rejected
// with reason first and exactly the checks of want passed.
func (w *world) rejected(spec appSpec, reason string, want xpromo.Gate) apps.App {
	w.t.Helper()
	a := w.register(spec)
	w.run()
	sc := w.score(a.ID)
	assert.Equal(w.t, xpromo.AppStatusRejected, sc.Status)
	assert.Equal(w.t, want, sc.Gate)
	require.NotEmpty(w.t, sc.Reasons)
	assert.Equal(w.t, reason, sc.Reasons[0], sc.Reasons)
	return a
}

func (w *world) view(appID string) apps.AppView {
	w.t.Helper()
	v, err := w.apps.AppView(ctx, appID)
	require.NoError(w.t, err)
	return v
}

func (w *world) gateJobs(appID string) []apps.Job {
	w.t.Helper()
	var out []apps.Job
	require.NoError(w.t, w.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		js, err := tx.AppJobs(ctx, appID)
		for _, j := range js {
			if j.Kind == xpromo.JobGate {
				out = append(out, j)
			}
		}
		return err
	}))
	return out
}

func (w *world) lastResult(appID string) gate.Result {
	w.t.Helper()
	js := w.gateJobs(appID)
	for i := len(js) - 1; i >= 0; i-- {
		if js[i].Result != nil {
			var r gate.Result
			require.NoError(w.t, json.Unmarshal(js[i].Result, &r))
			return r
		}
	}
	w.t.Fatal("no gate result")
	return gate.Result{}
}

func (w *world) scoreEvents(appID string) []xpromo.Score {
	w.t.Helper()
	var out []xpromo.Score
	require.NoError(w.t, w.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		evs, err := tx.AppEvents(ctx, webhooks.EventQuery{AppID: appID, Types: []xpromo.EventType{xpromo.EventScoreUpdated}, Limit: 1000})
		for _, e := range evs {
			var d xpromo.ScoreEventData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return err
			}
			out = append(out, d.Score)
		}
		return err
	}))
	return out
}

// follow follows the link of the newest challenge email to addr in
// process (gate.Follow: the test-mode sandbox's inbox does the same), the
// same verification as the page's POST. A second time, the link is used.
func (w *world) follow(addr string) {
	w.t.Helper()
	m, ok := w.inbox.Last(addr)
	require.True(w.t, ok, "a challenge email to %s", addr)
	require.NoError(w.t, w.gate.Follow(ctx, m.Link))
	require.ErrorContains(w.t, w.gate.Follow(ctx, m.Link), "used")
}

// One clamd serves the package's tests (it takes seconds to start).
var clamd struct {
	once sync.Once
	addr string
	stop func()
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if clamd.stop != nil {
		clamd.stop()
	}
	os.Exit(code)
}

func sharedClamd(t *testing.T) string {
	clamd.once.Do(func() { clamd.addr, clamd.stop, clamd.err = gatetest.StartClamd() })
	gatetest.NeedClamd(t, clamd.err)
	return clamd.addr
}

func sandboxWorlds(t *testing.T, fn func(t *testing.T, w *world)) {
	cp := counterparts{clamd: sharedClamd(t), inbox: gatetest.SMTP(t)}
	storagetest.Each(t, func(t *testing.T, s storage.Store) { fn(t, newWorld(t, s, cp)) })
}

// The whole way through: the four checks pass, a challenge goes out and
// the app waits; the link from the received email answers it, which runs
// the gate again at once, and the app is approved. Every change wrote
// score.updated; the job records the evidence.
func TestGateApprovesAfterTheContactAnswers(t *testing.T) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		a := w.register(appSpec{pkg: signedApp("com.snip.app")})
		assert.Equal(t, 1, w.run())

		sc := w.score(a.ID)
		assert.Equal(t, xpromo.AppStatusPending, sc.Status)
		assert.Equal(t, xpromo.Gate{Signed: true, MalwareClean: true, DomainAgeOK: true, BundleMatch: true}, sc.Gate)
		assert.Contains(t, sc.Reasons, contact.ReasonContactUnverified)
		assert.NotContains(t, sc.Reasons, apps.ReasonGatePending)
		js := w.gateJobs(a.ID)
		require.Len(t, js, 2, "a re-check is queued at the challenge's expiry")
		assert.Equal(t, xpromo.JobQueued, js[1].Status)
		assert.Equal(t, w.clock.Now().Add(contact.DefaultTTL), js[1].RunAfter)
		assert.False(t, sc.NextReviewAt.After(js[1].RunAfter), "next_review_at is the earliest queued job")

		res := w.lastResult(a.ID)
		require.NotNil(t, res.Evidence.Download)
		assert.Len(t, res.Evidence.Download.SHA256, 64)
		assert.Equal(t, "zip", res.Evidence.Package.Format)
		assert.Equal(t, []string{"com.snip.app"}, res.Evidence.Package.BundleIDs)
		assert.Equal(t, "TEAM123456", res.Evidence.Signature.TeamID)
		assert.True(t, res.Evidence.Signature.Notarized)
		assert.NotNil(t, res.Evidence.Domain.RegisteredAt)
		assert.NotNil(t, res.Evidence.Contact.ExpiresAt)
		assert.Equal(t, "https://app.example/appcast.xml", res.Evidence.Package.FeedURL, "the bundle's SUFeedURL, for the scoring job")
		// Recording a result queued a scoring run, due now (besides the
		// registration's, which no handler runs here).
		var scoringDue int
		require.NoError(t, w.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			js, err := tx.AppJobs(ctx, a.ID)
			for _, j := range js {
				if j.Kind == xpromo.JobScoring && j.Status == xpromo.JobQueued && !j.RunAfter.After(w.clock.Now()) {
					scoringDue++
				}
			}
			return err
		}))
		assert.Equal(t, 1, scoringDue, "the registration's scoring job is still due: no second one")
		// A scorer runs it; the gate's next result queues another.
		scorer := &jobs.Runner[storage.Tx]{Update: w.store.Update, Now: w.clock.Now, Holder: "scorer"}
		scorer.Handle(xpromo.JobScoring, time.Minute, func(context.Context, apps.Job) (jobs.Outcome[storage.Tx], error) {
			return jobs.Outcome[storage.Tx]{Result: json.RawMessage(`{"reputation":{"total":0,"ai_visibility":0,"cadence":0,"reviews":0,"coherence":0},"behavior":null,"reasons":[]}`)}, nil
		})
		n, err := scorer.RunDue(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)

		w.follow(a.ContactEmail)
		assert.Contains(t, w.score(a.ID).Reasons, apps.ReasonGatePending, "the answer queued the gate at once")
		js = w.gateJobs(a.ID)
		require.Len(t, js, 2, "the job queued at the expiry was brought forward: no new one")
		assert.Equal(t, xpromo.JobQueued, js[1].Status)
		assert.Equal(t, w.clock.Now(), js[1].RunAfter)
		assert.Equal(t, 1, w.run())
		sc = w.score(a.ID)
		assert.Equal(t, xpromo.AppStatusApproved, sc.Status)
		assert.Equal(t, xpromo.Gate{Signed: true, MalwareClean: true, DomainAgeOK: true, BundleMatch: true, ContactVerified: true}, sc.Gate)
		assert.NotContains(t, sc.Reasons, contact.ReasonContactUnverified)
		h := w.view(a.ID).History
		assert.Equal(t, apps.StatusChange{AppID: a.ID, From: xpromo.AppStatusPending, To: xpromo.AppStatusApproved, Reason: gate.HistoryPassed, Actor: apps.ActorGate, At: h[len(h)-1].At}, h[len(h)-1])
		n, err = scorer.RunDue(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "the approval's result queued a scoring run")

		evs := w.scoreEvents(a.ID)
		require.GreaterOrEqual(t, len(evs), 4, "registration, the first result, the queued re-check, the approval")
		assert.Equal(t, xpromo.AppStatusApproved, evs[len(evs)-1].Status)
		assert.True(t, evs[len(evs)-1].Gate.ContactVerified)

		// No gate job is left queued at the challenge's expiry: nothing
		// runs the checks again on the approved app then.
		for _, j := range w.gateJobs(a.ID) {
			assert.Equal(t, xpromo.JobSucceeded, j.Status, "%+v", j)
		}
		w.clock.Advance(contact.DefaultTTL)
		assert.Equal(t, 0, w.run())
		assert.Equal(t, xpromo.AppStatusApproved, w.score(a.ID).Status)
		assert.Equal(t, 1, countTo(w.inbox, a.ContactEmail), "no second email")
	})
}

func countTo(in *gatetest.Inbox, addr string) int {
	n := 0
	for _, m := range in.Messages() {
		for _, to := range m.To {
			if to == addr {
				n++
			}
		}
	}
	return n
}

// A Windows app: the PE's version info declares the bundle id, the
// Authenticode signature chains to the configured root; the 6-digit code
// answers the challenge.
func TestGateApprovesASignedWindowsApp(t *testing.T) {
	for _, format := range []string{"pe", "msi", "zip around an msi"} {
		t.Run(format, func(t *testing.T) { approvesSignedWindowsApp(t, format) })
	}
}

func approvesSignedWindowsApp(t *testing.T, format string) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		pkg := gatetest.PE(t, "com.snip.win", gatetest.Certs().PE)
		switch format {
		case "msi":
			pkg = gatetest.SignedMSI(t, "com.snip.win", gatetest.Certs().PE)
		case "zip around an msi":
			pkg = fixture.Zip(fixture.File{Name: "Snip 1.0/Snip.msi", Data: gatetest.SignedMSI(t, "com.snip.win", gatetest.Certs().PE)},
				fixture.File{Name: "Snip 1.0/README.txt", Data: []byte("run Snip.msi")})
		}
		a := w.register(appSpec{platform: "win", bundleID: "com.snip.win", pkg: pkg})
		w.run()
		m, ok := w.inbox.Last(a.ContactEmail)
		require.True(t, ok)

		_, err := w.gate.VerifyCode(ctx, a.ID, wrongCode(m.Code))
		assertCode(t, err, apperr.ContactCodeInvalid)
		v, err := w.gate.VerifyCode(ctx, a.ID, m.Code)
		require.NoError(t, err)
		assert.Equal(t, contact.StatusOK, v.Status)
		_, err = w.gate.VerifyCode(ctx, a.ID, m.Code)
		assertCode(t, err, apperr.ContactChallengeUsed)

		w.run()
		sc := w.score(a.ID)
		assert.Equal(t, xpromo.AppStatusApproved, sc.Status, sc.Reasons)
		res := w.lastResult(a.ID)
		assert.Equal(t, "authenticode", res.Evidence.Signature.Kind)
		assert.Equal(t, "Example Publisher", res.Evidence.Signature.SignerCN)
		assert.Equal(t, "Example Ltd", res.Evidence.Signature.DeclaredPublisher)
		assert.Len(t, res.Evidence.Signature.SignerSHA256, 64)
		assert.Contains(t, res.Evidence.Signature.SignerSubject, "O=Example Ltd")
		if format == "zip around an msi" {
			assert.Equal(t, "msi", res.Evidence.Package.Format)
			assert.Equal(t, "zip:Snip 1.0/Snip.msi", res.Evidence.Package.Container)
		} else {
			assert.Equal(t, format, res.Evidence.Package.Format)
		}
	})
}

func wrongCode(c string) string {
	if c == "000000" {
		return "000001"
	}
	return "000000"
}

func assertCode(t *testing.T, err error, code string) *apperr.Error {
	t.Helper()
	var e *apperr.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, code, e.Code, e.Message)
	return e
}

// Each failing check rejects the app with its reason code, first in the
// history and listed in the score; no challenge email goes to an app the
// gate rejects for another reason.
func TestGateRejections(t *testing.T) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		p := gatetest.Certs()
		cases := []struct {
			name   string
			spec   appSpec
			reason string
			gate   xpromo.Gate
		}{
			{"unsigned", appSpec{pkg: gatetest.App("com.snip.app", gatetest.AppOptions{})}, "gate_unsigned_binary",
				xpromo.Gate{MalwareClean: true, DomainAgeOK: true, BundleMatch: true}},
			{"not notarized", appSpec{pkg: gatetest.App("com.snip.app", gatetest.AppOptions{Signer: p.DevID})}, "gate_not_notarized",
				xpromo.Gate{MalwareClean: true, DomainAgeOK: true, BundleMatch: true}},
			{"unknown signer", appSpec{pkg: gatetest.App("com.snip.app", gatetest.AppOptions{Signer: p.Other.Issue(fixture.CertOptions{CommonName: "Developer ID Application: Mallory (TEAM999999)", OrgUnit: "TEAM999999", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, DeveloperID: true}), Notarized: true})}, "gate_untrusted_signer",
				xpromo.Gate{MalwareClean: true, DomainAgeOK: true, BundleMatch: true}},
			{"another bundle", appSpec{bundleID: "com.other.app", pkg: signedApp("com.snip.app")}, "gate_bundle_mismatch",
				xpromo.Gate{MalwareClean: true, DomainAgeOK: true}},
			{"malware", appSpec{pkg: gatetest.App("com.snip.app", gatetest.AppOptions{Signer: p.DevID, Notarized: true,
				Extra: []fixture.File{gatetest.WithFile("Hello.app/Contents/Resources/readme.txt", []byte(gatetest.EICAR))}})}, "gate_malware_found",
				xpromo.Gate{Signed: true, DomainAgeOK: true, BundleMatch: true}},
			{"unsigned msi", appSpec{platform: "win", bundleID: "com.snip.msi", pkg: gatetest.MSI("com.snip.msi")}, "gate_unsigned_binary",
				xpromo.Gate{MalwareClean: true, DomainAgeOK: true, BundleMatch: true}},
			{"msi signed under an unknown root", appSpec{platform: "win", bundleID: "com.snip.msi", pkg: gatetest.SignedMSI(t, "com.snip.msi",
				p.Other.Issue(fixture.CertOptions{CommonName: "Example Publisher", Organization: "Example Ltd", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}))},
				"gate_untrusted_signer", xpromo.Gate{MalwareClean: true, DomainAgeOK: true, BundleMatch: true}},
			{"exe signed by another publisher", appSpec{platform: "win", bundleID: "com.snip.win", pkg: gatetest.PE(t, "com.snip.win",
				p.Root.Issue(fixture.CertOptions{CommonName: "Mallory", Organization: "Mallory Ltd", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}))},
				gate.ReasonSignerMismatch, xpromo.Gate{MalwareClean: true, DomainAgeOK: true, BundleMatch: true}},
			{"a Windows package for a mac app", appSpec{bundleID: "com.snip.msi", pkg: gatetest.MSI("com.snip.msi")}, gate.ReasonPlatformMismatch,
				xpromo.Gate{MalwareClean: true, DomainAgeOK: true}},
			{"not a package", appSpec{pkg: []byte("<html>Download page</html>")}, "gate_package_unknown_format",
				xpromo.Gate{MalwareClean: true, DomainAgeOK: true}},
			{"a 10 000-level Info.plist", appSpec{pkg: fixture.Zip(fixture.File{Name: "Hello.app/Contents/Info.plist",
				Data: []byte("<plist>" + strings.Repeat("<array>", 10_000) + strings.Repeat("</array>", 10_000) + "</plist>")})},
				apperr.GatePackageTooDeep, xpromo.Gate{MalwareClean: true, DomainAgeOK: true}},
			{"a zip bomb", appSpec{pkg: fixture.Zip(fixture.File{Name: "Hello.app/Contents/Info.plist", Data: make([]byte, 16<<20)})},
				apperr.GatePackageTooLarge, xpromo.Gate{MalwareClean: true, DomainAgeOK: true}},
			{"404", appSpec{}, gate.ReasonDownloadFailed, xpromo.Gate{DomainAgeOK: true}},
			{"undeliverable", appSpec{email: "nobody@snip-undeliverable.dev", pkg: signedApp("com.snip.app")}, contact.ReasonContactUndeliverable,
				xpromo.Gate{Signed: true, MalwareClean: true, DomainAgeOK: true, BundleMatch: true}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				w.t = t
				a := w.rejected(c.spec, c.reason, c.gate)
				h := w.view(a.ID).History
				assert.Equal(t, c.reason, h[len(h)-1].Reason)
				assert.Equal(t, apps.ActorGate, h[len(h)-1].Actor)
				assert.Contains(t, w.lastResult(a.ID).Evidence.Details, c.reason)
				if c.reason != contact.ReasonContactUndeliverable {
					assert.Zero(t, countTo(w.inbox, a.ContactEmail), "no challenge to a rejected app")
				}
			})
		}
	})
}

// A check that could not run next to one that failed for good: the app is
// rejected at once, for the definitive reason, and both are listed.
func TestGateDefinitiveFailureWinsOverATransientOne(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s, counterparts{inbox: gatetest.SMTP(t)}) // no clamd
		a := w.register(appSpec{pkg: gatetest.App("com.snip.app", gatetest.AppOptions{})})
		w.run()
		sc := w.score(a.ID)
		assert.Equal(t, xpromo.AppStatusRejected, sc.Status)
		assert.Equal(t, []string{"gate_unsigned_binary", clamav.ReasonScannerUnavailable, apps.ReasonReputationPending}, sc.Reasons)
		h := w.view(a.ID).History
		assert.Equal(t, "gate_unsigned_binary", h[len(h)-1].Reason)
		assert.Equal(t, 1, w.gateJobs(a.ID)[0].Attempts, "not retried")
	})
}

// A young domain: rejected with gate_domain_too_young, retry_after and
// next_review_at at the eligibility date, where a re-check is queued; the
// app cannot ask for one earlier. At that date the gate checks again,
// moving the app back to pending on its way to the new outcome.
func TestGateDomainTooYoung(t *testing.T) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		registered := w.clock.Now().AddDate(0, -2, 0)
		a := w.register(appSpec{pkg: signedApp("com.snip.app"), registered: registered})
		w.run()
		sc := w.score(a.ID)
		eligible := registered.AddDate(0, rdap.MinimumAge, 0)
		assert.Equal(t, xpromo.AppStatusRejected, sc.Status)
		assert.Equal(t, rdap.ReasonDomainTooYoung, sc.Reasons[0])
		require.NotNil(t, sc.RetryAfter)
		assert.True(t, eligible.Equal(*sc.RetryAfter), "%s", sc.RetryAfter)
		js := w.gateJobs(a.ID)
		require.Len(t, js, 2)
		assert.True(t, eligible.Equal(js[1].RunAfter), "a re-check is queued at %s", js[1].RunAfter)
		assert.NotContains(t, sc.Reasons, apps.ReasonGatePending)

		_, err := w.gate.Recheck(ctx, a.ID)
		e := assertCode(t, err, apperr.GateDomainTooYoung)
		require.NotNil(t, e.RetryAfter)
		assert.True(t, eligible.Equal(*e.RetryAfter))

		w.clock.Advance(eligible.Sub(w.clock.Now()))
		assert.Equal(t, 1, w.run())
		sc = w.score(a.ID)
		assert.Equal(t, xpromo.AppStatusPending, sc.Status, sc.Reasons)
		assert.True(t, sc.Gate.DomainAgeOK)
		assert.Nil(t, sc.RetryAfter)
		h := w.view(a.ID).History
		assert.Equal(t, xpromo.AppStatusRejected, h[len(h)-1].From)
		assert.Equal(t, gate.HistoryRecheck, h[len(h)-1].Reason)
		w.follow(a.ContactEmail)
		w.run()
		assert.Equal(t, xpromo.AppStatusApproved, w.score(a.ID).Status)
	})
}

// An unanswered challenge: at its expiry the queued re-check rejects the
// app with gate_contact_unverified. A re-check asked by the app sends a new
// challenge.
func TestGateContactExpires(t *testing.T) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		a := w.register(appSpec{pkg: signedApp("com.snip.app")})
		w.run()
		assert.Equal(t, 1, countTo(w.inbox, a.ContactEmail))
		w.clock.Advance(contact.DefaultTTL)
		assert.Equal(t, 1, w.run())
		sc := w.score(a.ID)
		assert.Equal(t, xpromo.AppStatusRejected, sc.Status)
		assert.Equal(t, contact.ReasonContactUnverified, sc.Reasons[0])

		j, err := w.gate.Recheck(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.JobQueued, j.Status)
		assert.Equal(t, xpromo.AppStatusPending, w.score(a.ID).Status)
		again, err := w.gate.Recheck(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, j.ID, again.ID, "a pending app with a queued gate job gets that job")
		w.run()
		assert.Equal(t, 2, countTo(w.inbox, a.ContactEmail), "a new challenge")
		assert.Equal(t, xpromo.AppStatusPending, w.score(a.ID).Status)

		// Resending at once is too soon.
		_, _, err = w.gate.Resend(ctx, a.ID)
		e := assertCode(t, err, apperr.ContactResendTooSoon)
		require.NotNil(t, e.RetryAfter)
		w.clock.Advance(contact.DefaultResendInterval)
		email, expires, err := w.gate.Resend(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, a.ContactEmail, email)
		assert.Equal(t, w.clock.Now().Add(contact.DefaultTTL), expires)
		w.follow(a.ContactEmail)
		w.run()
		assert.Equal(t, xpromo.AppStatusApproved, w.score(a.ID).Status)
		_, _, err = w.gate.Resend(ctx, a.ID)
		assertCode(t, err, apperr.ContactAlreadyVerified)
		_, err = w.gate.Recheck(ctx, a.ID)
		assertCode(t, err, apperr.GateRecheckRefused)
	})
}

// A check that cannot run retries the job on the runner's backoff; on the
// last attempt it becomes the outcome.
func TestGateTransientThenLastAttempt(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s, counterparts{inbox: gatetest.SMTP(t)}) // no clamd
		a := w.register(appSpec{pkg: signedApp("com.snip.app")})
		w.run()
		js := w.gateJobs(a.ID)
		require.Len(t, js, 1)
		assert.Equal(t, xpromo.JobQueued, js[0].Status)
		assert.Equal(t, clamav.ReasonScannerUnavailable, js[0].LastError)
		assert.Equal(t, xpromo.AppStatusPending, w.score(a.ID).Status)
		for range w.runner.MaxAttempts() - 1 {
			w.clock.Advance(time.Hour)
			w.run()
		}
		sc := w.score(a.ID)
		assert.Equal(t, xpromo.AppStatusRejected, sc.Status)
		assert.Equal(t, clamav.ReasonScannerUnavailable, sc.Reasons[0])
		assert.Equal(t, xpromo.JobSucceeded, w.gateJobs(a.ID)[0].Status)
		assert.Equal(t, w.runner.MaxAttempts(), w.gateJobs(a.ID)[0].Attempts)
	})
}

// An operator's decision stands: the gate records its result and moves
// nothing; an approval over a failing result shows operator_approved.
func TestGateRespectsOperatorDecisions(t *testing.T) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		a := w.register(appSpec{pkg: gatetest.App("com.snip.app", gatetest.AppOptions{})})
		_, err := w.apps.Act(ctx, a.ID, apps.Approve, "known publisher")
		require.NoError(t, err)
		w.run()
		sc := w.score(a.ID)
		assert.Equal(t, xpromo.AppStatusApproved, sc.Status)
		assert.Equal(t, []string{apps.ReasonOperatorApproved, "gate_unsigned_binary", apps.ReasonReputationPending}, sc.Reasons)
		_, err = w.gate.Recheck(ctx, a.ID)
		assertCode(t, err, apperr.GateRecheckRefused)

		b := w.register(appSpec{pkg: signedApp("com.snip.app")})
		_, err = w.apps.Act(ctx, b.ID, apps.Reject, "spam")
		require.NoError(t, err)
		w.run()
		assert.Equal(t, xpromo.AppStatusRejected, w.score(b.ID).Status)
		assert.Zero(t, countTo(w.inbox, b.ContactEmail), "the gate mails nobody about an app an operator rejected")
		_, err = w.gate.Recheck(ctx, b.ID)
		assertCode(t, err, apperr.GateRecheckRefused)
	})
}

// Two runners claiming at once never run one gate job twice; a runner that
// died mid-job leaves it to the next after its lease, and the outcome is
// applied once.
func TestGateJobsRunOnce(t *testing.T) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		a := w.register(appSpec{pkg: signedApp("com.snip.app")})
		other := &jobs.Runner[storage.Tx]{Update: w.store.Update, Now: w.clock.Now, Holder: "runner-b", Backoff: w.runner.Backoff}
		handle(other, w.gate)
		var wg sync.WaitGroup
		var ran [2]int
		for i, r := range []*jobs.Runner[storage.Tx]{w.runner, other} {
			wg.Go(func() {
				n, err := r.RunDue(ctx)
				assert.NoError(t, err)
				ran[i] = n
			})
		}
		wg.Wait()
		assert.Equal(t, 1, ran[0]+ran[1])
		assert.Equal(t, 1, w.dl.Hits(pathOf(t, a.DownloadURL)))

		// A runner claims b's job and dies.
		b := w.register(appSpec{pkg: signedApp("com.snip.app")})
		require.NoError(t, w.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			got, err := tx.ClaimJobs(ctx, jobs.Claim{Kind: xpromo.JobGate, Holder: "dead", Now: w.clock.Now(), Until: w.clock.Now().Add(2 * time.Minute), Limit: 10})
			require.Len(t, got, 1)
			return err
		}))
		assert.Zero(t, w.run(), "leased")
		w.clock.Advance(2 * time.Minute)
		assert.Equal(t, 1, w.run())
		sc := w.score(b.ID)
		assert.Equal(t, xpromo.AppStatusPending, sc.Status)
		assert.Contains(t, sc.Reasons, contact.ReasonContactUnverified)
		assert.Equal(t, 1, countTo(w.inbox, b.ContactEmail))
		js := w.gateJobs(b.ID)
		assert.Equal(t, 2, js[0].Attempts)
		assert.Len(t, js, 2, "one follow-up queued, once")
	})
}

func pathOf(t *testing.T, u string) string {
	p, err := url.Parse(u)
	require.NoError(t, err)
	return p.Path
}
