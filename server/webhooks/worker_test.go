package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/webhook"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
	"github.com/xpromo/xpromo/server/webhooks"
)

var start = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

// newService is the service as wire builds it, on s and clock, allowed to
// deliver to loopback receivers (httptest).
func newService(s storage.Store, clock *clocktest.Clock) *webhooks.Service {
	opts := outbound.Options{TestOnlyAllowLoopback: true}
	return &webhooks.Service{
		Update: webhooks.Txer(storage.Updater[webhooks.Tx](s)),
		View:   webhooks.Txer(storage.Viewer[webhooks.Tx](s)),
		Client: webhooks.NewClient(opts),
		Policy: webhooks.URLPolicy{Options: opts},
		Now:    clock.Now,
	}
}

// env is a store with an app, a service on a manual clock and a receiver.
type env struct {
	t     *testing.T
	store storage.Store
	clock *clocktest.Clock
	svc   *webhooks.Service
	app   string
	recv  *receiver
}

func newEnv(t *testing.T, s storage.Store) *env {
	t.Helper()
	e := &env{t: t, store: s, clock: clocktest.New(start), app: "app_1", recv: newReceiver(t)}
	e.svc = newService(s, e.clock)
	addApp(t, s, e.app)
	return e
}

func addApp(t *testing.T, s storage.Store, id string) { addAppTB(t, s, id) }

func addAppTB(t testing.TB, s storage.Store, id string) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertApp(ctx, apps.App{ID: id, Name: id, Platform: xpromo.PlatformMac, BundleID: "com.example." + id,
			Domain: "example.com", DownloadURL: "https://example.com/a.zip", ContactEmail: "dev@example.com",
			Status: xpromo.AppStatusPending, EarnMode: ledger.EarnCash, CreatedAt: start, UpdatedAt: start})
	}))
}

// endpoint registers the receiver for app's events of the given types.
func (e *env) endpoint(types ...xpromo.EventType) xpromo.WebhookEndpoint {
	e.t.Helper()
	if len(types) == 0 {
		types = xpromo.EventTypes
	}
	ep, err := e.svc.CreateEndpoint(context.Background(), e.app, xpromo.CreateWebhookEndpointRequest{URL: e.recv.URL + "/hook", Events: types})
	require.NoError(e.t, err)
	require.True(e.t, strings.HasPrefix(ep.Secret, "whsec_"))
	return ep
}

// emit writes n events of typ for the app, as a domain's transaction does.
func (e *env) emit(typ xpromo.EventType, n int) []outbox.Event {
	e.t.Helper()
	return emit(e.t, e.store, e.app, typ, n, e.clock.Now())
}

func emit(t *testing.T, s storage.Store, app string, typ xpromo.EventType, n int, at time.Time) []outbox.Event {
	t.Helper()
	var evs []outbox.Event
	for i := range n {
		evs = append(evs, outbox.New(app, typ, map[string]int{"n": i}, at.Add(time.Duration(i)*time.Microsecond)))
	}
	require.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error { return tx.InsertOutbox(ctx, evs) }))
	return evs
}

// round dispatches and delivers once.
func (e *env) round() webhooks.DeliverStats {
	e.t.Helper()
	_, err := e.svc.Dispatch(context.Background())
	require.NoError(e.t, err)
	st, err := e.svc.Deliver(context.Background())
	require.NoError(e.t, err)
	return st
}

func (e *env) attempts(endpointID string) []xpromo.WebhookAttempt {
	e.t.Helper()
	page, err := e.svc.Attempts(context.Background(), e.app, endpointID, "", "", 100)
	require.NoError(e.t, err)
	return page.Attempts
}

// receiver is an httptest server that records each request and answers
// with answer's status (200 when nil).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, r *http.Request) int // n: requests so far, this one included
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body})
		n, answer := len(rc.got), rc.answer
		rc.mu.Unlock()
		status := http.StatusOK
		if answer != nil {
			status = answer(n, r)
		}
		w.WriteHeader(status)
		io.WriteString(w, "status "+http.StatusText(status))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

