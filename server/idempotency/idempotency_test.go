package idempotency_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// start is where every test's clock starts.
var start = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func service(s storage.Store, c *clocktest.Clock) *idempotency.Service {
	return &idempotency.Service{Update: storage.Updater[idempotency.Tx](s), Now: c.Now}
}

var (
	ctx = context.Background()
	fpA = idempotency.Fingerprint("POST", "/v1/apps", []byte(`{"name":"a"}`))
	fpB = idempotency.Fingerprint("POST", "/v1/apps", []byte(`{"name":"b"}`))
)

func begin(t *testing.T, svc *idempotency.Service, scope, key string, fp []byte) (*idempotency.Claim, *idempotency.Response, error) {
	t.Helper()
	return svc.Begin(ctx, scope, key, fp)
}

// mustClaim begins and expects a fresh claim.
func mustClaim(t *testing.T, svc *idempotency.Service, scope, key string, fp []byte) *idempotency.Claim {
	t.Helper()
	c, replay, err := begin(t, svc, scope, key, fp)
	if err != nil || c == nil || replay != nil {
		t.Fatalf("Begin(%s, %s) = %v, %v, %v; want a claim", scope, key, c, replay, err)
	}
	return c
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if !apperr.Is(err, code) {
		t.Fatalf("err = %v, want %s", err, code)
	}
}

func TestClaimFinishReplay(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		c := clocktest.New(start)
		svc := service(s, c)
		claim := mustClaim(t, svc, "app:a", "k1", fpA)

		// While the first request runs, the same key is in use; a different
		// request under it is a misuse whatever the state.
		_, _, err := begin(t, svc, "app:a", "k1", fpA)
		wantCode(t, err, apperr.IdempotencyKeyInUse)
		_, _, err = begin(t, svc, "app:a", "k1", fpB)
		wantCode(t, err, apperr.IdempotencyKeyReused)

		resp := idempotency.Response{
			Status: 201, ContentType: "application/json",
			Headers: http.Header{"Location": {"/v1/apps/app_1"}},
			Body:    []byte(`{"app_id":"app_1","api_key":"xp_test_x"}` + "\n"),
		}
		if ok, err := svc.Finish(ctx, claim, resp); err != nil || !ok {
			t.Fatalf("Finish = %v, %v", ok, err)
		}
		c.Advance(time.Hour)
		again, replay, err := begin(t, svc, "app:a", "k1", fpA)
		if err != nil || again != nil || replay == nil {
			t.Fatalf("retry: %v, %v, %v; want a replay", again, replay, err)
		}
		if replay.Status != resp.Status || replay.ContentType != resp.ContentType ||
			!bytes.Equal(replay.Body, resp.Body) || replay.Headers.Get("Location") != "/v1/apps/app_1" {
			t.Fatalf("replay = %+v, want %+v", replay, resp)
		}
		_, _, err = begin(t, svc, "app:a", "k1", fpB)
		wantCode(t, err, apperr.IdempotencyKeyReused)

		// Keys are per scope: another caller's identical key is its own.
		mustClaim(t, svc, "app:b", "k1", fpA)
		mustClaim(t, svc, "ip:192.0.2.1", "k1", fpA)
	})
}

// The table holds neither the Idempotency-Key nor the response in clear: a
// registration's replay carries its api_key, which must not sit readable in
// the database (or its backups).
func TestStoredSealed(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc := service(s, clocktest.New(start))
		claim := mustClaim(t, svc, "ip:192.0.2.1", "secret-key", fpA)
		body := []byte(`{"api_key":"xp_test_0123456789"}`)
		if _, err := svc.Finish(ctx, claim, idempotency.Response{Status: 201, Body: body}); err != nil {
			t.Fatal(err)
		}
		err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if _, found, err := tx.LockIdempotencyKey(ctx, "ip:192.0.2.1", "secret-key"); found || err != nil {
				t.Errorf("stored under the key itself: %v, %v", found, err)
			}
			r, found, err := tx.LockIdempotencyKey(ctx, "ip:192.0.2.1", idempotency.StoredKey("secret-key"))
			if !found || err != nil {
				t.Fatalf("not stored under StoredKey: %v, %v", found, err)
			}
			if bytes.Contains(r.Body, []byte("xp_test_")) || r.Status != 201 || r.State != idempotency.Done {
				t.Errorf("stored row %+v holds the body in clear", r)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Only the holder of the key opens it.
		if _, replay, err := begin(t, svc, "ip:192.0.2.1", "secret-key", fpA); err != nil || !bytes.Equal(replay.Body, body) {
			t.Fatalf("replay = %+v, %v", replay, err)
		}
	})
}

