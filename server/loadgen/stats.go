package loadgen

import (
	"context"
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Recorder collects the outcome of every measured request, per operation.
// It keeps every latency (a sorted slice at the end gives exact
// percentiles): a load run of minutes makes at most a few million samples,
// 8 bytes each. Safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	ops map[string]*opSamples
}

type opSamples struct {
	latencies []time.Duration // of every request, failed ones included
	errors    map[string]int64
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{ops: map[string]*opSamples{}} }

// Record adds one request of operation op that took d and failed with err
// (nil: it succeeded).
func (r *Recorder) Record(op string, d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.ops[op]
	if s == nil {
		s = &opSamples{errors: map[string]int64{}}
		r.ops[op] = s
	}
	s.latencies = append(s.latencies, d)
	if err != nil {
		s.errors[ErrorCode(err)]++
	}
}

// ErrorCode names a failed request for the error counts: the API's stable
// error code, else "http_<status>", else "transport" (no answer) or
// "canceled".
func ErrorCode(err error) string {
	var e *xpromo.Error
	var nf *noFillError
	var st *statusError
	switch {
	case errors.As(err, &st):
		return "http_" + strconv.Itoa(st.status)
	case errors.As(err, &nf):
		return "no_fill_" + nf.reason
	case errors.As(err, &e) && e.Code != "":
		return e.Code
	case errors.As(err, &e):
		return "http_" + strconv.Itoa(e.Status)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	default:
		return "transport"
	}
}

// OpStats are the figures of one operation over a run.
type OpStats struct {
	Op       string `json:"op"`
	Endpoint string `json:"endpoint"`
	Requests int64  `json:"requests"`
	Errors   int64  `json:"errors"`
	// ErrorsByCode counts the failed requests by error code (ErrorCode).
	ErrorsByCode map[string]int64 `json:"errors_by_code"`
	// Throughput is Requests per second of measured time.
	Throughput float64 `json:"requests_per_second"`
	// Latencies in milliseconds, nearest-rank percentiles of every request.
	P50ms float64 `json:"p50_ms"`
	P90ms float64 `json:"p90_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// Stats returns the figures of each operation recorded, by name, with
// throughput over measured, the time the measured requests ran.
func (r *Recorder) Stats(measured time.Duration) []OpStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.ops))
	for name := range r.ops {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]OpStats, 0, len(names))
	for _, name := range names {
		s := r.ops[name]
		lat := slices.Clone(s.latencies)
		slices.Sort(lat)
		st := OpStats{Op: name, Endpoint: Endpoints[name], Requests: int64(len(lat)), ErrorsByCode: map[string]int64{}}
		for code, n := range s.errors {
			st.ErrorsByCode[code] = n
			st.Errors += n
		}
		if measured > 0 {
			st.Throughput = float64(st.Requests) / measured.Seconds()
		}
		st.P50ms = ms(Percentile(lat, 50))
		st.P90ms = ms(Percentile(lat, 90))
		st.P99ms = ms(Percentile(lat, 99))
		st.MaxMs = ms(Percentile(lat, 100))
		out = append(out, st)
	}
	return out
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest sample with at least p% of the samples
// at or below it. It is 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