// A receiver that fails 3 times then succeeds gets the event once per
// attempt, on the schedule, signed each time; then nothing more.
func TestRetriesOnScheduleUntilDelivered(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newEnv(t, s)
		e.recv.answer = func(n int, _ *http.Request) int {
			if n <= 3 {
				return http.StatusInternalServerError
			}
			return http.StatusNoContent
		}
		ep := e.endpoint(xpromo.EventChainCleared)
		ev := e.emit(xpromo.EventChainCleared, 1)[0]

		for i := range 3 {
			st := e.round()
			require.Equal(t, 1, st.Failed, "attempt %d", i+1)
			// Not a moment before the schedule says.
			e.clock.Advance(webhooks.Schedule[i] - time.Millisecond)
			require.Equal(t, 0, e.round().Claimed, "attempt %d came early", i+2)
			e.clock.Advance(time.Millisecond)
		}
		require.Equal(t, 1, e.round().Succeeded)
		e.clock.Advance(48 * time.Hour)
		require.Equal(t, 0, e.round().Claimed, "delivered: nothing left to send")

		got := e.recv.requests()
		require.Len(t, got, 4)
		var wire xpromo.Event
		at := start
		for i, r := range got {
			if i > 0 {
				at = at.Add(webhooks.Schedule[i-1])
			}
			assert.Equal(t, ev.ID, r.header.Get("webhook-id"), "the same id on every retry")
			assert.Equal(t, webhooks.UserAgent, r.header.Get("User-Agent"))
			assert.Equal(t, "application/json", r.header.Get("Content-Type"))
			ts := time.Unix(mustInt(t, r.header.Get("webhook-timestamp")), 0)
			assert.Equal(t, at.Unix(), ts.Unix(), "stamped by the server's clock when sent")
			require.NoError(t, webhook.VerifyAt(ep.Secret, r.header, r.body, 0, ts))
			require.NoError(t, json.Unmarshal(r.body, &wire))
			assert.Equal(t, ev.Wire().ID, wire.ID)
			assert.Equal(t, xpromo.EventChainCleared, wire.Type)
			assert.Equal(t, e.app, wire.AppID)
			assert.JSONEq(t, `{"n":0}`, string(wire.Data))
		}
		// A tampered body does not verify.
		last := got[3]
		ts := time.Unix(mustInt(t, last.header.Get("webhook-timestamp")), 0)
		assert.Error(t, webhook.VerifyAt(ep.Secret, last.header, append(last.body, ' '), 0, ts))

		atts := e.attempts(ep.ID)
		require.Len(t, atts, 4)
		for i, a := range atts { // newest first
			n := 4 - i
			assert.Equal(t, n, a.Attempt)
			assert.Equal(t, ev.ID, a.EventID)
			require.NotNil(t, a.StatusCode)
			if n < 4 {
				assert.Equal(t, 500, *a.StatusCode)
				assert.False(t, a.Succeeded)
				require.NotNil(t, a.NextAttemptAt)
				assert.Equal(t, webhooks.Schedule[n-1], a.NextAttemptAt.Sub(a.AttemptedAt))
				assert.Equal(t, "status Internal Server Error", a.ResponseExcerpt)
			} else {
				assert.Equal(t, 204, *a.StatusCode)
				assert.True(t, a.Succeeded)
				assert.Nil(t, a.NextAttemptAt)
			}
		}
		got2, err := e.svc.Endpoint(context.Background(), e.app, ep.ID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.WebhookEndpointEnabled, got2.Status)
	})
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		require.True(t, c >= '0' && c <= '9', s)
		n = n*10 + int64(c-'0')
	}
	return n
}