func TestEmptyBodyIsStored(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc := service(s, clocktest.New(start))
		claim := mustClaim(t, svc, "app:a", "k", fpA)
		if _, err := svc.Finish(ctx, claim, idempotency.Response{Status: 204}); err != nil {
			t.Fatal(err)
		}
		_, replay, err := begin(t, svc, "app:a", "k", fpA)
		if err != nil || replay == nil || replay.Status != 204 || len(replay.Body) != 0 || replay.Headers != nil {
			t.Fatalf("replay = %+v, %v", replay, err)
		}
	})
}

func TestReleaseLetsTheRequestRunAgain(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc := service(s, clocktest.New(start))
		claim := mustClaim(t, svc, "app:a", "k", fpA)
		if err := svc.Release(ctx, claim); err != nil {
			t.Fatal(err)
		}
		// Released means forgotten: even another body may use the key now.
		second := mustClaim(t, svc, "app:a", "k", fpB)
		// Releasing the old claim again does not touch the new one.
		if err := svc.Release(ctx, claim); err != nil {
			t.Fatal(err)
		}
		_, _, err := begin(t, svc, "app:a", "k", fpB)
		wantCode(t, err, apperr.IdempotencyKeyInUse)
		if ok, err := svc.Finish(ctx, second, idempotency.Response{Status: 200}); !ok || err != nil {
			t.Fatalf("Finish = %v, %v", ok, err)
		}
	})
}

// A released key taken again by the same request names the same request
// (Ref): a payout reserved before its 503 is found by the retry (issue
// 31), and the key keeps its first use's expiry; another body starts the
// key afresh.
func TestReleasedKeyKeepsItsRequest(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		c := clocktest.New(start)
		svc := service(s, c)
		first := mustClaim(t, svc, "app:a", "k", fpA)
		if err := svc.Release(ctx, first); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Minute) // a fresh claim would expire a minute later
		again := mustClaim(t, svc, "app:a", "k", fpA)
		if again.Ref() != first.Ref() || again.ID == first.ID {
			t.Fatalf("after a release: ref %+v then %+v", first.Ref(), again.Ref())
		}
		// The retry runs it: no other attempt may meanwhile.
		_, _, err := begin(t, svc, "app:a", "k", fpA)
		wantCode(t, err, apperr.IdempotencyKeyInUse)
		if err := svc.Release(ctx, again); err != nil {
			t.Fatal(err)
		}
		other := mustClaim(t, svc, "app:a", "k", fpB)
		if other.Ref().ID() == first.Ref().ID() {
			t.Fatal("another request on a released key names the first one")
		}
	})
}

