package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/webhooks"
)

// Webhooks runs the suite of webhooks.Tx on a fresh store from newStore:
// the sqlite and postgres packages call it from their tests.
func Webhooks(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("Endpoints", func(t *testing.T) { testWebhookEndpoints(t, newStore(t)) })
	t.Run("EventsPage", func(t *testing.T) { testEventsPage(t, newStore(t)) })
	t.Run("EventsOfTwoApps", func(t *testing.T) { testEventsOfTwoApps(t, newStore(t)) })
	t.Run("DispatchOnce", func(t *testing.T) { testDispatchOnce(t, newStore(t)) })
	t.Run("ClaimLeaseAndToken", func(t *testing.T) { testClaimLease(t, newStore(t)) })
	t.Run("DisableDropsQueue", func(t *testing.T) { testDisableDropsQueue(t, newStore(t)) })
	t.Run("Purge", func(t *testing.T) { testWebhookPurge(t, newStore(t)) })
}

var whStart = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

func update(t *testing.T, s storage.Store, fn func(ctx context.Context, tx storage.Tx) error) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), fn))
}

func whApp(t *testing.T, s storage.Store, id string) {
	t.Helper()
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertApp(ctx, apps.App{ID: id, Name: id, Platform: xpromo.PlatformMac, BundleID: "com.example." + id,
			Domain: "example.com", DownloadURL: "https://example.com/a.zip", ContactEmail: "dev@example.com",
			Status: xpromo.AppStatusPending, EarnMode: ledger.EarnCash, CreatedAt: whStart, UpdatedAt: whStart})
	})
}

func whEndpoint(t *testing.T, s storage.Store, id, app string, events ...xpromo.EventType) webhooks.Endpoint {
	t.Helper()
	e := webhooks.Endpoint{ID: id, AppID: app, URL: "https://example.com/" + id, Events: events, Description: "d",
		Status: xpromo.WebhookEndpointEnabled, Secret: "whsec_" + id, CreatedAt: whStart, UpdatedAt: whStart}
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.InsertWebhookEndpoint(ctx, e) })
	return e
}

func whEvents(t *testing.T, s storage.Store, app string, typ xpromo.EventType, n int, at time.Time) []outbox.Event {
	t.Helper()
	var evs []outbox.Event
	for i := range n {
		e := outbox.New(app, typ, map[string]int{"i": i}, at.Add(time.Duration(i)*time.Millisecond))
		evs = append(evs, e)
	}
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.InsertOutbox(ctx, evs) })
	return evs
}

func testWebhookEndpoints(t *testing.T, s storage.Store) {
	whApp(t, s, "app_a")
	whApp(t, s, "app_b")
	e := whEndpoint(t, s, "we_1", "app_a", xpromo.EventChainCleared, xpromo.EventPayoutSent)
	whEndpoint(t, s, "we_2", "app_a", xpromo.EventScoreUpdated)
	whEndpoint(t, s, "we_3", "app_b", xpromo.EventScoreUpdated)
	ctx := context.Background()
	require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		got, found, err := tx.WebhookEndpoint(ctx, "app_a", "we_1")
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, e, got)
		_, found, err = tx.WebhookEndpoint(ctx, "app_b", "we_1")
		require.NoError(t, err)
		assert.False(t, found, "another app's endpoint is not found")
		list, err := tx.WebhookEndpoints(ctx, "app_a")
		require.NoError(t, err)
		assert.Len(t, list, 2)
		return nil
	}))
	// Every field round-trips through an update.
	e.URL, e.Events, e.Description = "https://example.org/x", []xpromo.EventType{xpromo.EventChainRejected}, "new"
	e.Status, e.DisabledReason, e.DisabledAt = xpromo.WebhookEndpointDisabled, xpromo.WebhookDisabledGone, whStart.Add(time.Hour)
	e.PreviousSecret, e.PreviousSecretExpiresAt, e.Secret = e.Secret, whStart.Add(24*time.Hour), "whsec_new"
	e.UpdatedAt = whStart.Add(time.Hour)
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.UpdateWebhookEndpoint(ctx, e) })
	require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		got, _, err := tx.WebhookEndpoint(ctx, "app_a", "we_1")
		assert.Equal(t, e, got)
		enabled, err2 := tx.EnabledWebhookEndpoints(ctx, []string{"app_a", "app_b"})
		var ids []string
		for _, x := range enabled {
			ids = append(ids, x.ID)
		}
		assert.ElementsMatch(t, []string{"we_2", "we_3"}, ids)
		return errjoin(err, err2)
	}))
	// Delete: only the app's own, with its queue.
	evs := whEvents(t, s, "app_a", xpromo.EventScoreUpdated, 1, whStart)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertDeliveries(ctx, []webhooks.Delivery{{EndpointID: "we_2", EventID: evs[0].ID, AppID: "app_a", EventCreatedAt: evs[0].CreatedAt, NextAttemptAt: whStart}})
	})
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		found, err := tx.DeleteWebhookEndpoint(ctx, "app_b", "we_2")
		assert.False(t, found)
		if err != nil {
			return err
		}
		found, err = tx.DeleteWebhookEndpoint(ctx, "app_a", "we_2")
		assert.True(t, found)
		return err
	})
	assert.Empty(t, claim(t, s, whStart.Add(time.Hour), 100), "the deleted endpoint's queue went with it")
}

func errjoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func claim(t *testing.T, s storage.Store, now time.Time, limit int) []webhooks.Claimed {
	t.Helper()
	var out []webhooks.Claimed
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		var err error
		out, err = tx.ClaimDeliveries(ctx, now, now.Add(time.Minute), limit)
		return err
	})
	return out
}

func testEventsPage(t *testing.T, s storage.Store) {
	whApp(t, s, "app_a")
	a := whEvents(t, s, "app_a", xpromo.EventChainCleared, 3, whStart)
	b := whEvents(t, s, "app_a", xpromo.EventPayoutSent, 2, whStart.Add(time.Second))
	whEvents(t, s, "app_b", xpromo.EventPayoutSent, 2, whStart)
	ctx := context.Background()
	page := func(q webhooks.EventQuery) []string {
		var ids []string
		require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			evs, err := tx.AppEvents(ctx, q)
			for _, e := range evs {
				ids = append(ids, e.ID)
				assert.Equal(t, "app_a", e.AppID)
			}
			return err
		}))
		return ids
	}
	all := []string{a[0].ID, a[1].ID, a[2].ID, b[0].ID, b[1].ID}
	assert.Equal(t, all, page(webhooks.EventQuery{AppID: "app_a", Limit: 10}))
	assert.Equal(t, all[:2], page(webhooks.EventQuery{AppID: "app_a", Limit: 2}))
	assert.Equal(t, all[2:4], page(webhooks.EventQuery{AppID: "app_a", Limit: 2, After: webhooks.Position{CreatedAt: a[1].CreatedAt, ID: a[1].ID}}))
	assert.Equal(t, []string{b[0].ID, b[1].ID}, page(webhooks.EventQuery{AppID: "app_a", Limit: 10, Types: []xpromo.EventType{xpromo.EventPayoutSent}}))
	require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		e, found, err := tx.AppEvent(ctx, "app_a", a[1].ID)
		assert.True(t, found)
		assert.Equal(t, a[1].ID, e.ID)
		assert.JSONEq(t, string(a[1].Data), string(e.Data))
		assert.True(t, a[1].CreatedAt.Equal(e.CreatedAt))
		_, found, err2 := tx.AppEvent(ctx, "app_b", a[1].ID)
		assert.False(t, found, "another app's event is not found")
		return errjoin(err, err2)
	}))
}

