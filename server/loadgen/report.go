package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the reports as a table: one row per operation of each
// scenario, its errors by code below it.
func WriteTable(w io.Writer, reports []*Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tendpoint\tconc\trequests\terrors\treq/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	for _, r := range reports {
		for _, o := range r.Ops {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t\n",
				r.Scenario, o.Endpoint, r.Concurrency, o.Requests, o.Errors, o.Throughput, o.P50ms, o.P90ms, o.P99ms, o.MaxMs)
		}
		if len(r.Ops) == 0 {
			fmt.Fprintf(tw, "%s\t(no request)\t%d\t0\t0\t\t\t\t\t\t\n", r.Scenario, r.Concurrency)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range reports {
		for _, h := range r.Server {
			if h.Total() == 0 {
				continue
			}
			fmt.Fprintf(w, "%s, at the fills' server: %s: %.0f, p50 <= %s, p90 <= %s, p99 <= %s; %s <= 1 ms, %s <= 10 ms\n",
				r.Scenario, h.Name, h.Total(), bound(h.Quantile(0.5)), bound(h.Quantile(0.9)), bound(h.Quantile(0.99)),
				percent(h.ShareWithin(0.001)), percent(h.ShareWithin(0.01)))
		}
	}
	for _, r := range reports {
		for _, o := range r.Ops {
			if o.Errors == 0 {
				continue
			}
			codes := make([]string, 0, len(o.ErrorsByCode))
			for c, n := range o.ErrorsByCode {
				codes = append(codes, fmt.Sprintf("%s %d", c, n))
			}
			sort.Strings(codes)
			fmt.Fprintf(w, "%s %s errors: %s\n", r.Scenario, o.Endpoint, strings.Join(codes, ", "))
		}
	}
	return nil
}

// WriteJSON writes the reports as one indented JSON array.
func WriteJSON(w io.Writer, reports []*Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(reports)
}

// opCeiling is the ceiling each measured operation is set beside: reads
// and fills against Go's hello-world HTTP rate, install claims (a write
// transaction each) against raw single-row INSERT transactions.
var opCeiling = map[string]string{OpFill: CeilingHTTP, OpLedger: CeilingHTTP, OpInstall: CeilingInsert}

// WriteRatios writes each operation's throughput as a ratio to its
// ceiling measured in the same run, and the ceilings.
func WriteRatios(w io.Writer, reports []*Report, c *Ceilings) error {
	fmt.Fprintf(w, "ceilings of this run (%s, load average %.2f %.2f %.2f on %d cores): pg_insert_tps %.0f, pg_batch100_rows_per_s %.0f, http_hello_rps %.0f (p99 %.2f ms)\n",
		c.At.Format("2006-01-02 15:04:05Z"), c.LoadAverage[0], c.LoadAverage[1], c.LoadAverage[2], c.CPUs, c.PGInsertTPS, c.PGBatchRowsPerSec, c.HTTPHelloRPS, c.HTTPHelloP99Ms)
	for _, r := range reports {
		for _, o := range r.Ops {
			name := opCeiling[o.Op]
			if c.Of(name) <= 0 {
				continue
			}
			if _, err := fmt.Fprintf(w, "%s %s: %.1f req/s = %.3f× %s\n", r.Scenario, o.Endpoint, o.Throughput, o.Throughput/c.Of(name), name); err != nil {
				return err
			}
		}
	}
	return nil
}

// bound writes a histogram's bucket bound, in seconds, as milliseconds.
func bound(seconds float64) string {
	if math.IsInf(seconds, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(seconds*1000, 'g', 3, 64) + " ms"
}

// percent writes a share as a percentage ("-" when the histogram cannot
// tell).
func percent(share float64) string {
	if math.IsNaN(share) {
		return "-"
	}
	return strconv.FormatFloat(100*share, 'f', 2, 64) + "%"
}
