package scoring_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/reputation/aivis"
	"github.com/xpromo/xpromo/server/reputation/appcast"
	"github.com/xpromo/xpromo/server/reputation/storeratings"
	"github.com/xpromo/xpromo/server/scoring"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

var ctx = context.Background()

// Modes of the local counterparts.
const (
	good    = "good"
	bad     = "bad"
	timeout = "timeout"
)

// counterparts are local servers speaking the real wire formats: an
// OpenAI-compatible chat-completions endpoint, the iTunes lookup, and a
// Sparkle appcast. Each answers according to its mode.
type counterparts struct {
	model, store, feed *httptest.Server
	mu                 sync.Mutex
	modes              map[string]string // "model", "store", "feed" → mode
	modelCalls         atomic.Int64
	now                func() time.Time
}

func (c *counterparts) mode(k string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.modes[k]; ok {
		return m
	}
	return good
}

func (c *counterparts) set(model, store, feed string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.modes = map[string]string{"model": model, "store": store, "feed": feed}
}

// hang blocks until the client gives up (its timeout).
func hang(r *http.Request) { <-r.Context().Done() }

func startCounterparts(t *testing.T, now func() time.Time) *counterparts {
	c := &counterparts{now: now}
	c.model = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.modelCalls.Add(1)
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "test-model" || len(req.Messages) != 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		content := `{"known": true, "familiarity": 90, "sentiment": 80, "summary": "A clipboard manager."}`
		switch c.mode("model") {
		case bad:
			content = "I believe Clipboard Pro is a clipboard manager."
		case timeout:
			hang(r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}}})
	}))
	c.store = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch c.mode("store") {
		case bad:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>maintenance</html>")
			return
		case timeout:
			hang(r)
			return
		}
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		fmt.Fprintf(w, `{"resultCount":1,"results":[{"kind":"mac-software","bundleId":%q,"trackId":42,"trackName":"Clipboard Pro","averageUserRating":4.6,"userRatingCount":3000,"trackViewUrl":"https://apps.apple.com/app/id42"}]}`, q.Get("bundleId"))
	}))
	c.feed = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch c.mode("feed") {
		case bad:
			w.Header().Set("Content-Type", "application/atom+xml")
			fmt.Fprint(w, `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"></feed>`)
			return
		case timeout:
			hang(r)
			return
		}
		// A release a month for the last six months: 6 releases over 2
		// quarters → 80.
		var items strings.Builder
		for i := range 6 {
			fmt.Fprintf(&items, `<item><title>1.%d</title><pubDate>%s</pubDate><sparkle:version>%d</sparkle:version><enclosure url="https://example.com/%d.zip" length="1" type="application/octet-stream"/></item>`,
				i, c.now().Add(-time.Duration(i)*30*24*time.Hour-time.Hour).Format(time.RFC1123Z), i, i)
		}
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle"><channel><title>x</title>%s</channel></rss>`, items.String())
	}))
	t.Cleanup(func() { c.model.Close(); c.store.Close(); c.feed.Close() })
	return c
}

type world struct {
	t      *testing.T
	store  storage.Store
	clock  *clocktest.Clock
	apps   *apps.Service
	svc    *scoring.Service
	runner *jobs.Runner[storage.Tx]
	cp     *counterparts
}

func newWorld(t *testing.T, s storage.Store, cp *counterparts, clock *clocktest.Clock) *world {
	w := &world{t: t, store: s, clock: clock, cp: cp}
	w.apps = &apps.Service{Update: storage.Updater[apps.Tx](s), View: storage.Viewer[apps.Tx](s), Now: clock.Now}
	// Short timeouts: the timeout counterparts hang until the client gives up.
	loop := func(d time.Duration) *http.Client {
		return outbound.New(outbound.Options{TestOnlyAllowLoopback: true, Timeout: d})
	}
	ai, err := aivis.New(aivis.Config{BaseURL: cp.model.URL + "/v1", Model: "test-model", HTTP: loop(time.Second)})
	require.NoError(t, err)
	reviews, err := storeratings.New(storeratings.Config{BaseURL: cp.store.URL, HTTP: loop(time.Second)})
	require.NoError(t, err)
	w.svc = &scoring.Service{
		Apps: w.apps, Update: storage.Updater[scoring.Tx](s), View: storage.Viewer[scoring.Tx](s),
		Sources: scoring.Sources{AI: ai, Reviews: reviews, Cadence: appcast.New(appcast.Config{HTTP: loop(time.Second), Now: clock.Now})},
		Now:     clock.Now,
	}
	w.runner = newRunner(s, clock, "runner-a", w.svc)
	return w
}