// A claim whose request crashed is abandoned once its lease (60 s) lapses:
// a retry takes the key over, and the old claim can no longer finish.
func TestAbandonedClaimIsTakenOver(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		c := clocktest.New(start)
		svc := service(s, c)
		old := mustClaim(t, svc, "app:a", "k", fpA)
		c.Advance(idempotency.DefaultLease - time.Millisecond)
		_, _, err := begin(t, svc, "app:a", "k", fpA)
		wantCode(t, err, apperr.IdempotencyKeyInUse)
		c.Advance(time.Millisecond)
		_, _, err = begin(t, svc, "app:a", "k", fpB)
		wantCode(t, err, apperr.IdempotencyKeyReused)
		taken := mustClaim(t, svc, "app:a", "k", fpA)
		if taken.ID == old.ID {
			t.Fatal("the new claim has the old claim's id")
		}
		if ok, err := svc.Finish(ctx, old, idempotency.Response{Status: 201, Body: []byte("old")}); ok || err != nil {
			t.Fatalf("Finish(old claim) = %v, %v; want false", ok, err)
		}
		if ok, err := svc.Finish(ctx, taken, idempotency.Response{Status: 201, Body: []byte("new")}); !ok || err != nil {
			t.Fatalf("Finish(new claim) = %v, %v", ok, err)
		}
		_, replay, err := begin(t, svc, "app:a", "k", fpA)
		if err != nil || replay == nil || string(replay.Body) != "new" {
			t.Fatalf("replay = %+v, %v; want the new claim's response", replay, err)
		}
	})
}

// After 24 hours a key is forgotten: the request runs again, and the key may
// even carry another request.
func TestExpiry(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		c := clocktest.New(start)
		svc := service(s, c)
		claim := mustClaim(t, svc, "app:a", "k", fpA)
		if _, err := svc.Finish(ctx, claim, idempotency.Response{Status: 201, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		c.Advance(idempotency.DefaultTTL - time.Millisecond)
		if _, replay, err := begin(t, svc, "app:a", "k", fpA); err != nil || replay == nil {
			t.Fatalf("just before expiry: %v, %v; want a replay", replay, err)
		}
		c.Advance(time.Millisecond)
		mustClaim(t, svc, "app:a", "k", fpB)
	})
}

func TestPurge(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		c := clocktest.New(start)
		svc := service(s, c)
		for _, k := range []string{"a", "b", "c"} {
			claim := mustClaim(t, svc, "app:a", k, fpA)
			if _, err := svc.Finish(ctx, claim, idempotency.Response{Status: 200}); err != nil {
				t.Fatal(err)
			}
		}
		c.Advance(time.Hour)
		d := mustClaim(t, svc, "app:a", "d", fpA) // expires an hour later than the others
		if _, err := svc.Finish(ctx, d, idempotency.Response{Status: 201}); err != nil {
			t.Fatal(err)
		}
		if n, err := svc.Purge(ctx); n != 0 || err != nil {
			t.Fatalf("Purge before expiry = %d, %v", n, err)
		}
		c.Advance(idempotency.DefaultTTL - time.Hour)
		if n, err := svc.Purge(ctx); n != 3 || err != nil {
			t.Fatalf("Purge = %d, %v; want 3", n, err)
		}
		// "d" is still kept.
		if _, replay, err := begin(t, svc, "app:a", "d", fpA); err != nil || replay == nil || replay.Status != 201 {
			t.Fatalf("d after the purge: %+v, %v; want its replay", replay, err)
		}
		c.Advance(time.Hour)
		if n, err := svc.Purge(ctx); n != 1 || err != nil {
			t.Fatalf("second Purge = %d, %v; want 1", n, err)
		}
	})
}

