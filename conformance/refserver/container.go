package refserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/xpromo/xpromo/server/postgres/pgtest"
)

// DefaultPostgresURL is the PostgreSQL the container target creates its
// database on when XPROMO_TEST_DATABASE_URL is unset: the machine's own.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ContainerOptions adjust the container target.
type ContainerOptions struct {
	// PostgresURL names a database on the PostgreSQL server the container
	// uses, as a user allowed to CREATE DATABASE; a fresh database is
	// created there for the run and dropped after it. It must be reachable
	// from the host's loopback (the container shares the host's network).
	// "" means XPROMO_TEST_DATABASE_URL, else DefaultPostgresURL.
	PostgresURL string
	// ServerDir is the reference server module's directory (holding
	// Dockerfile and cmd/xpromo-server); "" finds it beside this module.
	ServerDir string
}

// DockerAvailable reports why no Docker engine can be used, or nil.
func DockerAvailable(ctx context.Context) (err error) {
	disableReaper()
	defer func() {
		// testcontainers panics on some broken Docker setups.
		if r := recover(); r != nil {
			err = fmt.Errorf("the Docker client panicked: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("no Docker engine found: %w", err)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("no Docker engine answers: %w", err)
	}
	return nil
}

// disableReaper turns testcontainers' reaper (Ryuk) off: its image would
// have to be pulled, and no registry is reachable. Every container is
// removed by its test's cleanup instead.
func disableReaper() {
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
}

// Container builds the reference server's image from server/Dockerfile
// (FROM scratch and a static binary this function builds first: nothing is
// pulled), runs it with host networking on a fresh PostgreSQL database,
// listening on a free port of 127.0.0.1, and waits until /readyz answers.
// The container, its image and its database are removed when t ends. Call
// DockerAvailable first to skip cleanly without Docker.
func Container(t testing.TB, opts ContainerOptions) *Server {
	t.Helper()
	disableReaper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	serverDir, err := findServerDir(opts.ServerDir)
	if err != nil {
		t.Fatalf("refserver: %v", err)
	}
	buildCtx := t.TempDir()
	buildImageContext(t, ctx, serverDir, buildCtx)

	dbURL := newDatabase(t, opts.PostgresURL)
	port, err := freePort()
	if err != nil {
		t.Fatalf("refserver: finding a free port: %v", err)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	token := "conformance-admin-" + randomToken()

	logs := &logTail{}
	var buildLog bytes.Buffer
	ctr, err := testcontainers.Run(ctx, "",
		testcontainers.WithDockerfile(testcontainers.FromDockerfile{
			Context:        buildCtx,
			Dockerfile:     "Dockerfile",
			Repo:           "xpromo-server-conformance",
			Tag:            randomToken()[:12],
			BuildLogWriter: &buildLog,
		}),
		testcontainers.WithEnv(map[string]string{
			"XPROMO_ADDR":        "127.0.0.1:" + strconv.Itoa(port),
			"XPROMO_BASE_URL":    base,
			"DATABASE_URL":       dbURL,
			"XPROMO_ADMIN_TOKEN": token,
			"XPROMO_MODE":        "test",
			"XPROMO_RATE_READ":   strconv.Itoa(ReadLimit),
			"XPROMO_RATE_WRITE":  strconv.Itoa(WriteLimit),
			"XPROMO_LOG_FORMAT":  "text",
		}),
		// Host networking: the server reaches PostgreSQL on the host's
		// loopback, and the suite reaches the server there; nothing
		// travels over a bridge address.
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
		}),
		testcontainers.WithLogConsumers(logs),
	)
	// Registered even when Run failed: it may have created the container.
	testcontainers.CleanupContainer(t, ctr)
	if err != nil {
		t.Fatalf("refserver: building or starting the image: %v\nbuild log:\n%s", err, tail(buildLog.String(), 40))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the container's log (last lines):\n%s", logs.String())
		}
	})

	if err := waitReady(ctx, ctr, base); err != nil {
		t.Fatalf("refserver: the container did not become ready: %v\nits log:\n%s", err, logs.String())
	}
	return &Server{URL: base, AdminToken: token}
}

// findServerDir returns dir, or the server module beside this module's
// source (conformance/refserver → ../../server).
func findServerDir(dir string) (string, error) {
	if dir == "" {
		_, file, _, ok := runtime.Caller(0)
		if !ok {
			return "", errors.New("cannot locate the reference server's sources; set ContainerOptions.ServerDir")
		}
		dir = filepath.Join(filepath.Dir(file), "..", "..", "server")
	}
	for _, f := range []string{"Dockerfile", filepath.Join("cmd", "xpromo-server")} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("%s is not the reference server's directory: %w", dir, err)
		}
	}
	return filepath.Abs(dir)
}

// buildImageContext fills dst with what server/Dockerfile copies: the
// static binary (CGO off, for the host's architecture, Linux) and an empty
// data directory.
func buildImageContext(t testing.TB, ctx context.Context, serverDir, dst string) {
	t.Helper()
	df, err := os.ReadFile(filepath.Join(serverDir, "Dockerfile"))
	if err != nil {
		t.Fatalf("refserver: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dst, "Dockerfile"), df, 0o644); err != nil {
		t.Fatalf("refserver: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dst, "data"), 0o755); err != nil {
		t.Fatalf("refserver: %v", err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(dst, "xpromo-server"), "./cmd/xpromo-server")
	cmd.Dir = serverDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("refserver: building the static xpromo-server: %v\n%s", err, out)
	}
	t.Logf("refserver: built the static xpromo-server in %s", time.Since(start).Round(time.Second))
}

// newDatabase creates a fresh database on the PostgreSQL server of adminURL,
// drops it when t ends, and returns its URL.
func newDatabase(t testing.TB, adminURL string) string {
	t.Helper()
	if adminURL == "" {
		adminURL = os.Getenv(pgtest.EnvURL)
	}
	if adminURL == "" {
		adminURL = DefaultPostgresURL
	}
	return pgtest.NewDatabase(t, adminURL, "xpromo_conformance_")
}

// freePort asks the kernel for a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls base/readyz until it answers 200, the container stops,
// or ctx ends. Host networking has no mapped ports, so testcontainers' port
// waits do not apply: the server is polled on the host's loopback.
func waitReady(ctx context.Context, ctr *testcontainers.DockerContainer, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if st, err := ctr.State(ctx); err == nil && !st.Running {
			return fmt.Errorf("the container stopped (exit code %d) before it was ready", st.ExitCode)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last answer of /readyz: %s", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// logTail keeps the last lines of the container's log.
type logTail struct {
	mu    sync.Mutex
	lines []string
}

const maxLogLines = 200

func (l *logTail) Accept(entry testcontainers.Log) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range strings.SplitSeq(strings.TrimRight(string(entry.Content), "\n"), "\n") {
		l.lines = append(l.lines, line)
	}
	if over := len(l.lines) - maxLogLines; over > 0 {
		l.lines = append([]string(nil), l.lines[over:]...)
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