func newRunner(s storage.Store, clock *clocktest.Clock, holder string, svc *scoring.Service) *jobs.Runner[storage.Tx] {
	r := &jobs.Runner[storage.Tx]{Update: s.Update, Now: clock.Now, Holder: holder, Backoff: []time.Duration{time.Minute, time.Hour}}
	r.Handle(xpromo.JobScoring, time.Minute, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
		out, err := svc.Run(ctx, j)
		res := jobs.Outcome[storage.Tx]{Result: out.Result}
		if out.Apply != nil {
			res.Apply = func(ctx context.Context, tx storage.Tx) error { return out.Apply(ctx, tx) }
		}
		return res, err
	})
	return r
}

// register registers the README's app and records a gate result for it,
// as the gate would (its evidence: the download, the package with its
// SUFeedURL, the signature).
func (w *world) register(withGate bool) apps.App {
	w.t.Helper()
	app, _, _, err := w.apps.Register(ctx, apps.RegisterParams{
		Name: "Clipboard Pro", Platform: "mac", BundleID: "com.clipboardpro.mac", Domain: "clipboardpro.com",
		DownloadURL: "https://clipboardpro.com/ClipboardPro.zip", ContactEmail: "team@clipboardpro.com",
	})
	require.NoError(w.t, err)
	if withGate {
		w.recordGate(app.ID)
	}
	return app
}

func (w *world) recordGate(appID string) {
	res := gate.Result{GateResult: apps.GateResult{Gate: xpromo.Gate{Signed: true, MalwareClean: true, DomainAgeOK: true, ContactVerified: true, BundleMatch: true}, Reasons: []string{}},
		Evidence: gate.Evidence{
			Download:  &gate.DownloadEvidence{URL: "https://clipboardpro.com/ClipboardPro.zip", FinalURL: "https://dl.clipboardpro.com/ClipboardPro.zip"},
			Package:   &gate.PackageEvidence{Format: "zip", BundleIDs: []string{"com.clipboardpro.mac"}, FeedURL: w.cp.feed.URL + "/appcast.xml"},
			Signature: &gate.SignatureEvidence{Kind: "macho", SignerCN: "Developer ID Application: Clipboard Pro Ltd (AB12CD34EF)", SignerOrg: "Clipboard Pro Ltd", TeamID: "AB12CD34EF"},
		}}
	raw, err := json.Marshal(res)
	require.NoError(w.t, err)
	now := w.clock.Now()
	j := apps.NewJob(appID, xpromo.JobGate, now)
	j.Status, j.Result, j.FinishedAt = xpromo.JobSucceeded, raw, &now
	require.NoError(w.t, w.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.InsertJob(ctx, j) }))
}

func (w *world) runDue() {
	w.t.Helper()
	_, err := w.runner.RunDue(ctx)
	require.NoError(w.t, err)
}

func (w *world) score(appID string) xpromo.Score {
	w.t.Helper()
	sc, err := w.apps.Score(ctx, appID)
	require.NoError(w.t, err)
	return sc
}

func (w *world) jobs(appID string) []apps.Job {
	w.t.Helper()
	var js []apps.Job
	require.NoError(w.t, w.store.View(ctx, func(ctx context.Context, tx storage.Tx) (err error) {
		js, err = tx.AppJobs(ctx, appID)
		return err
	}))
	return js
}

// nextScoring is the run_after of the app's queued scoring job (the test
// runs no gate: the gate job Register queued stays queued, so the score's
// next_review_at is that one's).
func (w *world) nextScoring(appID string) time.Time {
	w.t.Helper()
	var next []time.Time
	for _, j := range w.jobs(appID) {
		if j.Kind == xpromo.JobScoring && j.Status == xpromo.JobQueued {
			next = append(next, j.RunAfter)
		}
	}
	require.Len(w.t, next, 1, "one scoring job queued")
	return next[0]
}

