package crashtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// server runs the real xpromo-server binary on one store: started, killed
// with SIGKILL, started again on the same store and port, and asked to
// verify its ledger.
type server struct {
	bin     string   // the xpromo-server binary
	port    int      // fixed for the whole run: clients keep their base URL
	dataDir string   // SQLite: the database's directory
	dbURL   string   // PostgreSQL: the database; "" for SQLite
	token   string   // the admin token
	secret  string   // the offer secret: offers sealed before a restart stay valid after it
	logPath string   // every incarnation appends its log here
	args    []string // added to serve's command line (Config.ServerArgs)

	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// baseURL is where the server listens.
func (s *server) baseURL() string { return fmt.Sprintf("http://127.0.0.1:%d", s.port) }

// storeFlags point a command of the binary at the store.
func (s *server) storeFlags() []string {
	return []string{"--data-dir", s.dataDir, "--database-url", s.dbURL}
}

// env is the child's environment: this process's, without any setting
// the server reads (flags win anyway; this keeps a stray XPROMO_* or
// DATABASE_URL of the caller's shell from surprising anyone), plus the two
// secrets, which stay off the command line where ps would show them.
func (s *server) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "XPROMO_") || strings.HasPrefix(kv, "DATABASE_URL=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "XPROMO_ADMIN_TOKEN="+s.token, "XPROMO_OFFER_SECRET="+s.secret)
}

// start starts the server in test mode and waits until it answers
// /readyz. Rate limits are far above the load, loopback is a trusted
// proxy so that each simulated device claims from its own address, and
// webhook endpoints may be on loopback, where the run's receiver is.
func (s *server) start(ctx context.Context) error {
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close() // the child holds its own descriptor
	args := append([]string{"serve",
		"--addr", fmt.Sprintf("127.0.0.1:%d", s.port), "--mode", "test",
		"--base-url=", "--redis-url=", "--categories-file=",
		"--log-format", "text", "--log-level", "info",
		"--rate-read", "100000000", "--rate-write", "100000000",
		"--trusted-proxies", "127.0.0.1",
		"--webhooks-allow-loopback", "true", // the receiver is on 127.0.0.1
	}, s.storeFlags()...)
	args = append(args, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Env = s.env()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.exited) }()
	return s.waitReady(ctx, time.Minute)
}

// waitReady polls /readyz until it answers 200.
func (s *server) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	hc := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.baseURL()+"/readyz", nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("xpromo-server exited at start (%s); its log: %s", s.cmd.ProcessState, s.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("xpromo-server did not answer /readyz on port %d within %s; its log: %s", s.port, limit, s.logPath)
		}
	}
}

// alive fails when the server exited without being told to.
func (s *server) alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("xpromo-server exited by itself (%s); its log: %s", s.cmd.ProcessState, s.logPath)
	default:
		return nil
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *server) kill() error {
	if s.cmd == nil {
		return nil
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-s.exited
	s.cmd = nil
	return nil
}

// stop asks the server to shut down (SIGTERM) and waits; a server still
// running after 30 s is killed.
func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
	s.cmd = nil
}

// VerifyRun is one run of `xpromo-server ledger verify`.
type VerifyRun struct {
	When   string // what had just happened: "after kill 3", "after restart 3", "at the end"
	Exit   int    // its exit status (-1: it could not run)
	Output string // its output when it failed
}

// OK reports a clean ledger.
func (v VerifyRun) OK() bool { return v.Exit == 0 }

// verify runs `xpromo-server ledger verify` on the store. It runs beside a
// live server too: verify reads one snapshot.
func (s *server) verify(ctx context.Context, when string) VerifyRun {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"ledger", "verify", "--log-level", "warn"}, s.storeFlags()...)...)
	cmd.Env = s.env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	run := VerifyRun{When: when}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		run.Exit = exit.ExitCode()
	default:
		run.Exit = -1
		out.WriteString(err.Error())
	}
	if run.Exit != 0 {
		run.Output = strings.TrimSpace(out.String())
	}
	return run
}

// freePort asks the kernel for a free loopback port. The server binds it
// again after each restart (Go listeners set SO_REUSEADDR, so the killed
// incarnation's connections in TIME_WAIT do not block it).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
