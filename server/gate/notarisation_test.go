package gate_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/codesign"
	"github.com/xpromo/xpromo/server/gate/gatetest"
	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/gate/notary"
	"github.com/xpromo/xpromo/server/gate/pkgread"
	"github.com/xpromo/xpromo/server/outbound"
)

// ticketService is a local counterpart of Apple's ticket lookup: the
// records in found are found, others NOT_FOUND; down answers 503.
type ticketService struct {
	mu    sync.Mutex
	found map[string]bool
	down  bool
	asked []string
}

func (ts *ticketService) start(t *testing.T) *notary.Client {
	h := notary.Handler(func(name string) bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.asked = append(ts.asked, name)
		return ts.found[name]
	}, []byte("s8ChAAAA online ticket"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.mu.Lock()
		down := ts.down
		ts.mu.Unlock()
		if down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &notary.Client{URL: srv.URL + "/records/lookup", HTTP: outbound.New(outbound.Options{TestOnlyAllowLoopback: true})}
}

// recordOf is the record name of a signed .pkg: its TOC checksum.
func recordOf(t *testing.T, pkg []byte) string {
	x, err := pkgread.ReadXARSignature(bytes.NewReader(pkg), int64(len(pkg)), pkgread.Limits{})
	require.NoError(t, err)
	return notary.RecordName(notary.DigestSHA1, x.TOCDigest)
}

// With a ticket service configured its answer decides, whatever is
// stapled; when it does not answer, the stapled ticket does.
func TestGateNotarisationOnline(t *testing.T) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		installer, _ := pkgSigners()
		ts := &ticketService{found: map[string]bool{}}
		w.gate.Notary = ts.start(t)
		unstapled := fixture.SignPKG(componentPKG("com.snip.pkg"), installer)
		stapled := pkgread.StapleXAR(fixture.SignPKG(componentPKG("com.snip.pkg", fixture.XARFile{Name: "Resources", Data: []byte("another build")}), installer), []byte("s8ChAAAA"))
		ts.found[recordOf(t, unstapled)] = true

		t.Run("found online, nothing stapled", func(t *testing.T) {
			w.t = t
			a := w.register(appSpec{bundleID: "com.snip.pkg", pkg: unstapled})
			w.run()
			sc := w.score(a.ID)
			assert.True(t, sc.Gate.Signed, sc.Reasons)
			sig := w.lastResult(a.ID).Evidence.Signature
			assert.Equal(t, "online", sig.NotarySource)
			assert.Equal(t, "found", sig.NotaryLookup)
			assert.Equal(t, recordOf(t, unstapled), sig.NotaryRecord)
		})
		t.Run("stapled, but not found online", func(t *testing.T) {
			w.t = t
			a := w.register(appSpec{bundleID: "com.snip.pkg", pkg: stapled})
			w.run()
			sc := w.score(a.ID)
			assert.Equal(t, xpromo.AppStatusRejected, sc.Status)
			require.NotEmpty(t, sc.Reasons)
			assert.Equal(t, string(codesign.ReasonNotNotarized), sc.Reasons[0])
			sig := w.lastResult(a.ID).Evidence.Signature
			assert.Equal(t, "not found", sig.NotaryLookup)
			assert.False(t, sig.Notarized)
		})
		t.Run("the service is down: the stapled ticket decides", func(t *testing.T) {
			w.t = t
			ts.mu.Lock()
			ts.down = true
			ts.mu.Unlock()
			a := w.register(appSpec{bundleID: "com.snip.pkg", pkg: stapled})
			w.run()
			sc := w.score(a.ID)
			assert.True(t, sc.Gate.Signed, sc.Reasons)
			sig := w.lastResult(a.ID).Evidence.Signature
			assert.Equal(t, "stapled-trailer", sig.NotarySource)
			assert.Contains(t, sig.NotaryLookup, "unavailable")
		})
		t.Run("an app is looked up by its cdhash", func(t *testing.T) {
			w.t = t
			ts.mu.Lock()
			ts.down, ts.asked = false, nil
			ts.mu.Unlock()
			a := w.register(appSpec{pkg: signedApp("com.snip.app")})
			w.run()
			sig := w.lastResult(a.ID).Evidence.Signature
			assert.Equal(t, "not found", sig.NotaryLookup)
			assert.Regexp(t, `^2/2/[0-9a-f]{40}$`, sig.NotaryRecord)
			assert.Equal(t, []string{sig.NotaryRecord}, ts.asked)
		})
	})
}

// gate inspect asks the ticket service it is given, as a gate job does.
func TestInspectNotarisationOnline(t *testing.T) {
	installer, _ := pkgSigners()
	unstapled := fixture.SignPKG(componentPKG("com.snip.pkg"), installer)
	ts := &ticketService{found: map[string]bool{recordOf(t, unstapled): true}}
	ins := inspectFile(t, unstapled, gate.InspectOptions{BundleID: "com.snip.pkg", Roots: gatetest.Certs().Root.Pool(), Notary: ts.start(t)})
	assert.True(t, ins.Pass, ins.Details)
	assert.Equal(t, "online", ins.Signature.NotarySource)
	ins = inspectFile(t, unstapled, gate.InspectOptions{BundleID: "com.snip.pkg", Roots: gatetest.Certs().Root.Pool()})
	assert.Equal(t, []string{"gate_not_notarized"}, ins.Checks[1].Reasons, "without a service only a stapled ticket counts")
}