// 410 Gone disables the endpoint at once and drops its queue; events go
// on being written and stay readable, but are not sent.
func TestGoneDisables(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newEnv(t, s)
		e.recv.answer = func(int, *http.Request) int { return http.StatusGone }
		ep := e.endpoint()
		e.emit(xpromo.EventChainCleared, 3)
		st := e.round()
		assert.Equal(t, 1, st.Failed)
		assert.Equal(t, 2, st.Released, "the endpoint's other deliveries are not attempted after a failure")
		assert.Equal(t, 1, st.Disabled)

		got, err := e.svc.Endpoint(context.Background(), e.app, ep.ID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.WebhookEndpointDisabled, got.Status)
		require.NotNil(t, got.DisabledReason)
		assert.Equal(t, xpromo.WebhookDisabledGone, *got.DisabledReason)
		require.NotNil(t, got.DisabledAt)

		e.emit(xpromo.EventPayoutSent, 1)
		e.clock.Advance(time.Hour)
		assert.Equal(t, 0, e.round().Claimed, "nothing is queued for a disabled endpoint")
		assert.Equal(t, 1, e.recv.count())

		// Redelivery needs it enabled again.
		page, err := e.svc.ListEvents(context.Background(), e.app, webhooks.EventParams{})
		require.NoError(t, err)
		require.Len(t, page.Events, 4, "the events stay readable")
		_, err = e.svc.Redeliver(context.Background(), e.app, ep.ID, page.Events[0].ID)
		assertCode(t, err, "webhook_endpoint_disabled")
		enabled := xpromo.WebhookEndpointEnabled
		upd, err := e.svc.UpdateEndpoint(context.Background(), e.app, ep.ID, webhooks.EndpointUpdate{Status: &enabled})
		require.NoError(t, err)
		assert.Nil(t, upd.DisabledReason)
		assert.Nil(t, upd.DisabledAt)
		e.recv.mu.Lock()
		e.recv.answer = nil
		e.recv.mu.Unlock()
		d, err := e.svc.Redeliver(context.Background(), e.app, ep.ID, page.Events[0].ID)
		require.NoError(t, err)
		assert.Equal(t, 0, d.Attempts)
		assert.Equal(t, 1, e.round().Succeeded)
		assert.Equal(t, page.Events[0].ID, e.recv.requests()[1].header.Get("webhook-id"))
	})
}

// Eight failed attempts disable the endpoint (failing) and drop its queue.
func TestLastAttemptFailingDisables(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newEnv(t, s)
		e.recv.answer = func(int, *http.Request) int { return http.StatusServiceUnavailable }
		ep := e.endpoint()
		first := e.emit(xpromo.EventChainCleared, 1)[0]
		e.clock.Advance(time.Millisecond)
		e.emit(xpromo.EventChainCleared, 1)
		for i := range webhooks.MaxAttempts {
			require.GreaterOrEqual(t, e.round().Failed, 1, "attempt %d", i+1)
			if i < len(webhooks.Schedule) {
				e.clock.Advance(webhooks.Schedule[i])
			}
		}
		got, err := e.svc.Endpoint(context.Background(), e.app, ep.ID)
		require.NoError(t, err)
		require.NotNil(t, got.DisabledReason)
		assert.Equal(t, xpromo.WebhookDisabledFailing, *got.DisabledReason)
		page, err := e.svc.Attempts(context.Background(), e.app, ep.ID, first.ID, "", 100)
		require.NoError(t, err)
		assert.Len(t, page.Attempts, webhooks.MaxAttempts, "the first event: every attempt, on the schedule")
		assert.Nil(t, page.Attempts[0].NextAttemptAt, "the last is not retried")
		e.clock.Advance(72 * time.Hour)
		assert.Equal(t, 0, e.round().Claimed, "the queue was dropped")
	})
}

