package cli_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/cli"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/sqlite"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const adminToken = "cli-test-admin-token-0123456789abcdef"

// clock is the injected clock of the server under test: a fixed instant,
// so that timestamps in golden files are stable.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// server is a real xpromo server (server/assembly on a SQLite temp store)
// behind httptest.
type server struct {
	url   string
	store *sqlite.DB
	clock *clock
	chk   *openapitest.Checker
}

// adminOff as cfg.AdminToken starts a server whose admin API is off (no
// admin token), as `make run` does by default.
const adminOff = "(admin API off)"

// startServer starts assembly.New(cfg); an empty cfg.AdminToken means adminToken.
func startServer(t *testing.T, cfg assembly.Config) *server {
	t.Helper()
	s := &server{store: storagetest.SQLite(t), clock: &clock{now: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)}, chk: openapitest.New(t)}
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	if cfg.ReadLimit == 0 {
		cfg.ReadLimit, cfg.WriteLimit = 10_000, 10_000
	}
	switch cfg.AdminToken {
	case "":
		cfg.AdminToken = adminToken
	case adminOff:
		cfg.AdminToken = ""
	}
	cfg.BaseURL, cfg.Now, cfg.Mode = ts.URL, s.clock.Now, httpapi.ModeTest
	srv, err := assembly.New(cfg, s.store)
	require.NoError(t, err)
	handler, s.url = srv, ts.URL
	return s
}

// cliEnv runs the CLI against a server with an environment of its own: no
// variable of the test process leaks in, and the config directory is a
// temporary one.
type cliEnv struct {
	t         *testing.T
	srv       *server
	vars      map[string]string
	configDir string
	terminal  bool // IsTerminal answers true for stderr (and stdout when stdoutTTY)
	stdoutTTY bool
	transport http.RoundTripper
	stdin     string
	opened    []string
}

func newCLI(t *testing.T, srv *server) *cliEnv {
	e := &cliEnv{t: t, srv: srv, vars: map[string]string{}, configDir: t.TempDir()}
	if srv != nil {
		e.vars["XPROMO_BASE_URL"] = srv.url
	}
	return e
}

// result is what one run of the CLI printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

func (e *cliEnv) env(stdout, stderr io.Writer) cli.Env {
	transport := e.transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	if e.srv != nil {
		transport = e.srv.chk.Transport(transport) // every exchange is checked against openapi.json
	}
	return cli.Env{
		Stdin:         strings.NewReader(e.stdin),
		Stdout:        stdout,
		Stderr:        stderr,
		Getenv:        func(k string) string { return e.vars[k] },
		UserConfigDir: func() (string, error) { return e.configDir, nil },
		Transport:     transport,
		ClientOptions: []xpromo.Option{xpromo.WithRetryWait(time.Millisecond, 2*time.Millisecond), xpromo.WithMaxRetryAfter(0)},
		OpenURL:       func(u string) error { e.opened = append(e.opened, u); return nil },
		IsTerminal: func(w io.Writer) bool {
			return e.terminal && (w == stderr || (e.stdoutTTY && w == stdout))
		},
	}
}

// run runs the CLI with args.
func (e *cliEnv) run(args ...string) result {
	return e.runCtx(context.Background(), args...)
}

func (e *cliEnv) runCtx(ctx context.Context, args ...string) result {
	e.t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Run(ctx, e.env(&stdout, &stderr), args)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// ok runs the CLI and requires exit 0.
func (e *cliEnv) ok(args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	require.Equal(e.t, cli.ExitOK, r.code, "xpromo %s\n%s", strings.Join(args, " "), r)
	return r
}

// fails runs the CLI and requires exit code and an error line with
// errCode on stderr ("" accepts any code).
func (e *cliEnv) fails(code int, errCode string, args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	require.Equal(e.t, code, r.code, "xpromo %s\n%s", strings.Join(args, " "), r)
	prefix := "error: " + errCode + ": "
	if errCode == "" { // any code
		prefix = "error: "
	}
	// Progress lines may come first; the error line is the first "error:".
	errLine := ""
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "error: ") {
			errLine = l
			break
		}
	}
	assert.True(e.t, strings.HasPrefix(errLine, prefix), "stderr has a line starting with %q\n%s", prefix, r)
	assert.Empty(e.t, r.stdout, "nothing on stdout when a command fails")
	return r
}