// testEventsOfTwoApps: an event written for two apps is one row (Also),
// and every reader sees each app's event on its own, under its own id: the
// events API's pages and lookups, the dispatch, the deliveries, the purge.
func testEventsOfTwoApps(t *testing.T, s storage.Store) {
	whApp(t, s, "app_a")
	whApp(t, s, "app_b")
	ctx := context.Background()
	types := []xpromo.EventType{xpromo.EventChainStateChanged, xpromo.EventChainCleared}
	first := outbox.NewEach([]string{"app_a", "app_b"}, types, map[string]int{"n": 1}, whStart)
	only := outbox.New("app_b", xpromo.EventScoreUpdated, map[string]int{"n": 2}, whStart.Add(time.Second))
	second := outbox.NewEach([]string{"app_a", "app_b"}, types, map[string]int{"n": 3}, whStart.Add(2*time.Second))
	require.Len(t, first, 2, "one row per type")
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertOutbox(ctx, append(append(append([]outbox.Event{}, first...), only), second...))
	})
	all := map[string][]outbox.Event{}
	for _, e := range append(append(append([]outbox.Event{}, first...), only), second...) {
		for _, one := range e.Split() {
			all[one.AppID] = append(all[one.AppID], one)
		}
	}
	ids := func(evs []outbox.Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, e.ID)
		}
		return out
	}
	page := func(q webhooks.EventQuery) []outbox.Event {
		var evs []outbox.Event
		require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			var err error
			evs, err = tx.AppEvents(ctx, q)
			return err
		}))
		for _, e := range evs {
			assert.Equal(t, q.AppID, e.AppID)
		}
		return evs
	}
	a, b := all["app_a"], all["app_b"]
	require.Len(t, a, 4)
	require.Len(t, b, 5)
	assert.Equal(t, ids(a), ids(page(webhooks.EventQuery{AppID: "app_a", Limit: 10})))
	gotB := page(webhooks.EventQuery{AppID: "app_b", Limit: 10})
	assert.Equal(t, ids(b), ids(gotB), "the second app's events under its own ids, merged in order with its other events")
	for i, e := range gotB {
		assert.Equal(t, b[i].Type, e.Type)
		assert.JSONEq(t, string(b[i].Data), string(e.Data))
		assert.True(t, b[i].CreatedAt.Equal(e.CreatedAt))
	}
	for i := range a {
		assert.NotEqual(t, a[i].ID, b[i].ID, "each app its own id")
	}
	assert.Equal(t, ids(b[:2]), ids(page(webhooks.EventQuery{AppID: "app_b", Limit: 2})))
	assert.Equal(t, ids(b[2:4]), ids(page(webhooks.EventQuery{AppID: "app_b", Limit: 2, After: webhooks.Position{CreatedAt: b[1].CreatedAt, ID: b[1].ID}})))
	assert.Equal(t, []string{b[1].ID, b[4].ID}, ids(page(webhooks.EventQuery{AppID: "app_b", Limit: 10, Types: []xpromo.EventType{xpromo.EventChainCleared}})))
	require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		e, found, err := tx.AppEvent(ctx, "app_b", b[0].ID)
		assert.True(t, found)
		assert.Equal(t, b[0].ID, e.ID)
		assert.Equal(t, "app_b", e.AppID)
		assert.Equal(t, xpromo.EventChainStateChanged, e.Type)
		_, found2, err2 := tx.AppEvent(ctx, "app_a", b[0].ID)
		assert.False(t, found2, "the other app's id is not the app's event")
		_, found3, err3 := tx.AppEvent(ctx, "app_b", a[0].ID)
		assert.False(t, found3, "the other app's id is not the app's event")
		return errjoin(err, err2, err3)
	}))

	// The dispatch returns each app's event once: two rows, four events.
	var claimed []outbox.Event
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		var err error
		claimed, err = tx.ClaimUndispatched(ctx, whStart, 2)
		return err
	})
	require.Len(t, claimed, 4)
	got := map[string]string{}
	for _, e := range claimed {
		got[e.ID] = e.AppID
		assert.Equal(t, outbox.Recipient{}, e.Also)
	}
	assert.Equal(t, map[string]string{a[0].ID: "app_a", a[1].ID: "app_a", b[0].ID: "app_b", b[1].ID: "app_b"}, got)

	// A delivery of the second app's event finds the event by its id.
	whEndpoint(t, s, "we_b", "app_b", xpromo.EventChainCleared)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertDeliveries(ctx, []webhooks.Delivery{{EndpointID: "we_b", EventID: b[1].ID, AppID: "app_b", EventCreatedAt: b[1].CreatedAt, NextAttemptAt: whStart}})
	})
	ds := claim(t, s, whStart, 10)
	require.Len(t, ds, 1)
	assert.Equal(t, b[1].ID, ds[0].Event.ID)
	assert.Equal(t, "app_b", ds[0].Event.AppID)
	assert.Equal(t, xpromo.EventChainCleared, ds[0].Event.Type)
	assert.JSONEq(t, string(b[1].Data), string(ds[0].Event.Data))

	// The purge takes the row, so both apps' events go together.
	var n int
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		var err error
		n, err = tx.PurgeEvents(ctx, whStart.Add(time.Second), 10)
		return err
	})
	assert.Equal(t, 2, n, "two rows")
	assert.Equal(t, ids(a[2:]), ids(page(webhooks.EventQuery{AppID: "app_a", Limit: 10})))
	assert.Equal(t, ids(b[2:]), ids(page(webhooks.EventQuery{AppID: "app_b", Limit: 10})))
	assert.Empty(t, claim(t, s, whStart.Add(time.Hour), 10), "the purged event's delivery went with it")

	// Many events at once (a sweep batch's; PostgreSQL copies them) read
	// back the same way, in one transaction with a held-back statement.
	var bulk []outbox.Event
	for i := range 150 {
		bulk = append(bulk, outbox.NewEach([]string{"app_a", "app_b"}, types[1:], map[string]int{"i": i}, whStart.Add(time.Hour))...)
	}
	bulk = append(bulk, outbox.New("app_b", xpromo.EventScoreUpdated, map[string]int{"n": 4}, whStart.Add(time.Hour)))
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.InsertOutbox(ctx, bulk[:1]); err != nil {
			return err
		}
		return tx.InsertOutbox(ctx, bulk[1:])
	})
	bulkA := page(webhooks.EventQuery{AppID: "app_a", Limit: 1000, After: webhooks.Position{CreatedAt: whStart.Add(time.Minute)}})
	bulkB := page(webhooks.EventQuery{AppID: "app_b", Limit: 1000, After: webhooks.Position{CreatedAt: whStart.Add(time.Minute)}})
	require.Len(t, bulkA, 150)
	require.Len(t, bulkB, 151)
	for i := range 150 {
		assert.Equal(t, bulk[i].ID, bulkA[i].ID)
		assert.Equal(t, bulk[i].Also.ID, bulkB[i].ID)
		assert.JSONEq(t, string(bulk[i].Data), string(bulkB[i].Data))
	}
	assert.Equal(t, bulk[150].ID, bulkB[150].ID)
}

