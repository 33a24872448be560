package assembly

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/httpapi"
)

// A live server keeps no offer secret in its store: without a configured
// one it refuses to start, before touching the store (nil here).
func TestOfferKeysLiveNeedsSecret(t *testing.T) {
	_, _, err := offerKeys(context.Background(), Config{Mode: httpapi.ModeLive}, nil)
	assert.ErrorContains(t, err, "live mode needs an offer MAC secret")
}