// During a rotation each delivery carries two signatures, the new
// secret's first; either secret verifies it. After 24 hours, only the new.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newEnv(t, s)
		ep := e.endpoint()
		rot, err := e.svc.RotateSecret(context.Background(), e.app, ep.ID)
		require.NoError(t, err)
		require.NotEqual(t, ep.Secret, rot.Secret)
		require.NotNil(t, rot.PreviousSecretExpiresAt)
		assert.Equal(t, e.clock.Now().Add(24*time.Hour), *rot.PreviousSecretExpiresAt)
		listed, err := e.svc.Endpoint(context.Background(), e.app, ep.ID)
		require.NoError(t, err)
		assert.Empty(t, listed.Secret, "the secret is shown once")

		e.emit(xpromo.EventScoreUpdated, 1)
		require.Equal(t, 1, e.round().Succeeded)
		r := e.recv.requests()[0]
		sigs := strings.Fields(r.header.Get("webhook-signature"))
		require.Len(t, sigs, 2)
		now := e.clock.Now()
		require.NoError(t, webhook.VerifyAt(ep.Secret, r.header, r.body, 0, now), "the previous secret verifies")
		require.NoError(t, webhook.VerifyAt(rot.Secret, r.header, r.body, 0, now), "the new secret verifies")
		only := r.header.Clone()
		only.Set("webhook-signature", sigs[0])
		require.NoError(t, webhook.VerifyAt(rot.Secret, only, r.body, 0, now), "the new secret's signature comes first")
		assert.Error(t, webhook.VerifyAt(rot.Secret, r.header, r.body, 0, now.Add(10*time.Minute)), "an old timestamp fails")

		e.clock.Advance(24 * time.Hour)
		e.emit(xpromo.EventScoreUpdated, 1)
		require.Equal(t, 1, e.round().Succeeded)
		r = e.recv.requests()[1]
		assert.Len(t, strings.Fields(r.header.Get("webhook-signature")), 1)
		now = e.clock.Now()
		require.NoError(t, webhook.VerifyAt(rot.Secret, r.header, r.body, 0, now))
		assert.Error(t, webhook.VerifyAt(ep.Secret, r.header, r.body, 0, now), "the previous secret has expired")
	})
}

// An endpoint receives only its app's events of the types it subscribes
// to, one endpoint's in the order they occurred.
func TestDispatchByAppAndTypeInOrder(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newEnv(t, s)
		addApp(t, s, "app_2")
		e.endpoint(xpromo.EventChainStateChanged, xpromo.EventChainCleared)
		evs := e.emit(xpromo.EventChainStateChanged, 5)
		e.emit(xpromo.EventPayoutSent, 2)
		emit(t, s, "app_2", xpromo.EventChainStateChanged, 2, e.clock.Now())
		st := e.round()
		assert.Equal(t, 5, st.Succeeded)
		got := e.recv.requests()
		require.Len(t, got, 5)
		for i, r := range got {
			assert.Equal(t, evs[i].ID, r.header.Get("webhook-id"), "in order of occurrence")
		}
	})
}

// A worker that dies after claiming records nothing: when its lease runs
// out, another delivers. One stopped mid-request releases the delivery.
func TestLostWorkerLosesNothing(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newEnv(t, s)
		e.endpoint()
		ev := e.emit(xpromo.EventChainCleared, 1)[0]
		_, err := e.svc.Dispatch(context.Background())
		require.NoError(t, err)
		// The dead worker: a claim that is never recorded.
		require.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			c, err := tx.ClaimDeliveries(ctx, e.clock.Now(), e.clock.Now().Add(webhooks.DefaultLease), 10)
			require.Len(t, c, 1)
			return err
		}))
		other := newService(s, e.clock) // another instance
		st, err := other.Deliver(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 0, st.Claimed, "held by the dead worker's lease")
		e.clock.Advance(webhooks.DefaultLease)
		st, err = other.Deliver(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 1, st.Succeeded)
		assert.Equal(t, ev.ID, e.recv.requests()[0].header.Get("webhook-id"))

		// Stopped mid-request: the receiver holds the first request until
		// the worker's context ends.
		ev2 := e.emit(xpromo.EventChainCleared, 1)[0]
		ctx, cancel := context.WithCancel(context.Background())
		e.recv.mu.Lock()
		e.recv.answer = func(n int, r *http.Request) int {
			if n == 2 {
				cancel()
				<-r.Context().Done()
			}
			return http.StatusOK
		}
		e.recv.mu.Unlock()
		_, err = e.svc.Dispatch(context.Background())
		require.NoError(t, err)
		st, err = e.svc.Deliver(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, st.Released)
		st, err = other.Deliver(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 1, st.Succeeded, "due again at once, delivered by the other")
		got := e.recv.requests()
		require.Len(t, got, 3)
		assert.Equal(t, ev2.ID, got[2].header.Get("webhook-id"))
	})
}

