package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// What the fills' server says of the same fills: the open-loop scenarios
// read its /metrics before and after the run, so that a fill's latency as
// the generator saw it (from when it was due) can be set beside the time
// the server spent on it and the time its goroutines stood runnable
// waiting for a core. What neither shows is the machine's: the kernel's
// run queue, the loopback, the generator's own scheduling.

// ServerHistogram is one histogram of the server's /metrics over the run:
// its cumulative counts at each upper bound (seconds), after minus before.
type ServerHistogram struct {
	Name   string    `json:"name"`
	Bounds []float64 `json:"bounds_seconds"`
	Counts []float64 `json:"cumulative_counts"`
}

// serverSeries are the histograms read: the fills' time in the server's
// handler chain, and the Go scheduler's runnable-to-running latency of
// every goroutine of the process.
var serverSeries = []struct{ name, metric, match string }{
	{"server time of POST /v1/sdk/fill", "xpromo_http_request_duration_seconds", `method="POST",route="/v1/sdk/fill"`},
	{"goroutines runnable before running", "go_sched_latencies_seconds", ""},
}

// maxMetricsBytes bounds what is read of a /metrics answer.
const maxMetricsBytes = 8 << 20

// scrapeServer reads the histograms of serverSeries from base's /metrics.
func scrapeServer(ctx context.Context, c *http.Client, base string) ([]ServerHistogram, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the fills' server's /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the fills' server's /metrics: status %d", resp.StatusCode)
	}
	return parseHistograms(io.LimitReader(resp.Body, maxMetricsBytes))
}

// parseHistograms picks serverSeries' buckets out of the Prometheus text
// exposition r: lines `<metric>_bucket{<labels>,le="<bound>"} <count>`.
// A line match, not prometheus/common's expfmt parser (a dependency of
// client_golang): that one builds every family of the page into protobuf
// values to keep two series, and reads a family without its # TYPE line
// as untyped samples, where this needs only the bucket lines.
func parseHistograms(r io.Reader) ([]ServerHistogram, error) {
	out := make([]ServerHistogram, len(serverSeries))
	for i, s := range serverSeries {
		out[i].Name = s.name
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		for i, s := range serverSeries {
			labels, value, ok := bucketLine(line, s.metric)
			if !ok || !strings.Contains(labels, s.match) {
				continue
			}
			le, ok := labelValue(labels, "le")
			if !ok {
				continue
			}
			bound, err1 := strconv.ParseFloat(le, 64)
			count, err2 := strconv.ParseFloat(value, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("loadgen: /metrics line %q: not a bucket", line)
			}
			out[i].Bounds = append(out[i].Bounds, bound)
			out[i].Counts = append(out[i].Counts, count)
		}
	}
	return out, sc.Err()
}

// bucketLine splits a line of metric's buckets into its labels and value.
func bucketLine(line, metric string) (labels, value string, ok bool) {
	rest, ok := strings.CutPrefix(line, metric+"_bucket{")
	if !ok {
		return "", "", false
	}
	labels, value, ok = strings.Cut(rest, "} ")
	return labels, strings.TrimSpace(value), ok
}

// labelValue is the value of label name in a label list (the values read
// here hold no comma or quote).
func labelValue(labels, name string) (string, bool) {
	for _, kv := range strings.Split(labels, ",") {
		if v, ok := strings.CutPrefix(kv, name+`="`); ok {
			return strings.TrimSuffix(v, `"`), true
		}
	}
	return "", false
}

// serverDelta is after − before, histogram by histogram (a histogram the
// server did not have before, such as the fills' one of a fresh
// instance, counts from zero).
func serverDelta(before, after []ServerHistogram) []ServerHistogram {
	out := make([]ServerHistogram, 0, len(after))
	for _, a := range after {
		d := ServerHistogram{Name: a.Name, Bounds: a.Bounds, Counts: append([]float64(nil), a.Counts...)}
		for _, b := range before {
			if b.Name == a.Name && len(b.Counts) == len(a.Counts) {
				for i := range d.Counts {
					d.Counts[i] -= b.Counts[i]
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// Total is the number of observations.
func (h ServerHistogram) Total() float64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1] // the +Inf bucket
}

// ShareWithin is the share of observations at most seconds, by the largest
// bound not above it; NaN when there is none (or nothing was observed).
func (h ServerHistogram) ShareWithin(seconds float64) float64 {
	n := h.Total()
	i := sort.SearchFloat64s(h.Bounds, math.Nextafter(seconds, math.Inf(1))) - 1
	if n == 0 || i < 0 {
		return math.NaN()
	}
	return h.Counts[i] / n
}

// Quantile is the upper bound of the bucket holding quantile q (so "p99 ≤
// Quantile(0.99)").
func (h ServerHistogram) Quantile(q float64) float64 {
	n := h.Total()
	for i, c := range h.Counts {
		if c >= q*n {
			return h.Bounds[i]
		}
	}
	return math.Inf(1)
}
