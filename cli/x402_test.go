package cli_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/cli"
	"github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/x402/x402test"
)

// xpromo topup --x402 --wallet-key-file pays the challenge on the local
// x402 chain: payTo's token balance rises by the quote and the wallet gets
// its topup line.
func TestTopUpX402PaysWithAWallet(t *testing.T) {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	payer, err := x402.NewWallet(hex.EncodeToString(key))
	require.NoError(t, err)
	payTo := "0x00000000000000000000000000000000000000aa"
	chain := x402test.Start(t, payer.Address()+"=200000000")

	srv := startServer(t, assembly.Config{X402PayTo: payTo, X402EURUSD: "1.1", X402Facilitator: chain.URL, X402RPC: chain.RPC})
	srv.clock.mu.Lock()
	srv.clock.now = time.Now().UTC() // the chain's blocks carry the wall clock's time
	srv.clock.mu.Unlock()
	e := newCLI(t, srv)
	e.ok("apps", "register", "--name", "Agent Funded", "--platform", "mac", "--bundle-id", "com.example.agentfunded",
		"--domain", "example.com", "--download-url", "https://example.com/AgentFunded.dmg", "--contact-email", "team@example.com")

	keyFile := filepath.Join(t.TempDir(), "wallet.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("0x"+hex.EncodeToString(key)+"\n"), 0o600))
	out := e.ok("topup", "--amount-cents", "5000", "--x402", "--wallet-key-file", keyFile)
	assert.Contains(t, out.stdout, "topup")
	assert.Contains(t, out.stdout, "50.00")
	assert.Regexp(t, `transaction\s+0x[0-9a-fA-F]{64}`, out.stdout)
	assert.Equal(t, "55000000", chain.Balance(payTo).String(), "EUR 50 at 1.1: 55 USDC to payTo")

	js := e.ok("topup", "--amount-cents", "5000", "--x402", "--wallet-key-file", keyFile, "--json")
	var line xpromo.LedgerLine
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &line))
	assert.Equal(t, int64(10000), line.BalanceAfter)
	assert.Equal(t, "110000000", chain.Balance(payTo).String())

	e.fails(cli.ExitUsage, "usage", "topup", "--amount-cents", "5000", "--wallet-key-file", keyFile)
	require.NoError(t, os.WriteFile(keyFile, []byte("not a key"), 0o600))
	e.fails(cli.ExitUsage, "usage", "topup", "--amount-cents", "5000", "--x402", "--wallet-key-file", keyFile)
}