// configPath is where the CLI keeps its config in this environment.
func (e *cliEnv) configPath() string { return filepath.Join(e.configDir, "xpromo", "config.json") }

// registered is an app registered through the CLI.
type registered struct {
	appID, apiKey string
}

var appIDRe = regexp.MustCompile(`(?m)^app_id\s+(app_\w+)`)
var apiKeyRe = regexp.MustCompile(`(?m)^api_key\s+(xp_test_\w+)`)

// register registers an app under profile (“: the default) with the CLI.
func (e *cliEnv) register(profile, name, bundle string) registered {
	e.t.Helper()
	args := []string{"apps", "register", "--name", name, "--platform", "mac", "--bundle-id", bundle,
		"--domain", "example.com", "--download-url", "https://example.com/" + name + ".dmg", "--contact-email", "team@example.com"}
	if profile != "" {
		args = append(args, "--profile", profile)
	}
	r := e.ok(args...)
	m, k := appIDRe.FindStringSubmatch(r.stdout), apiKeyRe.FindStringSubmatch(r.stdout)
	require.NotNil(e.t, m, r.stdout)
	require.NotNil(e.t, k, r.stdout)
	return registered{appID: m[1], apiKey: k[1]}
}

// Golden files.

var (
	// Ids are a prefix, "_" and 26 base32 characters (server/ids).
	idRe = regexp.MustCompile(`\b([a-z][a-z0-9]*(?:_test)?)_([0-9a-hjkmnp-tv-z]{26})\b`)
	// API keys are xp_test_ and 32 base62 characters.
	keyRe = regexp.MustCompile(`\bxp_test_[0-9A-Za-z]{32}\b`)
	// Masked keys show the key's first 12 characters.
	maskedRe = regexp.MustCompile(`\bxp_test_[0-9A-Za-z]{4}…`)
	// Request ids vary.
	requestRe = regexp.MustCompile(`\(request [^)]*\)`)
)

// normalizer replaces what differs between runs (ids, keys, the server's
// port, temporary paths) with stable placeholders of the same length, so
// that aligned columns stay aligned. The same id gets the same placeholder.
type normalizer struct {
	known []string // value, placeholder pairs replaced first
	ids   map[string]string
	keys  map[string]string
	base  string
	dirs  []string
}

func (e *cliEnv) normalizer() *normalizer {
	n := &normalizer{ids: map[string]string{}, keys: map[string]string{}, dirs: []string{e.configDir}}
	if e.srv != nil {
		n.base = e.srv.url
	}
	return n
}

// replace makes value show as placeholder.
func (n *normalizer) replace(value, placeholder string) {
	n.known = append(n.known, value, placeholder)
}

func (n *normalizer) apply(s string) string {
	if len(n.known) > 0 {
		s = strings.NewReplacer(n.known...).Replace(s)
	}
	if n.base != "" {
		s = strings.ReplaceAll(s, n.base, "http://127.0.0.1:PORT")
	}
	for _, d := range n.dirs {
		s = strings.ReplaceAll(s, d, "$CONFIG_DIR")
	}
	s = idRe.ReplaceAllStringFunc(s, func(id string) string {
		if p, ok := n.ids[id]; ok {
			return p
		}
		m := idRe.FindStringSubmatch(id)
		p := fmt.Sprintf("%s_%026d", m[1], len(n.ids)+1)
		n.ids[id] = p
		return p
	})
	s = keyRe.ReplaceAllStringFunc(s, func(k string) string {
		if p, ok := n.keys[k]; ok {
			return p
		}
		p := fmt.Sprintf("xp_test_%032d", len(n.keys)+1)
		n.keys[k] = p
		return p
	})
	s = maskedRe.ReplaceAllString(s, "xp_test_XXXX…")
	return requestRe.ReplaceAllString(s, "(request …)")
}

// golden compares got (normalized) with testdata/<name>.golden, or
// rewrites the file with -update.
func golden(t *testing.T, n *normalizer, name, got string) {
	t.Helper()
	got = n.apply(got)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./cli -run %s -update to create it", t.Name())
	assert.Equal(t, string(want), got, "golden file %s (go test -update rewrites it)", path)
}

// field returns the value of key in the key/value table out ("" if none).
func field(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
