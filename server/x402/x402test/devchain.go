// Package x402test runs the local x402 counterpart for tests: the
// x402-devchain command (tools/devchain, its own Go module so that the
// server does not depend on go-ethereum), a facilitator settling on a
// private EVM chain with an EIP-3009 USDC twin at Base Sepolia's address.
package x402test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/x402"
)

// Devchain is a running x402-devchain.
type Devchain struct {
	URL         string `json:"url"` // the facilitator's base URL
	RPC         string `json:"rpc"` // the chain's JSON-RPC URL
	ChainID     int64  `json:"chainId"`
	Network     string `json:"network"`
	Asset       string `json:"asset"`
	Facilitator string `json:"facilitator"` // the facilitator's own address
	t           testing.TB
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// build compiles tools/devchain once per test binary, through the
// workspace (go.work) the test runs in.
func build() (string, error) {
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOWORK").Output()
		work := strings.TrimSpace(string(out))
		if err != nil || work == "" || work == "off" {
			buildErr = fmt.Errorf("x402test: building x402-devchain needs the repository's go.work (go env GOWORK: %q, %v)", work, err)
			return
		}
		dir, err := os.MkdirTemp("", "x402-devchain-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "x402-devchain")
		cmd := exec.Command("go", "build", "-o", binary, "./tools/devchain")
		cmd.Dir = filepath.Dir(work)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("x402test: go build ./tools/devchain: %v\n%s", err, out)
		}
	})
	return binary, buildErr
}

// Start runs a fresh x402-devchain for t (stopped at its cleanup) and mints
// each funds entry ("0xaddress=atomic units") at start.
func Start(t testing.TB, funds ...string) *Devchain {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-listen", "127.0.0.1:0"}
	for _, f := range funds {
		args = append(args, "-fund", f)
	}
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe() // closing it stops the chain
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("x402-devchain did not start: %v\n%s", err, stderr.String())
	}
	d := &Devchain{t: t}
	if err := json.Unmarshal([]byte(line), d); err != nil {
		t.Fatalf("x402-devchain's ready line %q: %v", line, err)
	}
	return d
}

// Chain is a client of the devchain's JSON-RPC, for the test's own reads
// (balances). It is the test's client, not the server's, so it is not
// server/outbound: the server's chain client is built by package assembly with it.
func (d *Devchain) Chain() *x402.Chain {
	return &x402.Chain{URL: d.RPC, HTTP: http.DefaultClient}
}

// Balance returns owner's DevUSDC balance (atomic units).
func (d *Devchain) Balance(owner string) *big.Int {
	d.t.Helper()
	b, err := d.Chain().BalanceOf(context.Background(), d.Asset, owner)
	if err != nil {
		d.t.Fatal(err)
	}
	return b
}

// Mint mints value atomic units of DevUSDC to to.
func (d *Devchain) Mint(to string, value string) {
	d.t.Helper()
	body, _ := json.Marshal(map[string]string{"to": to, "value": value})
	resp, err := http.Post(d.URL+"/mint", "application/json", bytes.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		d.t.Fatalf("mint: %s", resp.Status)
	}
}
