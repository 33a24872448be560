package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/internal/testtool"
)

// TestGuideLoop plays the integration guide's "Test loop" with
// tools/guideloop/loop.mjs, a Node.js client written from the served guide
// and openapi.json alone (built-in crypto, no npm package), against a fresh
// test-mode server: two apps, approval, top-up, campaign, fill, click,
// claim, heartbeats after advancing the clock, the clearing, a payout
// refused below the minimum, a webhook verified by the script itself. Mid
// story (an offer issued, the clock advanced) the server is stopped and
// started again on its data directory and address: the story finishes, so
// the restarted server kept its test clock and still verifies the offer it
// sealed before.
func TestGuideLoop(t *testing.T) {
	node := testtool.Command(t, "node", "Node.js 20 or later: Debian apt-get install nodejs")
	script, err := filepath.Abs("../../../tools/guideloop/loop.mjs")
	require.NoError(t, err)
	dir := t.TempDir()
	token := strings.Repeat("g", 40)
	env := map[string]string{"XPROMO_ADMIN_TOKEN": token}
	args := []string{"--data-dir", dir, "--webhooks-allow-loopback", "true"}
	baseURL, _, stop := startServe(t, args, env)
	defer func() { stop() }()

	clockOffset := func() int64 {
		t.Helper()
		req, err := http.NewRequest("GET", baseURL+"/v1/admin/clock", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var c struct {
			OffsetSeconds int64 `json:"offset_seconds"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&c))
		return c.OffsetSeconds
	}

	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "XPROMO_BASE_URL="+baseURL, "XPROMO_ADMIN_TOKEN="+token, "XPROMO_GUIDELOOP_PAUSE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()

	var last string
	paused := false
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := lines.Text()
		if line != "PAUSE" {
			last = line
			continue
		}
		// The restart: same data directory, same address (the webhook
		// endpoints and the script keep using it).
		paused = true
		offset := clockOffset()
		require.Positive(t, offset, "the story advanced the clock before the pause")
		require.Equal(t, exitOK, stop(), "the server stops cleanly")
		addr := strings.TrimPrefix(baseURL, "http://")
		var again string
		again, _, stop = startServe(t, append(args, "--addr", addr), env)
		require.Equal(t, baseURL, again)
		assert.Equal(t, offset, clockOffset(), "the restarted server keeps its test clock")
		_, err := io.WriteString(stdin, "go on\n")
		require.NoError(t, err)
	}
	err = cmd.Wait()
	require.NoError(t, err, "node loop.mjs failed:\n%s", stderr.String())
	require.True(t, paused, "the script never paused for the restart:\n%s", stderr.String())
	var got struct {
		OK            bool   `json:"ok"`
		PriceCents    int64  `json:"price_cents"`
		EarnedCents   int64  `json:"earned_cents"`
		PayoutRefusal string `json:"payout_refusal"`
	}
	require.NoError(t, json.Unmarshal([]byte(last), &got), "last line: %q\n%s", last, stderr.String())
	assert.True(t, got.OK)
	assert.Equal(t, "below_minimum", got.PayoutRefusal)
	assert.Equal(t, got.PriceCents-got.PriceCents*3/10, got.EarnedCents, "the publisher earns 70%")
	t.Logf("node loop.mjs:\n%s", stderr.String())
}
