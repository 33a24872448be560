package assembly_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/gatetest"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// The vetting gate through the HTTP API, as an app's developer meets it,
// against real counterparts: registration queues the gate, the server's
// job loop runs it (download, signature, clamd, RDAP) and mails the
// challenge; the link from the received email, POSTed from its page,
// approves the app. A young domain is rejected with its retry_after; an
// unsigned build is rejected, fixed, and re-checked through the API.
// Every answer is checked against openapi.json.
func TestGateThroughTheAPI(t *testing.T) {
	clamd := gatetest.Clamd(t)
	inbox := gatetest.SMTP(t)
	roots, _ := gatetest.Certs().Root.WritePEM(t.TempDir())
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		clock := clocktest.New(time.Now().UTC().Truncate(time.Second)) // the fixtures' certificates are valid from an hour ago
		dl, rdap := gatetest.StartDownloads(t), gatetest.StartRDAP(t)
		var handler http.Handler
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
		t.Cleanup(ts.Close)
		srv, err := assembly.Build(assembly.Config{
			Now: clock.Now, BaseURL: ts.URL, JobInterval: 5 * time.Millisecond, ReadLimit: 10_000, WriteLimit: 10_000,
			Gate: assembly.GateConfig{
				RootsFile: roots, ClamdAddress: clamd, RDAPBaseURL: rdap.URL + "/", AllowLoopback: true,
				SMTP:       contact.SMTPConfig{Host: inbox.Host, Port: inbox.Port, TLS: contact.TLSNone, From: "xpromo <verify@xpromo.dev>"},
				Challenges: &gatetest.Challenges{},
			},
		}, s)
		require.NoError(t, err)
		handler = srv.HTTP
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); srv.RunJobs(runCtx) }()
		t.Cleanup(func() { stop(); <-done })

		chk := openapitest.New(t)
		httpc := &http.Client{Transport: chk.Transport(http.DefaultTransport)}
		c := xpromo.NewClient(ts.URL, xpromo.WithHTTPClient(httpc), xpromo.WithMaxRetryAfter(0))
		register := func(name, domain string, registered time.Time, pkg []byte) (*xpromo.RegisterAppResponse, *xpromo.Client, string) {
			rdap.Register(domain, registered)
			email := "dev@" + domain
			reg, err := c.RegisterApp(ctx, &xpromo.RegisterAppRequest{Name: name, Platform: xpromo.PlatformMac, BundleID: "com." + name + ".app",
				Domain: domain, DownloadURL: dl.Put("/"+name+".zip", pkg), ContactEmail: email})
			require.NoError(t, err)
			return reg, c.With(xpromo.WithAPIKey(reg.APIKey)), email
		}
		score := func(c *xpromo.Client, id string) *xpromo.Score {
			sc, err := c.GetScore(ctx, id)
			require.NoError(t, err)
			return sc
		}
		old := clock.Now().AddDate(-3, 0, 0)
		suffix := t.Name()[strings.LastIndex(t.Name(), "/")+1:] // the inbox is shared by the stores' subtests

		// Approved once the contact answers.
		snip, sc, email := register("snip", "snip-"+suffix+".dev", old, gatetest.App("com.snip.app", gatetest.AppOptions{Signer: gatetest.Certs().DevID, Notarized: true}))
		require.Eventually(t, func() bool { _, ok := inbox.Last(email); return ok }, 20*time.Second, 10*time.Millisecond, "the challenge email")
		require.Eventually(t, func() bool { return !contains(score(sc, snip.AppID).Reasons, "gate_pending") }, 20*time.Second, 10*time.Millisecond)
		got := score(sc, snip.AppID)
		assert.Equal(t, xpromo.AppStatusPending, got.Status)
		assert.Equal(t, xpromo.Gate{Signed: true, MalwareClean: true, DomainAgeOK: true, BundleMatch: true}, got.Gate)
		assert.Contains(t, got.Reasons, "gate_contact_unverified")
		m, _ := inbox.Last(email)
		link, err := url.Parse(m.Link)
		require.NoError(t, err)
		page := post(t, httpc, ts.URL+"/v1/contact/verify?"+link.RawQuery)
		assert.Contains(t, page, "Confirmed.")
		require.Eventually(t, func() bool { return score(sc, snip.AppID).Status == xpromo.AppStatusApproved }, 20*time.Second, 10*time.Millisecond)
		assert.True(t, score(sc, snip.AppID).Gate.ContactVerified)

		// A domain registered a month ago: rejected, retry_after its
		// eligibility; a re-check before then is refused with it.
		young := clock.Now().AddDate(0, -1, 0)
		fresh, fc, _ := register("fresh", "fresh-"+suffix+".dev", young, gatetest.App("com.fresh.app", gatetest.AppOptions{Signer: gatetest.Certs().DevID, Notarized: true}))
		require.Eventually(t, func() bool { return score(fc, fresh.AppID).Status == xpromo.AppStatusRejected }, 20*time.Second, 10*time.Millisecond)
		got = score(fc, fresh.AppID)
		assert.Equal(t, "gate_domain_too_young", got.Reasons[0])
		require.NotNil(t, got.RetryAfter)
		eligible := young.AddDate(0, 6, 0)
		assert.True(t, eligible.Equal(*got.RetryAfter), "%s", got.RetryAfter)
		_, err = fc.RecheckGate(ctx, fresh.AppID)
		var apiErr *xpromo.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		assert.Equal(t, 409, apiErr.Status)
		assert.Equal(t, "gate_domain_too_young", apiErr.Code)
		require.NotNil(t, apiErr.RetryAfter)
		assert.True(t, eligible.Equal(*apiErr.RetryAfter))

		// Unsigned: rejected; a signed build at the same URL and a re-check
		// through the API bring it back to pending, waiting for its contact.
		bare, bc, bareEmail := register("bare", "bare-"+suffix+".dev", old, gatetest.App("com.bare.app", gatetest.AppOptions{}))
		require.Eventually(t, func() bool { return score(bc, bare.AppID).Status == xpromo.AppStatusRejected }, 20*time.Second, 10*time.Millisecond)
		assert.Equal(t, "gate_unsigned_binary", score(bc, bare.AppID).Reasons[0])
		_, mailed := inbox.Last(bareEmail)
		assert.False(t, mailed, "no challenge to a rejected app")
		dl.Put("/bare.zip", gatetest.App("com.bare.app", gatetest.AppOptions{Signer: gatetest.Certs().DevID, Notarized: true}))
		job, err := bc.RecheckGate(ctx, bare.AppID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.JobGate, job.Kind)
		require.Eventually(t, func() bool { _, ok := inbox.Last(bareEmail); return ok }, 20*time.Second, 10*time.Millisecond)
		m, _ = inbox.Last(bareEmail)
		v, err := bc.VerifyContactCode(ctx, bare.AppID, m.Code)
		require.NoError(t, err)
		assert.Equal(t, "ok", v.Status)
		require.Eventually(t, func() bool { return score(bc, bare.AppID).Status == xpromo.AppStatusApproved }, 20*time.Second, 10*time.Millisecond)
		j, err := bc.GetJob(ctx, bare.AppID, job.JobID)
		require.NoError(t, err)
		require.NotNil(t, j.Result, "the job shows its result and evidence")
		assert.Contains(t, string(*j.Result), `"evidence"`)
	})
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// post POSTs to u as the verification page's button does and returns the
// page.
func post(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var b strings.Builder
	_, err = io.Copy(&b, resp.Body)
	require.NoError(t, err)
	return b.String()
}
