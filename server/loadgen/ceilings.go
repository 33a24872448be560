package loadgen

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Ceilings are this machine's own limits, measured in the same run as the
// figures they are set beside (BENCHMARKS.md): on a shared, loaded machine
// an absolute figure says little, its ratio to what the machine can do at
// that moment says how close to its limit a path is.
type Ceilings struct {
	At time.Time `json:"at"`
	// PGInsertTPS: raw single-row INSERT transactions a second, pgbench
	// with 8 clients, one INSERT per transaction (one commit, one WAL flush).
	PGInsertTPS float64 `json:"pg_insert_tps"`
	// PGBatchRowsPerSec: rows a second of 100-row INSERT statements, one
	// per transaction, pgbench with 2 clients (one per core).
	PGBatchRowsPerSec float64 `json:"pg_batch100_rows_per_s"`
	// HTTPHelloRPS: Go net/http answering "hello" from another process,
	// driven by the lean generator (Blast) over 64 keep-alive connections.
	HTTPHelloRPS   float64 `json:"http_hello_rps"`
	HTTPHelloP99Ms float64 `json:"http_hello_p99_ms"`
	// LoadAverage: /proc/loadavg's 1, 5 and 15 minute figures, read at the
	// end, and the cores the machine has.
	LoadAverage [3]float64 `json:"load_average"`
	CPUs        int        `json:"cpus"`
}

// CeilingConfig is a measurement.
type CeilingConfig struct {
	// DatabaseURL is a PostgreSQL server on which a scratch database is
	// created (and dropped); "" skips the PostgreSQL ceilings, and so does
	// a server that cannot be reached or a missing pgbench (with a warning).
	DatabaseURL string
	// Duration of each of the three measurements.
	Duration time.Duration
	// HelloServer starts the hello-world server in another process and
	// returns its address and a stop function (see ServeHello).
	HelloServer func() (addr string, stop func(), err error)
	// Log receives progress lines.
	Log io.Writer
}

// MeasureCeilings measures the ceilings one after the other.
func MeasureCeilings(ctx context.Context, cfg CeilingConfig) (*Ceilings, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	c := &Ceilings{CPUs: runtime.NumCPU()}
	if cfg.DatabaseURL != "" {
		fmt.Fprintf(cfg.Log, "ceilings: pgbench, single-row INSERT transactions and 100-row batches, %s each...\n", cfg.Duration)
		// Without them the HTTP figures still get theirs: warn, go on.
		if err := pgCeilings(ctx, cfg, c); err != nil {
			fmt.Fprintf(cfg.Log, "ceilings: no PostgreSQL ceilings (figures beside them get no ratio): %v\n", err)
			c.PGInsertTPS, c.PGBatchRowsPerSec = 0, 0
		}
	}
	if cfg.HelloServer != nil {
		fmt.Fprintf(cfg.Log, "ceilings: Go net/http hello world, 64 connections, %s...\n", cfg.Duration)
		addr, stop, err := cfg.HelloServer()
		if err != nil {
			return nil, fmt.Errorf("starting the hello-world server: %w", err)
		}
		st, err := Blast(ctx, "hello", BlastConfig{
			URL: "http://" + addr, Concurrency: 64, Duration: cfg.Duration,
			Requests: []LeanRequest{{Method: http.MethodGet, Path: "/"}},
		})
		stop()
		if err != nil {
			return nil, err
		}
		if st.Errors > 0 {
			return nil, fmt.Errorf("the hello-world server failed %d of %d requests", st.Errors, st.Requests)
		}
		c.HTTPHelloRPS, c.HTTPHelloP99Ms = st.Throughput, st.P99ms
	}
	c.LoadAverage = loadAverage()
	c.At = time.Now().UTC().Truncate(time.Second)
	return c, nil
}

// ServeHello answers every request with "hello" on addr until the process
// ends, printing the address it listens on as its first line to out: the
// hello-world server of the HTTP ceiling, run as a process of its own.
func ServeHello(addr string, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, ln.Addr().String())
	hello := []byte("hello")
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(hello) }))
}