// Concurrent requests with one key: exactly one claims it, the others are
// told it is in use.
func TestConcurrentBegin(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		svc := service(s, clocktest.New(start))
		var claims, inUse atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Go(func() {
				c, _, err := svc.Begin(ctx, "app:a", "same", fpA)
				switch {
				case err == nil && c != nil:
					claims.Add(1)
				case apperr.Is(err, apperr.IdempotencyKeyInUse):
					inUse.Add(1)
				default:
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if claims.Load() != 1 || inUse.Load() != 19 {
			t.Fatalf("%d claims and %d in use, want 1 and 19", claims.Load(), inUse.Load())
		}
	})
}

func TestParseKey(t *testing.T) {
	for in, want := range map[string]string{
		"8e03978e-40d5-43e8-bc93-6894a57f9324":   "8e03978e-40d5-43e8-bc93-6894a57f9324",
		`"8e03978e-40d5-43e8-bc93-6894a57f9324"`: "8e03978e-40d5-43e8-bc93-6894a57f9324",
		`"a \"quoted\" \\ key"`:                  `a "quoted" \ key`,
		"x":                                      "x",
		strings.Repeat("k", 255):                 strings.Repeat("k", 255),
		"with space":                             "with space",
		`"`:                                      `"`,
	} {
		got, err := idempotency.ParseKey(in)
		if err != nil || got != want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", `""`, strings.Repeat("k", 256), "tab\there", "é", "nul\x00", "del\x7f", `"bad"quote"`, `"trailing\"`} {
		_, err := idempotency.ParseKey(in)
		wantCode(t, err, apperr.InvalidIdempotencyKey)
	}
}

func TestFingerprint(t *testing.T) {
	base := idempotency.Fingerprint("POST", "/v1/campaigns", []byte(`{}`))
	if !bytes.Equal(base, idempotency.Fingerprint("POST", "/v1/campaigns", []byte(`{}`))) {
		t.Fatal("not deterministic")
	}
	for _, other := range [][]byte{
		idempotency.Fingerprint("PUT", "/v1/campaigns", []byte(`{}`)),
		idempotency.Fingerprint("POST", "/v1/campaigns/c_1/pause", []byte(`{}`)),
		idempotency.Fingerprint("POST", "/v1/campaigns", []byte(`{ }`)),
		idempotency.Fingerprint("POST", "/v1/campaigns{", []byte(`}`)), // bytes moved across fields
	} {
		if bytes.Equal(base, other) {
			t.Fatal("different requests share a fingerprint")
		}
	}
}

// holdInstance holds a fresh instance id in s (storage.InstanceHolder), as
// a server does at start.
func holdInstance(t *testing.T, s storage.Store, id string) {
	t.Helper()
	release, err := s.(storage.InstanceHolder).HoldInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
}

// A claim whose holder the store knows dead is taken over at once, lease or
// not: its request ran as a unit that never committed. A live holder's claim
// is in use until its lease lapses.
func TestDeadHolderIsTakenOver(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		c := clocktest.New(start)
		holdInstance(t, s, "inst_live")
		live := &idempotency.Service{Update: storage.Updater[idempotency.Tx](s), Now: c.Now, Holder: "inst_live"}
		dead := &idempotency.Service{Update: storage.Updater[idempotency.Tx](s), Now: c.Now, Holder: "inst_dead"}

		crashed := mustClaim(t, dead, "app:a", "k", fpA)
		c.Advance(time.Second)
		taken := mustClaim(t, live, "app:a", "k", fpA)
		if taken.Ref().ID() != crashed.Ref().ID() {
			t.Fatal("the takeover runs another request (Ref.ID differs)")
		}
		if ok, err := dead.Finish(ctx, crashed, idempotency.Response{Status: 201}); ok || err != nil {
			t.Fatalf("Finish(dead holder's claim) = %v, %v; want false", ok, err)
		}
		// The dead holder's fingerprint still binds the key.
		mustClaim(t, dead, "app:a", "k2", fpA)
		_, _, err := begin(t, live, "app:a", "k2", fpB)
		wantCode(t, err, apperr.IdempotencyKeyReused)

		// The live holder's claims are in use, for any instance.
		_, _, err = begin(t, dead, "app:a", "k", fpA)
		wantCode(t, err, apperr.IdempotencyKeyInUse)
		c.Advance(idempotency.DefaultLease)
		mustClaim(t, dead, "app:a", "k", fpA)
	})
}

