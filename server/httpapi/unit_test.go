package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// A request sent with an Idempotency-Key runs as one unit of work: its
// writes and its stored answer commit together, or not at all.

// unitFixture mounts handlers that write to the store through the request's
// unit, then answer as the path says.
type unitFixture struct {
	s    storage.Store
	runs sync.Map // path → *atomic.Int64
}

func (f *unitFixture) count(path string) int64 {
	v, _ := f.runs.LoadOrStore("/fixture"+path, new(atomic.Int64))
	return v.(*atomic.Int64).Load()
}

// post posts a top-up of app_fixture under key in the request's unit;
// conflict makes the transaction fail with a conflict after its writes.
func (f *unitFixture) post(ctx context.Context, key string, conflict bool) error {
	return storage.Units(f.s).Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		op, err := ledger.TopUp(key, "app_fixture", 100, "unit fixture")
		if err != nil {
			return err
		}
		_, errs, err := ledger.Apply(ctx, tx, time.Now(), []ledger.Operation{op})
		if err != nil {
			return err
		}
		if errs[0] != nil {
			return errs[0]
		}
		if conflict {
			return fmt.Errorf("unit fixture: %w", ledger.ErrConflict)
		}
		return nil
	})
}

func (f *unitFixture) mount(public, _ chi.Router) {
	// POST /fixture/unit/{mode}/{op}: post the operation op, then:
	// 500, panic, 201; ignore (a failed write, answered 201 anyway);
	// conflict-once (the first run conflicts, the next ones do not);
	// conflict (every run conflicts).
	public.Post("/unit/{mode}/{op}", func(w http.ResponseWriter, r *http.Request) {
		v, _ := f.runs.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n := v.(*atomic.Int64).Add(1)
		mode, op := chi.URLParam(r, "mode"), chi.URLParam(r, "op")
		conflict := mode == "conflict" || (mode == "conflict-once" && n == 1)
		err := f.post(r.Context(), op, conflict)
		if mode == "ignore" && err == nil {
			// A write that fails, and a handler that answers 201 anyway.
			_ = storage.Units(f.s).Update(r.Context(), func(context.Context, storage.Tx) error {
				return apperr.New(apperr.NotFound, "a failed write the handler ignores")
			})
		}
		switch {
		case err != nil && errors.Is(err, ledger.ErrConflict):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":{"code":"conflict","message":"retry","retry_after":null}}`)
		case err != nil:
			w.WriteHeader(http.StatusInternalServerError)
		case mode == "panic":
			panic("after the write")
		case mode == "500":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"run":%d}`, n)
		}
	})
}

// posted returns which of the operation keys are in the ledger.
func posted(t *testing.T, s storage.Store, keys ...string) []string {
	t.Helper()
	var out []string
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		found, err := tx.FindOperations(ctx, keys)
		for _, k := range keys {
			if _, ok := found[k]; ok {
				out = append(out, k)
			}
		}
		return err
	})
	require.NoError(t, err)
	return out
}

// idemRecord reads the stored record of an Idempotency-Key.
func idemRecord(t *testing.T, s storage.Store, scope, key string) (idempotency.Record, bool) {
	t.Helper()
	var r idempotency.Record
	var found bool
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) (err error) {
		r, found, err = tx.LockIdempotencyKey(ctx, scope, idempotency.StoredKey(key))
		return err
	})
	require.NoError(t, err)
	return r, found
}

// keyGivenUp reports that no claim holds the key: it is gone, or released
// (idempotency.ReleasedAt), for the retry to take over at once.
func keyGivenUp(t *testing.T, s storage.Store, scope, key string) bool {
	t.Helper()
	r, found := idemRecord(t, s, scope, key)
	return !found || (r.State == idempotency.InProgress && r.CreatedAt.Equal(idempotency.ReleasedAt))
}

func newUnitEnv(t *testing.T, s storage.Store, cfg assembly.Config) (*testServer, *unitFixture) {
	f := &unitFixture{s: s}
	cfg.ReadLimit, cfg.WriteLimit = 100000, 100000
	return newLimitsEnv(t, s, cfg, f.mount), f
}

// A handler that writes and then fails (a 5xx, a panic, a success over a
// write that failed) leaves nothing in the database and gives the key up:
// the retry runs afresh.
func TestIdempotencyUnitFailedRunLeavesNothing(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e, f := newUnitEnv(t, s, assembly.Config{})
		for _, mode := range []string{"500", "panic", "ignore"} {
			path := "/unit/" + mode + "/op-" + mode
			r := e.fixture("POST", path, "", `{}`, "key-"+mode)
			assert.Equal(t, 500, r.status, mode)
			assert.Empty(t, posted(t, s, "op-"+mode), "%s: a failed run's writes were committed", mode)
			assert.True(t, keyGivenUp(t, s, "ip:127.0.0.1", "key-"+mode), "%s: the key is still held", mode)
			runs := f.count(path)
			e.fixture("POST", path, "", `{}`, "key-"+mode)
			assert.Equal(t, runs+1, f.count(path), "%s: the retry did not run", mode)
		}
		// A success: the write and the answer commit together.
		r := e.fixture("POST", "/unit/201/op-ok", "", `{}`, "key-ok")
		require.Equal(t, 201, r.status, r.body)
		assert.Equal(t, []string{"op-ok"}, posted(t, s, "op-ok"))
		rec, found := idemRecord(t, s, "ip:127.0.0.1", "key-ok")
		assert.True(t, found && rec.State == idempotency.Done, "the answer is stored")
	})
}

// A conflict inside the unit rolls the whole run back and runs the request
// again, afresh: the effect happens once. A request that conflicts every
// time is answered 409 conflict after a bounded number of runs, not stored.
func TestIdempotencyUnitConflictRunsAgain(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e, f := newUnitEnv(t, s, assembly.Config{})
		r := e.fixture("POST", "/unit/conflict-once/op-1", "", `{}`, "k1")
		require.Equal(t, 201, r.status, r.body)
		assert.False(t, r.replayed())
		// Two runs at least; on PostgreSQL the first posting to the wallet
		// creates its accounts between runs, one run more.
		runs := f.count("/unit/conflict-once/op-1")
		assert.GreaterOrEqual(t, runs, int64(2))
		assert.JSONEq(t, fmt.Sprintf(`{"run":%d}`, runs), r.body, "the answer of the run that committed")
		assert.Equal(t, []string{"op-1"}, posted(t, s, "op-1"))
		again := e.fixture("POST", "/unit/conflict-once/op-1", "", `{}`, "k1")
		assert.True(t, again.replayed())
		assert.Equal(t, r.body, again.body)
		assert.Equal(t, runs, f.count("/unit/conflict-once/op-1"))

		r = e.fixture("POST", "/unit/conflict/op-2", "", `{}`, "k2")
		assert.Equal(t, 409, r.status)
		assert.Equal(t, apperr.Conflict, r.code(t))
		assert.Empty(t, posted(t, s, "op-2"))
		runs = f.count("/unit/conflict/op-2")
		assert.Greater(t, runs, int64(2), "the conflicting request ran again")
		e.fixture("POST", "/unit/conflict/op-2", "", `{}`, "k2")
		assert.Equal(t, 2*runs, f.count("/unit/conflict/op-2"), "a 409 conflict is not stored: the retry runs")
	})
}

// adjust sends an operator's adjustment of app under an Idempotency-Key.
func (e *testServer) adjust(app, body, idem string) (response, error) {
	return e.trySend(request{method: http.MethodPost, path: "/v1/admin/apps/" + app + "/adjustments", key: adminToken, body: body, idem: []string{idem}})
}

// adjustmentLines returns the adjustment lines of app's wallet.
func adjustmentLines(t *testing.T, s storage.Store, app string) []ledger.Line {
	t.Helper()
	lines, err := s.Lines(context.Background(), ledger.Wallet(app), ledger.LineQuery{})
	require.NoError(t, err)
	var out []ledger.Line
	for _, l := range lines {
		if l.Type == ledger.TypeAdjustment {
			out = append(out, l)
		}
	}
	return out
}

// Concurrent identical adjustments under one key post one line: one runs,
// the others get its replay or are told the key is in use.
func TestIdempotencyAdjustmentExactlyOnce(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e, _ := newUnitEnv(t, s, assembly.Config{})
		app, _ := e.newApp()
		const body = `{"amount_cents":700,"note":"goodwill"}`
		const n = 12
		results := make(chan response, n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				r, err := e.adjust(app, body, "adj-once")
				if err != nil {
					t.Error(err)
					return
				}
				results <- r
			})
		}
		wg.Wait()
		close(results)
		ran, bodies := 0, map[string]bool{}
		for r := range results {
			switch {
			case r.status == 201:
				if !r.replayed() {
					ran++
				}
				bodies[r.body] = true
			case r.status == 409:
				assert.Equal(t, apperr.IdempotencyKeyInUse, r.code(t))
			default:
				t.Errorf("unexpected %d: %s", r.status, r.body)
			}
		}
		assert.Equal(t, 1, ran, "adjustments that ran")
		assert.Len(t, bodies, 1)
		lines := adjustmentLines(t, s, app)
		require.Len(t, lines, 1, "one line")
		r, err := e.adjust(app, body, "adj-once")
		require.NoError(t, err)
		assert.True(t, r.replayed())
		var line xpromo.LedgerLine
		r.decode(t, &line)
		assert.Equal(t, lines[0].ID, line.ID)

		// An answer a refused write decided is stored like any other: the
		// debit beyond the balance is refused again on retry, by replay.
		for i := range 2 {
			r, err := e.adjust(app, `{"amount_cents":-701,"note":"too much"}`, "adj-refused")
			require.NoError(t, err)
			assert.Equal(t, 409, r.status)
			assert.Equal(t, apperr.InsufficientFunds, r.code(t))
			assert.Equal(t, i == 1, r.replayed())
		}
		assert.Len(t, adjustmentLines(t, s, app), 1)
	})
}

// failingStore makes the commit of the transaction that stores an
// idempotent answer fail (as a crash, or a database gone, between the
// request's effects and their answer would): that transaction rolls back.
type failingStore struct {
	storage.Store
	fail atomic.Bool
}

var errInjected = errors.New("injected commit failure")

// finishSpy notes that an answer was stored in its transaction.
type finishSpy struct {
	storage.Tx
	finished bool
}

func (f *finishSpy) FinishIdempotencyKey(ctx context.Context, r idempotency.Record) (bool, error) {
	f.finished = true
	return f.Tx.FinishIdempotencyKey(ctx, r)
}

func (s *failingStore) Update(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	return s.Store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		spy := &finishSpy{Tx: tx}
		if err := fn(ctx, spy); err != nil {
			return err
		}
		if spy.finished && s.fail.Load() {
			return errInjected
		}
		return nil
	})
}

// The effect and its stored answer commit in one transaction: when that
// commit fails, neither exists, the client gets an error (not the
// effect's 201), and the retry runs afresh, once.
func TestIdempotencyEffectAndAnswerCommitTogether(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		fs := &failingStore{Store: s}
		e, _ := newUnitEnv(t, fs, assembly.Config{})
		app, _ := e.newApp()
		const body = `{"amount_cents":500,"note":"make good"}`
		fs.fail.Store(true)
		r, err := e.adjust(app, body, "adj-commit")
		require.NoError(t, err)
		assert.Equal(t, 500, r.status, r.body)
		assert.Empty(t, adjustmentLines(t, s, app), "the line committed without its answer")
		assert.True(t, keyGivenUp(t, s, "admin", "adj-commit"), "the key is still held")

		fs.fail.Store(false)
		r, err = e.adjust(app, body, "adj-commit")
		require.NoError(t, err)
		require.Equal(t, 201, r.status, r.body)
		assert.False(t, r.replayed())
		rec, found := idemRecord(t, s, "admin", "adj-commit")
		assert.True(t, found && rec.State == idempotency.Done)
		r, err = e.adjust(app, body, "adj-commit")
		require.NoError(t, err)
		assert.True(t, r.replayed())
		assert.Len(t, adjustmentLines(t, s, app), 1)
	})
}

// A claim left in_progress by a server that died (its effects never
// committed: they commit only with the answer) is taken over at once by the
// retry, without waiting out the lease, when the store knows its holder is
// dead, or when the holder is this process and none of its requests runs it.
// Another live holder's claim still answers idempotency_key_in_use.
func TestIdempotencyDeadHolderTakenOver(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		instance, release, err := assembly.HoldInstance(ctx, s)
		require.NoError(t, err)
		t.Cleanup(func() { release() })
		require.NotEmpty(t, instance)
		e, _ := newUnitEnv(t, s, assembly.Config{Instance: instance})
		app, _ := e.newApp()
		path := "/v1/admin/apps/" + app + "/adjustments"
		const body = `{"amount_cents":900,"note":"after a crash"}`
		claimAs := func(holder, key string) {
			t.Helper()
			svc := &idempotency.Service{Update: storage.Updater[idempotency.Tx](s), Now: e.clock.Now, Holder: holder}
			c, _, err := svc.Begin(ctx, "admin", key, idempotency.Fingerprint(http.MethodPost, path, []byte(body)))
			require.NoError(t, err)
			require.NotNil(t, c)
		}

		// The crashed run: its claim, and nothing else.
		claimAs("inst_dead", "adj-crashed")
		r, err := e.adjust(app, body, "adj-crashed")
		require.NoError(t, err)
		require.Equal(t, 201, r.status, "the claim of a dead holder was not taken over: %s", r.body)
		assert.False(t, r.replayed())
		require.Len(t, adjustmentLines(t, s, app), 1)
		rec, _ := idemRecord(t, s, "admin", "adj-crashed")
		assert.Equal(t, instance, rec.Holder)

		// This instance's own claim that none of its requests runs (its
		// run failed while the database was away, and could not release
		// it) is abandoned too.
		claimAs(instance, "adj-own")
		r, err = e.adjust(app, body, "adj-own")
		require.NoError(t, err)
		assert.Equal(t, 201, r.status, "this instance's abandoned claim was not taken over: %s", r.body)
		require.Len(t, adjustmentLines(t, s, app), 2)

		// A live holder's claim (another instance, on PostgreSQL) is in use.
		var live []string
		if other, releaseOther, err := assembly.HoldInstance(ctx, s); err == nil {
			t.Cleanup(func() { releaseOther() })
			live = append(live, other)
		}
		for i, holder := range live {
			key := fmt.Sprintf("adj-live-%d", i)
			claimAs(holder, key)
			r, err := e.adjust(app, body, key)
			require.NoError(t, err)
			assert.Equal(t, 409, r.status, "holder %s: %s", holder, r.body)
			assert.Equal(t, apperr.IdempotencyKeyInUse, r.code(t))
		}
		assert.Len(t, adjustmentLines(t, s, app), 2)
		if len(live) == 0 {
			return // SQLite: one server process, no other live holder
		}
		// The lease still applies to every claim.
		e.clock.Advance(idempotency.DefaultLease)
		r, err = e.adjust(app, body, "adj-live-0")
		require.NoError(t, err)
		assert.Equal(t, 201, r.status, r.body)
	})
}