// StartHello runs `exe args...` (a command calling ServeHello) and reads
// the address it prints.
func StartHello(exe string, args ...string) (string, func(), error) {
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("reading the hello server's address: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

const (
	pgSingleScript = "\\set v random(1, 1000000000)\nINSERT INTO ceiling_rows (v, note) VALUES (:v, 'ceiling');\n"
	pgBatchScript  = "INSERT INTO ceiling_rows (v, note) SELECT g, 'ceiling' FROM generate_series(1, 100) g;\n"
	pgBatchRows    = 100
)

func pgCeilings(ctx context.Context, cfg CeilingConfig, c *Ceilings) error {
	if _, err := exec.LookPath("pgbench"); err != nil {
		return errors.New("pgbench is not installed (Debian: postgresql-client; scripts/test-deps.sh installs it)")
	}
	admin, err := pgx.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", redact(cfg.DatabaseURL), err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	b := make([]byte, 4)
	rand.Read(b)
	name := "xpromo_ceilings_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("creating the scratch database: %w", err)
	}
	defer admin.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	u, err := replaceDatabase(cfg.DatabaseURL, name)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "CREATE TABLE ceiling_rows (id bigserial PRIMARY KEY, v bigint NOT NULL, note text NOT NULL)")
	conn.Close(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "xpromo-ceilings")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	run := func(script string, clients int) (float64, error) {
		f := filepath.Join(dir, "script.sql")
		if err := os.WriteFile(f, []byte(script), 0o600); err != nil {
			return 0, err
		}
		secs := strconv.Itoa(max(1, int(cfg.Duration.Round(time.Second)/time.Second)))
		out, err := exec.CommandContext(ctx, "pgbench", "-n", "-c", strconv.Itoa(clients), "-j", "2", "-T", secs, "-f", f, u).CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("pgbench: %v: %s", err, out)
		}
		return ParsePgbenchTPS(string(out))
	}
	if c.PGInsertTPS, err = run(pgSingleScript, 8); err != nil {
		return err
	}
	tps, err := run(pgBatchScript, 2)
	c.PGBatchRowsPerSec = tps * pgBatchRows
	return err
}

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)

// ParsePgbenchTPS reads pgbench's "tps = N (without initial connection
// time)" line.
func ParsePgbenchTPS(out string) (float64, error) {
	m := tpsLine.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench printed no tps line: %s", out)
	}
	return strconv.ParseFloat(m[1], 64)
}

// replaceDatabase is a postgres:// URL with its database replaced.
func replaceDatabase(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("not a postgres:// URL: %s", redact(raw))
	}
	u.Path = "/" + name
	return u.String(), nil
}

func redact(u string) string {
	if i := strings.Index(u, "@"); i >= 0 {
		if j := strings.Index(u, "://"); j >= 0 && j < i {
			return u[:j+3] + "…" + u[i:]
		}
	}
	return u
}

func loadAverage() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := range min(3, len(f)) {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

// WriteCeilings prints c one figure a line, "name value", for scripts.
func WriteCeilings(w io.Writer, c *Ceilings) error {
	_, err := fmt.Fprintf(w, "ceiling pg_insert_tps %.0f\nceiling pg_batch100_rows_per_s %.0f\nceiling http_hello_rps %.0f\nceiling http_hello_p99_ms %.2f\nceiling load_average %.2f %.2f %.2f\nceiling cpus %d\n",
		c.PGInsertTPS, c.PGBatchRowsPerSec, c.HTTPHelloRPS, c.HTTPHelloP99Ms, c.LoadAverage[0], c.LoadAverage[1], c.LoadAverage[2], c.CPUs)
	return err
}

// ReadCeilings reads what MeasureCeilings wrote as JSON.
func ReadCeilings(path string) (*Ceilings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Ceilings
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// The ceiling each kind of figure is set beside.
const (
	CeilingInsert = "pg_insert_tps"
	CeilingBatch  = "pg_batch100_rows_per_s"
	CeilingHTTP   = "http_hello_rps"
)

// Of returns the ceiling named name (one of the Ceiling constants).
func (c *Ceilings) Of(name string) float64 {
	switch name {
	case CeilingInsert:
		return c.PGInsertTPS
	case CeilingBatch:
		return c.PGBatchRowsPerSec
	case CeilingHTTP:
		return c.HTTPHelloRPS
	}
	return 0
}

// benchCeiling is the ceiling of a benchmark's throughput metric: work a
// transaction at a time against single-row INSERT transactions, work in
// batches against batched rows; in-memory figures have none.
func benchCeiling(name, unit string) string {
	switch {
	case strings.Contains(name, "PostBatch") || unit == "settlements/s":
		return CeilingBatch
	case strings.HasPrefix(name, "BenchmarkLedger/Post") || unit == "claims/s":
		return CeilingInsert
	case unit == "deliveries/s" || unit == "requests/s":
		return CeilingHTTP
	}
	return ""
}

var benchMetric = regexp.MustCompile(`([0-9.]+(?:e[+-]?[0-9]+)?) ([a-z]+/s)\b`)

// Annotate copies `go test -bench` output from r to w, and after each
// benchmark line whose throughput has a ceiling prints the ratio to it:
// "  ↳ 3290 ops/s = 0.18× pg_insert_tps (18035/s, same run)".
func Annotate(r io.Reader, w io.Writer, c *Ceilings) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		name := strings.Fields(line)[0]
		for _, m := range benchMetric.FindAllStringSubmatch(line, -1) {
			v, err := strconv.ParseFloat(m[1], 64)
			ceil := benchCeiling(name, m[2])
			if err != nil || ceil == "" || c.Of(ceil) <= 0 {
				continue
			}
			fmt.Fprintf(w, "    ↳ %.0f %s = %.3f× %s (%.0f/s, same run)\n", v, m[2], v/c.Of(ceil), ceil, c.Of(ceil))
		}
	}
	return sc.Err()
}
