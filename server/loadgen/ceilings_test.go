package loadgen_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/loadgen"
)

func TestParsePgbenchTPS(t *testing.T) {
	out := "number of failed transactions: 0 (0.000%)\nlatency average = 7.132 ms\ninitial connection time = 102.556 ms\ntps = 1121.717387 (without initial connection time)\n"
	tps, err := loadgen.ParsePgbenchTPS(out)
	require.NoError(t, err)
	assert.InDelta(t, 1121.717387, tps, 1e-6)
	_, err = loadgen.ParsePgbenchTPS("pgbench: error: connection refused")
	assert.Error(t, err)
}

func TestAnnotate(t *testing.T) {
	in := strings.Join([]string{
		"goos: linux",
		"BenchmarkLedger/Post/parallel-2   \t   20000\t    100000 ns/op\t      3290 ops/s\t    5000 B/op",
		"BenchmarkLedger/PostBatch/100-2   \t     100\t  10000000 ns/op\t     10000 ops/s",
		"BenchmarkSweep/postgres-2   \t   10000\t  10000 ns/op\t      4000 settlements/s",
		"BenchmarkFill-2   \t   10000\t  10000 ns/op\t      25000 fills/s",
		"ok  \tgithub.com/xpromo/xpromo/server/postgres\t12.3s",
	}, "\n") + "\n"
	var out strings.Builder
	c := &loadgen.Ceilings{PGInsertTPS: 18000, PGBatchRowsPerSec: 500000, HTTPHelloRPS: 100000}
	require.NoError(t, loadgen.Annotate(strings.NewReader(in), &out, c))
	got := out.String()
	assert.Contains(t, got, "3290 ops/s = 0.183× pg_insert_tps (18000/s, same run)")
	assert.Contains(t, got, "10000 ops/s = 0.020× pg_batch100_rows_per_s")
	assert.Contains(t, got, "4000 settlements/s = 0.008× pg_batch100_rows_per_s")
	assert.NotContains(t, got, "fills/s =", "an in-memory figure has no ceiling")
	assert.True(t, strings.HasPrefix(got, in[:strings.Index(in, "\n")+1]), "the input is copied")
}

// The lean generator against a real local server: every answer counted,
// a refused one as an error with its status.
func TestBlast(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Test") != "yes" || string(b) != `{"a":1}` || r.URL.Path != "/v1/x" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Write([]byte(`{"filled":true}`))
	}))
	defer srv.Close()
	good := loadgen.LeanRequest{Method: http.MethodPost, Path: "/v1/x", Header: http.Header{"X-Test": {"yes"}}, Body: []byte(`{"a":1}`)}
	bad := loadgen.LeanRequest{Method: http.MethodPost, Path: "/v1/x", Body: []byte(`{}`)}
	st, err := loadgen.Blast(context.Background(), "x", loadgen.BlastConfig{
		URL: srv.URL, Requests: []loadgen.LeanRequest{good, bad}, Concurrency: 1, Duration: 300 * time.Millisecond,
	})
	require.NoError(t, err)
	require.Greater(t, st.Requests, int64(1))
	// One worker sends them in turn: half fail.
	assert.InDelta(t, st.Requests/2, st.Errors, 1)
	assert.Equal(t, st.Errors, st.ErrorsByCode["http_400"], "%v", st.ErrorsByCode)

	st, err = loadgen.Blast(context.Background(), "x", loadgen.BlastConfig{
		URL: srv.URL, Requests: []loadgen.LeanRequest{good}, Concurrency: 4, Duration: 300 * time.Millisecond,
		OK: func(status int, body []byte) bool {
			return status == 200 && strings.Contains(string(body), `"filled":true`)
		},
	})
	require.NoError(t, err)
	assert.Zero(t, st.Errors)
}