// A claim of this process's own that none of its requests runs any more
// (the run failed while the database was away and could not release it) is
// taken over by a retry here at once; while a request runs it, it is in use.
// Another instance still sees the live holder's claim as in use.
func TestOwnAbandonedClaimIsTakenOver(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		c := clocktest.New(start)
		holdInstance(t, s, "inst_me")
		me := &idempotency.Service{Update: storage.Updater[idempotency.Tx](s), Now: c.Now, Holder: "inst_me"}
		other := &idempotency.Service{Update: storage.Updater[idempotency.Tx](s), Now: c.Now, Holder: "inst_other"}

		first := mustClaim(t, me, "app:a", "k", fpA)
		_, _, err := begin(t, me, "app:a", "k", fpA)
		wantCode(t, err, apperr.IdempotencyKeyInUse) // still running here
		me.Done(first)                               // gave up without releasing
		_, _, err = begin(t, other, "app:a", "k", fpA)
		wantCode(t, err, apperr.IdempotencyKeyInUse) // the holder lives
		again := mustClaim(t, me, "app:a", "k", fpA)
		if again.ID == first.ID || again.Ref().ID() != first.Ref().ID() {
			t.Fatal("the takeover must be a new claim of the same request")
		}
		if ok, err := me.Finish(ctx, first, idempotency.Response{Status: 201}); ok || err != nil {
			t.Fatalf("Finish(abandoned claim) = %v, %v; want false", ok, err)
		}
		// A different request under the key is still refused.
		me.Done(again)
		_, _, err = begin(t, me, "app:a", "k", fpB)
		wantCode(t, err, apperr.IdempotencyKeyReused)
	})
}

// A Release that fails (the database is away) is retried in the background
// until it succeeds, so other instances need not wait out the lease.
func TestFailedReleaseIsRetried(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		c := clocktest.New(start)
		var down atomic.Bool
		update := storage.Updater[idempotency.Tx](s)
		svc := &idempotency.Service{Now: c.Now, Update: func(ctx context.Context, fn func(ctx context.Context, tx idempotency.Tx) error) error {
			if down.Load() {
				return apperr.New(apperr.Unavailable, "the database is unavailable")
			}
			return update(ctx, fn)
		}}
		claim := mustClaim(t, svc, "app:a", "k", fpA)
		down.Store(true)
		if err := svc.Release(ctx, claim); err == nil {
			t.Fatal("Release succeeded with the database down")
		}
		down.Store(false)
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, replay, err := svc.Begin(ctx, "app:a", "k", fpA)
			if err == nil && c != nil && replay == nil {
				return // released in the background, claimed afresh
			}
			if !apperr.Is(err, apperr.IdempotencyKeyInUse) || time.Now().After(deadline) {
				t.Fatalf("Begin after the database came back = %v, %v, %v", c, replay, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// A key lives TTL from its first use, takeovers included; its Ref names one
// request: the same for every run, another once the key expired.
func TestRefNamesOneRequest(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		c := clocktest.New(start.Add(123456789 * time.Nanosecond)) // finer than the stores keep
		svc := service(s, c)
		first := mustClaim(t, svc, "app:a", "k", fpA)
		c.Advance(idempotency.DefaultLease)
		again := mustClaim(t, svc, "app:a", "k", fpA)
		if again.Ref() != first.Ref() || again.ID == first.ID {
			t.Fatalf("takeover: ref %+v then %+v", first.Ref(), again.Ref())
		}
		if _, err := svc.Finish(ctx, again, idempotency.Response{Status: 201}); err != nil {
			t.Fatal(err)
		}
		c.Advance(idempotency.DefaultTTL - idempotency.DefaultLease - time.Microsecond)
		if _, replay, err := begin(t, svc, "app:a", "k", fpA); replay == nil || err != nil {
			t.Fatalf("before expiry: %v, %v; want a replay", replay, err)
		}
		c.Advance(time.Microsecond)
		later := mustClaim(t, svc, "app:a", "k", fpA)
		if later.Ref().ID() == first.Ref().ID() {
			t.Fatal("a key used again after it expired names the same request")
		}
		other := mustClaim(t, svc, "app:b", "k", fpA)
		if other.Ref().ID() == later.Ref().ID() {
			t.Fatal("two scopes' keys name the same request")
		}
	})
}