func (w *world) scoreEvents(appID string) int {
	w.t.Helper()
	n := 0
	require.NoError(w.t, w.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		evs, err := tx.AppOutbox(ctx, appID)
		for _, e := range evs {
			if e.Type == xpromo.EventScoreUpdated {
				n++
			}
		}
		return err
	}))
	return n
}

func each(t *testing.T, fn func(t *testing.T, w *world)) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		clock := clocktest.New(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
		cp := startCounterparts(t, clock.Now)
		fn(t, newWorld(t, s, cp, clock))
	})
}

// Every signal against its counterpart: a good answer, a bad one, a
// timeout; the reasons shown in the Score, the next run sooner after a
// transient failure, score.updated only when the score changed.
func TestSignals(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		app := w.register(true)
		w.runDue()
		sc := w.score(app.ID)
		// ai: round(90 × 180 / 200) = 81; cadence: 6 releases over 2
		// quarters = 80; reviews: 3000 × ★4.6 = 89; coherence: every pair
		// compared agrees = 100.
		assert.Equal(t, xpromo.Reputation{Total: 84, AIVisibility: 81, Cadence: 80, Reviews: 89, Coherence: 100}, sc.Reputation)
		assert.Equal(t, []string{}, sc.Reasons)
		assert.Nil(t, sc.Behavior)
		assert.Equal(t, w.clock.Now().Add(scoring.DefaultPeriod), w.nextScoring(app.ID), "re-scored after the period")
		events := w.scoreEvents(app.ID)

		cases := []struct {
			model, store, feed string
			want               xpromo.Reputation
			reasons            []string
			soon               bool
		}{
			{bad, good, good, xpromo.Reputation{Total: 44, Cadence: 80, Reviews: 89, Coherence: 100}, []string{"ai_visibility_unparseable"}, false},
			{timeout, good, good, xpromo.Reputation{Total: 44, Cadence: 80, Reviews: 89, Coherence: 100}, []string{"ai_visibility_unavailable"}, true},
			{good, good, bad, xpromo.Reputation{Total: 68, AIVisibility: 81, Reviews: 89, Coherence: 100}, []string{"cadence_feed_invalid"}, false},
			{good, good, timeout, xpromo.Reputation{Total: 68, AIVisibility: 81, Reviews: 89, Coherence: 100}, []string{"cadence_feed_unavailable"}, true},
			{good, bad, good, xpromo.Reputation{Total: 67, AIVisibility: 81, Cadence: 80, Coherence: 100}, []string{"reviews_unavailable"}, true},
			{good, timeout, good, xpromo.Reputation{Total: 67, AIVisibility: 81, Cadence: 80, Coherence: 100}, []string{"reviews_unavailable"}, true},
			{timeout, bad, timeout, xpromo.Reputation{Total: 10, Coherence: 100}, []string{"ai_visibility_unavailable", "cadence_feed_unavailable", "reviews_unavailable"}, true},
		}
		prev := sc
		for _, c := range cases {
			w.cp.set(c.model, c.store, c.feed)
			w.clock.Advance(scoring.DefaultPeriod) // the next run is due
			w.runDue()
			sc := w.score(app.ID)
			assert.Equal(t, c.want, sc.Reputation, "%+v", c)
			assert.Equal(t, c.reasons, sc.Reasons, "%+v", c)
			next := w.clock.Now().Add(scoring.DefaultPeriod)
			if c.soon {
				next = w.clock.Now().Add(scoring.DefaultRetrySoon)
			}
			assert.Equal(t, next, w.nextScoring(app.ID), "%+v", c)
			if sc.Reputation != prev.Reputation || strings.Join(sc.Reasons, ",") != strings.Join(prev.Reasons, ",") {
				assert.Equal(t, events+1, w.scoreEvents(app.ID), "score.updated: the score changed")
			} else {
				assert.Equal(t, events, w.scoreEvents(app.ID), "no score.updated: the same score (%+v)", c)
			}
			events, prev = w.scoreEvents(app.ID), sc
		}
		// The same answer again changes nothing: no score.updated.
		w.clock.Advance(scoring.DefaultPeriod)
		w.runDue()
		assert.Equal(t, events, w.scoreEvents(app.ID))

		// The result's evidence.
		js := w.jobs(app.ID)
		var last scoring.Result
		for i := len(js) - 1; i >= 0; i-- {
			if js[i].Kind == xpromo.JobScoring && js[i].Result != nil {
				require.NoError(t, json.Unmarshal(js[i].Result, &last))
				break
			}
		}
		assert.Equal(t, w.cp.feed.URL+"/appcast.xml", last.Evidence.Cadence.FeedURL)
		assert.Len(t, last.Evidence.Coherence.Pairs, 6)
		assert.Equal(t, 0, last.Evidence.Behavior.Installs)
	})
}

