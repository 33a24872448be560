package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

func TestPercentileNearestRank(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond // 1..100 ms
	}
	for _, tc := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 50, 7 * time.Millisecond},
		{ms(7), 100, 7 * time.Millisecond},
		{ms(1, 2), 50, 1 * time.Millisecond},
		{ms(1, 2), 51, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 75, 3 * time.Millisecond},
		{ms(1, 2, 3, 4), 99, 4 * time.Millisecond},
		{hundred, 50, 50 * time.Millisecond},
		{hundred, 90, 90 * time.Millisecond},
		{hundred, 99, 99 * time.Millisecond},
		{hundred, 99.5, 100 * time.Millisecond},
		{hundred, 100, 100 * time.Millisecond},
		{hundred, 0.1, 1 * time.Millisecond},
	} {
		assert.Equal(t, tc.want, Percentile(tc.sorted, tc.p), "p%v of %d samples", tc.p, len(tc.sorted))
	}
}

// Percentiles never fall outside the samples and never decrease with p.
func TestPercentileProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + r.IntN(500)
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(r.IntN(1_000_000))
		}
		sorted := append([]time.Duration(nil), s...)
		slices.Sort(sorted)
		prev := time.Duration(-1)
		for p := 1.0; p <= 100; p++ {
			v := Percentile(sorted, p)
			require.GreaterOrEqual(t, v, prev)
			require.GreaterOrEqual(t, v, sorted[0])
			require.LessOrEqual(t, v, sorted[n-1])
			// At least p% of the samples are at or below it.
			below := 0
			for _, x := range s {
				if x <= v {
					below++
				}
			}
			require.GreaterOrEqual(t, float64(below), p/100*float64(n)-1e-9)
			prev = v
		}
		assert.Equal(t, sorted[n-1], Percentile(sorted, 100))
	}
}

func TestRecorderStats(t *testing.T) {
	rec := NewRecorder()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				var err error
				if w == 0 && i < 3 {
					err = &xpromo.Error{Status: 403, Code: "fraud_token_reused"}
				}
				rec.Record(OpInstall, time.Duration(w*25+i+1)*time.Millisecond, err)
			}
		})
	}
	wg.Wait()
	rec.Record(OpFill, time.Millisecond, &noFillError{reason: "no_eligible_campaign"})
	rec.Record(OpFill, time.Millisecond, &xpromo.Error{Status: 502})
	rec.Record(OpFill, time.Millisecond, fmt.Errorf("dial: %w", errors.New("connection refused")))

	stats := rec.Stats(2 * time.Second)
	require.Len(t, stats, 2)
	fill, inst := stats[0], stats[1]
	assert.Equal(t, OpFill, fill.Op)
	assert.Equal(t, map[string]int64{"no_fill_no_eligible_campaign": 1, "http_502": 1, "transport": 1}, fill.ErrorsByCode)
	assert.Equal(t, OpInstall, inst.Op)
	assert.Equal(t, "POST /v1/sdk/install", inst.Endpoint)
	assert.Equal(t, int64(100), inst.Requests)
	assert.Equal(t, int64(3), inst.Errors)
	assert.Equal(t, map[string]int64{"fraud_token_reused": 3}, inst.ErrorsByCode)
	assert.InDelta(t, 50.0, inst.Throughput, 1e-9)
	assert.Equal(t, 50.0, inst.P50ms)
	assert.Equal(t, 90.0, inst.P90ms)
	assert.Equal(t, 99.0, inst.P99ms)
	assert.Equal(t, 100.0, inst.MaxMs)
}

func TestErrorCodeOfACanceledRequest(t *testing.T) {
	assert.Equal(t, "canceled", ErrorCode(fmt.Errorf("post: %w", context.DeadlineExceeded)))
}

func TestPacerSpacesRequests(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pace := newPacer(ctx, 1000)
	for range 5 {
		require.True(t, pace(ctx))
	}
	cancel()
	assert.False(t, pace(ctx), "a done context stops the workers")
	assert.False(t, newPacer(ctx, 0)(ctx))
}
