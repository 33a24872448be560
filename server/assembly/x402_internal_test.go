package assembly

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/httpapi"
)

func TestX402Config(t *testing.T) {
	payTo := "0x1111111111111111111111111111111111111111"
	c, err := x402Config(Config{Mode: httpapi.ModeTest})
	require.NoError(t, err)
	assert.Nil(t, c.Facilitator, "no facilitator: x402 payments are refused")
	assert.Nil(t, c.Chain)

	c, err = x402Config(Config{Mode: httpapi.ModeTest, X402PayTo: payTo, X402Facilitator: "http://127.0.0.1:9", X402RPC: "http://127.0.0.1:9/rpc"})
	require.NoError(t, err)
	assert.NotNil(t, c.Facilitator)
	assert.NotNil(t, c.Chain)
	assert.Equal(t, "base-sepolia", c.Network)

	// Live mode refuses to start without a payTo, or without a facilitator.
	_, err = x402Config(Config{Mode: httpapi.ModeLive, X402Network: "base", X402Facilitator: "https://x402.example"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pay-to")
	_, err = x402Config(Config{Mode: httpapi.ModeLive, X402Network: "base", X402PayTo: payTo})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--x402-facilitator-url")
	c, err = x402Config(Config{Mode: httpapi.ModeLive, X402Network: "base", X402PayTo: payTo, X402Facilitator: "https://x402.example"})
	require.NoError(t, err)
	assert.Equal(t, "base", c.Network)
}