// The scoring job waits for the gate's evidence: without a gate result it
// retries (scoring_gate_pending) and the score says reputation_pending.
func TestWaitsForTheGate(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		app := w.register(false)
		w.runDue()
		js := w.jobs(app.ID)
		var scoringJob apps.Job
		for _, j := range js {
			if j.Kind == xpromo.JobScoring {
				scoringJob = j
			}
		}
		assert.Equal(t, xpromo.JobQueued, scoringJob.Status)
		assert.Equal(t, scoring.CodeGatePending, scoringJob.LastError)
		assert.Contains(t, w.score(app.ID).Reasons, "reputation_pending")
		assert.Zero(t, w.cp.modelCalls.Load(), "no signal read before the gate")

		w.recordGate(app.ID)
		w.clock.Advance(time.Minute)
		w.runDue()
		sc := w.score(app.ID)
		assert.NotContains(t, sc.Reasons, "reputation_pending")
		assert.Equal(t, 84, sc.Reputation.Total)
	})
}

// Behaviour is measured once the app has traded 500 installs, as publisher
// or advertiser. The chains are written through the store (InsertChain),
// in the states the attribution paths leave them in.
func TestBehaviorAfter500Installs(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		app := w.register(true)
		other := w.register(true)
		now := w.clock.Now()
		n := 0
		insert := func(count int, state attribution.State, reason string, heartbeats int64, appIsPublisher bool) {
			require.NoError(t, w.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
				for range count {
					n++
					c := attribution.Chain{ID: fmt.Sprintf("chn_%d", n), Nonce: fmt.Sprintf("nonce_%d", n), State: state, Reason: reason,
						PublisherAppID: other.ID, AdvertiserAppID: app.ID, Platform: xpromo.PlatformMac, HeartbeatSeq: heartbeats,
						InstalledAt: now, CreatedAt: now, UpdatedAt: now}
					if appIsPublisher {
						c.PublisherAppID, c.AdvertiserAppID = app.ID, other.ID
					}
					if state == attribution.StateRejected {
						c.Nonce, c.InstalledAt = "", time.Time{}
					}
					if _, err := tx.InsertChain(ctx, c); err != nil {
						return err
					}
				}
				return nil
			}))
		}
		// 499 installs: 300 cleared (as advertiser), 100 activated (as
		// publisher), 60 refunded after running, 29 refunded silent from
		// the start, 10 still in their window; rejected chains and mere
		// clicks are not installs.
		insert(300, attribution.StateCleared, "", 3, false)
		insert(100, attribution.StateActivated, "", 2, true)
		insert(60, attribution.StateRefunded, attribution.ReasonNotActivated, 1, false)
		insert(29, attribution.StateRefunded, attribution.ReasonNotActivated, 0, true)
		insert(10, attribution.StateInstalled, "", 0, false)
		insert(50, attribution.StateRejected, "fraud_token_reused", 0, false)
		insert(20, attribution.StateClicked, "", 0, true)
		w.runDue()
		sc := w.score(app.ID)
		assert.Nil(t, sc.Behavior, "499 installs: reputation only")
		assert.NotContains(t, sc.Reasons, scoring.ReasonCanaryNotMeasured)

		// The 500th install, and two upheld complaints (one open, one
		// dismissed: they count for nothing).
		insert(1, attribution.StateInstalled, "", 0, true)
		require.NoError(t, w.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			return insertComplaints(ctx, tx, app.ID, other.ID, now)
		}))
		w.clock.Advance(scoring.DefaultPeriod)
		w.runDue()
		sc = w.score(app.ID)
		require.NotNil(t, sc.Behavior, "500 installs traded: behaviour")
		// decided = 400 retained + 89 lapsed; 60 of the lapsed had run.
		assert.Equal(t, xpromo.Behavior{Retention48h: 0.818, UninstallRate: 0.1227, Canary: false, Complaints: 2}, *sc.Behavior)
		assert.Contains(t, sc.Reasons, scoring.ReasonCanaryNotMeasured)
		assert.Equal(t, 84, sc.Reputation.Total, "the reputation is still read")

		// Enough canaries served, none clicked: the canary check passed.
		require.NoError(t, w.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			return tx.AddCanaryCounts(ctx, []attribution.CanaryCount{{Day: now, AppID: app.ID, Count: scoring.DefaultCanaryMinServed}})
		}))
		w.clock.Advance(scoring.DefaultPeriod)
		w.runDue()
		sc = w.score(app.ID)
		require.NotNil(t, sc.Behavior)
		assert.True(t, sc.Behavior.Canary)
		assert.NotContains(t, sc.Reasons, scoring.ReasonCanaryNotMeasured)

		// One canary clicked: failed.
		require.NoError(t, w.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			_, err := tx.InsertCanaryClick(ctx, attribution.CanaryClick{Nonce: "jti_canary", AppID: app.ID, Via: attribution.CanaryViaClick, At: w.clock.Now()})
			return err
		}))
		w.clock.Advance(scoring.DefaultPeriod)
		w.runDue()
		sc = w.score(app.ID)
		require.NotNil(t, sc.Behavior)
		assert.False(t, sc.Behavior.Canary)
		assert.Contains(t, sc.Reasons, scoring.ReasonCanaryFailed)
		assert.NotContains(t, sc.Reasons, scoring.ReasonCanaryNotMeasured)
	})
}

