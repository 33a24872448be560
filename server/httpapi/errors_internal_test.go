package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// A request that ran out of its deadline answers 503 unavailable with
// retry_after and Retry-After, as does any unavailable error naming no
// retry time (a database failover).
func TestUnavailableAnswersRetryAfter(t *testing.T) {
	s := New(Config{Store: nopStore{}})
	s.Router().Get("/v1/deadline", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Nanosecond)
		defer cancel()
		<-ctx.Done()
		s.writeErr(w, r.WithContext(ctx), fmt.Errorf("postgres: reading: %w", ctx.Err()))
	})
	s.Router().Get("/v1/down", func(w http.ResponseWriter, r *http.Request) {
		s.writeErr(w, r, apperr.New(apperr.Unavailable, "the database is unavailable; retry after retry_after"))
	})
	for _, path := range []string{"/v1/deadline", "/v1/down"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code, path)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"), path)
		assert.Contains(t, rec.Body.String(), `"code":"unavailable"`, path)
		assert.NotContains(t, rec.Body.String(), `"retry_after":null`, path)
	}
}

// A keyed request whose run conflicts (as the PostgreSQL store's "accounts
// to create before locking" does) runs again: its client gets the second
// run's answer, and the first run's failure is logged at DEBUG and counted,
// never as an ERROR. A failure that reaches the client is still an ERROR.
func TestRetriedRunIsNotAnError(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, st storage.Store) {
		store := storage.Units(st)
		log := &SyncBuffer{}
		s := New(Config{Store: nopStore{}, Logger: slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		s.services.Idempotency = &idempotency.Service{Update: storage.Updater[idempotency.Tx](store), Now: time.Now}
		var runs atomic.Int64
		s.router.With(s.idempotent).Post("/v1/flaky/{fail}", func(w http.ResponseWriter, r *http.Request) {
			n := runs.Add(1)
			err := store.Update(r.Context(), func(ctx context.Context, tx storage.Tx) error {
				if n == 1 {
					return fmt.Errorf("%w: a lost race", ledger.ErrConflict)
				}
				return nil
			})
			if err == nil && strings.HasSuffix(r.URL.Path, "/yes") {
				err = errors.New("a real failure")
			}
			if err != nil {
				s.writeErr(w, r, err)
				return
			}
			w.WriteHeader(http.StatusCreated)
		})
		post := func(path, key string) int {
			req := httptest.NewRequest("POST", path, strings.NewReader(`{}`))
			req.Header.Set("Idempotency-Key", key)
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			return rec.Code
		}
		require.Equal(t, http.StatusCreated, post("/v1/flaky/no", "k1"))
		assert.EqualValues(t, 2, runs.Load())
		out := log.String()
		assert.NotContains(t, out, `"level":"ERROR"`)
		assert.Contains(t, out, `"level":"DEBUG","msg":"request run again"`)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		assert.Contains(t, rec.Body.String(), `xpromo_http_request_retries_total{reason="conflict"} 1`)

		runs.Store(0)
		require.Equal(t, http.StatusInternalServerError, post("/v1/flaky/yes", "k2"))
		assert.Equal(t, 1, strings.Count(log.String(), `"msg":"internal error"`), "logged once, when sent")
	})
}

// A failure written into a keyed run's recorder is logged when the answer
// is sent, not before.
func TestRecorderDefersFailureLogs(t *testing.T) {
	log := &SyncBuffer{}
	s := New(Config{Store: nopStore{}, Logger: slog.New(slog.NewJSONHandler(log, nil))})
	rec := &recorder{header: http.Header{}, deferLogs: true}
	s.writeErr(rec, httptest.NewRequest("POST", "/v1/x", nil), errors.New("boom"))
	assert.Empty(t, log.String())
	send(httptest.NewRecorder(), rec)
	assert.Contains(t, log.String(), `"level":"ERROR","msg":"internal error"`)
}