// Two instances on one database deliver each event exactly once.
func TestTwoInstancesDeliverEachEventOnce(t *testing.T) {
	url := pgtest.NewTestDatabase(t)
	open := func() storage.Store {
		db, err := postgres.Open(context.Background(), url)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	clock := clocktest.New(start)
	addApp(t, a, "app_1")
	recv := newReceiver(t)
	svcA, svcB := newService(a, clock), newService(b, clock)
	for range 3 {
		_, err := svcA.CreateEndpoint(context.Background(), "app_1", xpromo.CreateWebhookEndpointRequest{URL: recv.URL, Events: xpromo.EventTypes})
		require.NoError(t, err)
	}
	const n = 300
	emit(t, a, "app_1", xpromo.EventChainCleared, n, start)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, svc := range []*webhooks.Service{svcA, svcB} {
		svc.ClaimBatch = 16 // many small claims: the instances interleave
		wg.Go(func() { svc.Run(ctx, 2, 10*time.Millisecond) })
	}
	deadline := time.Now().Add(2 * time.Minute)
	for recv.count() < 3*n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// Let any duplicate in flight arrive before counting.
	time.Sleep(200 * time.Millisecond)
	cancel()
	wg.Wait()
	perEvent := map[string]int{}
	for _, r := range recv.requests() {
		perEvent[r.header.Get("webhook-id")]++
	}
	require.Len(t, perEvent, n)
	for id, c := range perEvent {
		require.Equal(t, 3, c, "event %s: once per endpoint", id)
	}
}

func assertCode(t *testing.T, err error, code string) {
	t.Helper()
	var e *apperr.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, code, e.Code)
}

// A host name that resolves to a refused address is caught when the
// delivery dials (after DNS), and a redirect is never followed: both are
// failed attempts, and nothing reaches the address.
func TestDeliveryRefusesLoopbackNamesAndRedirects(t *testing.T) {
	s := storagetest.SQLite(t)
	clock := clocktest.New(start)
	addApp(t, s, "app_1")
	strict := newService(s, clock)
	strict.Client = webhooks.NewClient(outbound.Options{}) // as in production
	strict.Policy = webhooks.URLPolicy{}
	ep, err := strict.CreateEndpoint(context.Background(), "app_1", xpromo.CreateWebhookEndpointRequest{URL: "http://localhost/hook", Events: xpromo.EventTypes})
	require.NoError(t, err, "a host name is checked when dialling")
	emit(t, s, "app_1", xpromo.EventChainCleared, 1, start)
	_, err = strict.Dispatch(context.Background())
	require.NoError(t, err)
	st, err := strict.Deliver(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, st.Failed)
	page, err := strict.Attempts(context.Background(), "app_1", ep.ID, "", "", 10)
	require.NoError(t, err)
	require.Len(t, page.Attempts, 1)
	require.NotNil(t, page.Attempts[0].Error)
	assert.Equal(t, "forbidden_address", *page.Attempts[0].Error)
	assert.Nil(t, page.Attempts[0].StatusCode)

	// A redirect to a private address: answered 302, not followed.
	e := newEnv(t, storagetest.SQLite(t))
	redirecting := httptest.NewServer(http.RedirectHandler("http://10.0.0.1/steal", http.StatusFound))
	t.Cleanup(redirecting.Close)
	ep2, err := e.svc.CreateEndpoint(context.Background(), e.app, xpromo.CreateWebhookEndpointRequest{URL: redirecting.URL, Events: xpromo.EventTypes})
	require.NoError(t, err)
	e.emit(xpromo.EventChainCleared, 1)
	require.Equal(t, 1, e.round().Failed)
	atts := e.attempts(ep2.ID)
	require.Len(t, atts, 1)
	require.NotNil(t, atts[0].StatusCode)
	assert.Equal(t, http.StatusFound, *atts[0].StatusCode)
}