// The canary part of the behaviour: measured from the minimum served on,
// failed by any click.
func TestBehaviorCanary(t *testing.T) {
	tr := scoring.Trade{Installs: 500, Retained: 10}
	for _, c := range []struct {
		canaries scoring.Canaries
		min      int64
		canary   bool
		reason   string
	}{
		{scoring.Canaries{}, 5, false, scoring.ReasonCanaryNotMeasured},
		{scoring.Canaries{Served: 4}, 5, false, scoring.ReasonCanaryNotMeasured},
		{scoring.Canaries{Served: 5}, 5, true, ""},
		{scoring.Canaries{Served: 2}, 2, true, ""},
		{scoring.Canaries{Served: 500, Clicked: 1}, 5, false, scoring.ReasonCanaryFailed},
		{scoring.Canaries{Served: 1, Clicked: 1}, 5, false, scoring.ReasonCanaryFailed},
	} {
		b, reasons := scoring.Behavior(tr, 0, c.canaries, c.min)
		assert.Equal(t, c.canary, b.Canary, "%+v", c)
		if c.reason == "" {
			assert.Empty(t, reasons, "%+v", c)
		} else {
			assert.Equal(t, []string{c.reason}, reasons, "%+v", c)
		}
	}
}

// Two runners never run one scoring job twice.
func TestTwoRunners(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		for range 4 {
			w.register(true)
		}
		b := newRunner(w.store, w.clock, "runner-b", w.svc)
		var wg sync.WaitGroup
		for _, r := range []*jobs.Runner[storage.Tx]{w.runner, b} {
			wg.Go(func() {
				_, err := r.RunDue(ctx)
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		w.runDue() // whatever one runner left
		assert.Equal(t, int64(4), w.cp.modelCalls.Load(), "four apps, four scoring runs")
	})
}

// insertComplaints files four complaints about appID, one after the other
// (one may be open per pair): two upheld, one dismissed, one left open.
func insertComplaints(ctx context.Context, tx storage.Tx, appID, reporter string, now time.Time) error {
	for i, st := range []complaints.Status{complaints.Upheld, complaints.Upheld, complaints.Dismissed, complaints.Open} {
		c := complaints.Complaint{ID: fmt.Sprintf("cmpl_%d", i), ReporterID: reporter, AppID: appID, Reason: complaints.MisleadingAd,
			Status: complaints.Open, CreatedAt: now.Add(time.Duration(i) * time.Second)}
		if err := tx.InsertComplaint(ctx, c); err != nil {
			return err
		}
		if st != complaints.Open {
			if err := tx.ResolveComplaint(ctx, c.ID, st, "", now); err != nil {
				return err
			}
		}
	}
	return nil
}