func testDispatchOnce(t *testing.T, s storage.Store) {
	whApp(t, s, "app_a")
	evs := whEvents(t, s, "app_a", xpromo.EventChainCleared, 5, whStart)
	var first, second []outbox.Event
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		var err error
		first, err = tx.ClaimUndispatched(ctx, whStart, 3)
		return err
	})
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		var err error
		second, err = tx.ClaimUndispatched(ctx, whStart, 10)
		return err
	})
	require.Len(t, first, 3)
	require.Len(t, second, 2)
	assert.Equal(t, evs[0].ID, first[0].ID, "oldest first")
	assert.Equal(t, evs[4].ID, second[1].ID)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		again, err := tx.ClaimUndispatched(ctx, whStart, 10)
		assert.Empty(t, again, "an event is dispatched once")
		return err
	})
}

func testClaimLease(t *testing.T, s storage.Store) {
	whApp(t, s, "app_a")
	whEndpoint(t, s, "we_1", "app_a", xpromo.EventChainCleared)
	evs := whEvents(t, s, "app_a", xpromo.EventChainCleared, 3, whStart)
	var ds []webhooks.Delivery
	for _, e := range evs {
		ds = append(ds, webhooks.Delivery{EndpointID: "we_1", EventID: e.ID, AppID: "app_a", EventCreatedAt: e.CreatedAt, NextAttemptAt: whStart})
	}
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.InsertDeliveries(ctx, ds) })

	assert.Empty(t, claim(t, s, whStart.Add(-time.Second), 10), "not due yet")
	got := claim(t, s, whStart, 2)
	require.Len(t, got, 2)
	assert.Equal(t, evs[0].ID, got[0].EventID, "in order of occurrence")
	assert.Equal(t, "whsec_we_1", got[0].Endpoint.Secret)
	assert.Equal(t, xpromo.EventChainCleared, got[0].Event.Type)
	assert.True(t, got[0].NextAttemptAt.Equal(whStart.Add(time.Minute)), "the claim's token is its lease end")
	rest := claim(t, s, whStart.Add(time.Second), 10)
	require.Len(t, rest, 1, "claimed rows are leased")
	assert.Equal(t, evs[2].ID, rest[0].EventID)

	// A result applies only while the claim holds the row: the lease of
	// the first claim runs out, a second claim takes the row, and the
	// first claim's late result changes nothing.
	retaken := claim(t, s, whStart.Add(2*time.Minute), 10)
	require.Len(t, retaken, 3)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.RecordResults(ctx, whStart.Add(2*time.Minute), []webhooks.Result{{Delivery: got[0].Delivery, Done: true}})
	})
	assert.Len(t, claim(t, s, whStart.Add(4*time.Minute), 10), 3, "the stale result deleted nothing")

	// Reschedule, release and done.
	now := whStart.Add(4 * time.Minute)
	all := claim(t, s, now.Add(2*time.Minute), 10)
	require.Len(t, all, 3)
	a := webhooks.Attempt{ID: "wha_1", EndpointID: "we_1", EventID: all[0].EventID, AppID: "app_a", Attempt: 1, AttemptedAt: now, StatusCode: 500, LatencyMS: 3, Excerpt: "oops", NextAttemptAt: now.Add(time.Hour)}
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.RecordResults(ctx, now, []webhooks.Result{
			{Delivery: all[0].Delivery, Attempt: &a, NextAttemptAt: now.Add(time.Hour)},
			{Delivery: all[1].Delivery, Release: true, NextAttemptAt: now.Add(30 * time.Minute)},
			{Delivery: all[2].Delivery, Attempt: &webhooks.Attempt{ID: "wha_2", EndpointID: "we_1", EventID: all[2].EventID, AppID: "app_a", Attempt: 1, AttemptedAt: now, StatusCode: 204, Succeeded: true}, Done: true},
		})
	})
	later := claim(t, s, now.Add(2*time.Hour), 10)
	require.Len(t, later, 2)
	byEvent := map[string]int{}
	for _, c := range later {
		byEvent[c.EventID] = c.Attempts
	}
	assert.Equal(t, map[string]int{all[0].EventID: 1, all[1].EventID: 0}, byEvent, "a failure counts an attempt, a release does not")

	require.NoError(t, s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		list, err := tx.WebhookAttempts(ctx, webhooks.AttemptQuery{EndpointID: "we_1", Limit: 10})
		require.Len(t, list, 2)
		assert.Equal(t, "wha_2", list[0].ID, "newest first (id breaks the tie)")
		assert.Equal(t, a, list[1])
		one, err2 := tx.WebhookAttempts(ctx, webhooks.AttemptQuery{EndpointID: "we_1", EventID: all[0].EventID, Limit: 10})
		assert.Len(t, one, 1)
		before, err3 := tx.WebhookAttempts(ctx, webhooks.AttemptQuery{EndpointID: "we_1", Limit: 10, Before: &webhooks.Position{CreatedAt: now, ID: "wha_2"}})
		assert.Len(t, before, 1)
		return errjoin(err, err2, err3)
	}))

	// A redelivery of a queued event makes it due now with no attempts.
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertDeliveries(ctx, []webhooks.Delivery{{EndpointID: "we_1", EventID: all[0].EventID, AppID: "app_a", EventCreatedAt: all[0].EventCreatedAt, NextAttemptAt: now.Add(3 * time.Hour)}})
	})
	re := claim(t, s, now.Add(3*time.Hour), 10)
	require.Len(t, re, 2, "the redelivery and the released delivery, whose later claim's lease ran out")
	for _, c := range re {
		if c.EventID == all[0].EventID {
			assert.Equal(t, 0, c.Attempts, "a redelivery starts again at 0 attempts")
		}
	}
}

