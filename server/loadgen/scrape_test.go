package loadgen

import (
	"math"
	"strings"
	"testing"
)

const exposition = `# HELP xpromo_http_request_duration_seconds Time to serve HTTP requests.
# TYPE xpromo_http_request_duration_seconds histogram
xpromo_http_request_duration_seconds_bucket{method="GET",route="/healthz",le="0.005"} 9
xpromo_http_request_duration_seconds_bucket{method="POST",route="/v1/sdk/fill",le="0.005"} 90
xpromo_http_request_duration_seconds_bucket{method="POST",route="/v1/sdk/fill",le="0.01"} 99
xpromo_http_request_duration_seconds_bucket{method="POST",route="/v1/sdk/fill",le="+Inf"} 100
xpromo_http_request_duration_seconds_sum{method="POST",route="/v1/sdk/fill"} 0.4
go_sched_latencies_seconds_bucket{le="6.4e-08"} 500
go_sched_latencies_seconds_bucket{le="0.0010485760000000001"} 900
go_sched_latencies_seconds_bucket{le="+Inf"} 1000
`

func TestParseHistogramsAndDelta(t *testing.T) {
	after, err := parseHistograms(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	fill, sched := after[0], after[1]
	if fill.Total() != 100 || len(fill.Bounds) != 3 {
		t.Fatalf("fill histogram: %+v (the GET /healthz bucket must not count)", fill)
	}
	if got := fill.ShareWithin(0.01); got != 0.99 {
		t.Errorf("share of fills within 10 ms = %v, want 0.99", got)
	}
	if got := fill.Quantile(0.99); got != 0.01 {
		t.Errorf("p99 bound = %v, want 0.01", got)
	}
	if got := fill.Quantile(0.999); !math.IsInf(got, 1) {
		t.Errorf("p99.9 bound = %v, want +Inf", got)
	}
	if got := sched.ShareWithin(0.001); got != 0.5 {
		t.Errorf("share of goroutines within 1 ms = %v, want 0.5 (1.048 ms is above 1 ms)", got)
	}

	before, _ := parseHistograms(strings.NewReader(strings.ReplaceAll(exposition, "} 9", "} 1")))
	before[0].Counts = []float64{40, 40, 40}
	d := serverDelta(before, after)
	if d[0].Total() != 60 || d[0].ShareWithin(0.005) != 50.0/60 {
		t.Errorf("delta: %+v", d[0])
	}
}

func FuzzParseHistograms(f *testing.F) {
	f.Add(exposition)
	f.Add(`go_sched_latencies_seconds_bucket{le="x"} 1`)
	f.Fuzz(func(t *testing.T, s string) {
		hs, err := parseHistograms(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, h := range hs {
			if len(h.Bounds) != len(h.Counts) {
				t.Fatalf("%d bounds, %d counts", len(h.Bounds), len(h.Counts))
			}
			_ = h.Quantile(0.99)
			_ = h.ShareWithin(0.01)
		}
	})
}