func testDisableDropsQueue(t *testing.T, s storage.Store) {
	whApp(t, s, "app_a")
	whEndpoint(t, s, "we_1", "app_a", xpromo.EventChainCleared)
	whEndpoint(t, s, "we_2", "app_a", xpromo.EventChainCleared)
	evs := whEvents(t, s, "app_a", xpromo.EventChainCleared, 2, whStart)
	var ds []webhooks.Delivery
	for _, ep := range []string{"we_1", "we_2"} {
		for _, e := range evs {
			ds = append(ds, webhooks.Delivery{EndpointID: ep, EventID: e.ID, AppID: "app_a", EventCreatedAt: e.CreatedAt, NextAttemptAt: whStart})
		}
	}
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.InsertDeliveries(ctx, ds) })
	got := claim(t, s, whStart, 1)
	require.Len(t, got, 1)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.RecordResults(ctx, whStart, []webhooks.Result{{Delivery: got[0].Delivery, Done: true, Disable: xpromo.WebhookDisabledGone,
			Attempt: &webhooks.Attempt{ID: "wha_1", EndpointID: got[0].EndpointID, EventID: got[0].EventID, AppID: "app_a", Attempt: 1, AttemptedAt: whStart, StatusCode: 410}}})
	})
	left := claim(t, s, whStart.Add(time.Hour), 10)
	require.Len(t, left, 2, "the other endpoint's deliveries stay")
	for _, c := range left {
		assert.NotEqual(t, got[0].EndpointID, c.EndpointID)
	}
	require.NoError(t, s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		e, _, err := tx.WebhookEndpoint(ctx, "app_a", got[0].EndpointID)
		assert.Equal(t, xpromo.WebhookEndpointDisabled, e.Status)
		assert.Equal(t, xpromo.WebhookDisabledGone, e.DisabledReason)
		assert.True(t, e.DisabledAt.Equal(whStart))
		return err
	}))
}

func testWebhookPurge(t *testing.T, s storage.Store) {
	whApp(t, s, "app_a")
	whEndpoint(t, s, "we_1", "app_a", xpromo.EventChainCleared)
	old := whEvents(t, s, "app_a", xpromo.EventChainCleared, 3, whStart)
	recent := whEvents(t, s, "app_a", xpromo.EventChainCleared, 1, whStart.Add(31*24*time.Hour))
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertDeliveries(ctx, []webhooks.Delivery{{EndpointID: "we_1", EventID: old[0].ID, AppID: "app_a", EventCreatedAt: old[0].CreatedAt, NextAttemptAt: whStart}})
	})
	cutoff := whStart.Add(24 * time.Hour)
	var n1, n2 int
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		var err error
		n1, err = tx.PurgeEvents(ctx, cutoff, 2)
		return err
	})
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		var err error
		n2, err = tx.PurgeEvents(ctx, cutoff, 2)
		return err
	})
	assert.Equal(t, []int{2, 1}, []int{n1, n2})
	assert.Empty(t, claim(t, s, whStart.Add(40*24*time.Hour), 10), "the purged event's delivery went with it")
	require.NoError(t, s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		evs, err := tx.AppEvents(ctx, webhooks.EventQuery{AppID: "app_a", Limit: 10})
		require.Len(t, evs, 1)
		assert.Equal(t, recent[0].ID, evs[0].ID)
		return err
	}))
}
