package webhooks

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/internal/memtest"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/outbox"
)

// A receiver answering 16 MiB (to a client that would allow it all) has its
// attempt recorded with a 1 KiB excerpt, and the attempt allocates under
// 1 MiB: at most ExcerptBytes are kept and DrainBytes more read.
func TestAHugeAnswerIsReadBoundedly(t *testing.T) {
	huge := bytes.Repeat([]byte("x"), 16<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(huge)
	}))
	defer srv.Close()
	s := &Service{
		Client: NewClient(outbound.Options{TestOnlyAllowLoopback: true, MaxResponseBytes: 64 << 20, Timeout: 10 * time.Second}),
		Now:    time.Now,
	}
	c := Claimed{
		Delivery: Delivery{EndpointID: "whe_1", EventID: "evt_1", AppID: "app_1"},
		Event:    outbox.Event{ID: "evt_1", Type: xpromo.EventType("app.approved"), AppID: "app_1", CreatedAt: time.Now(), Data: []byte(`{}`)},
		Endpoint: Endpoint{ID: "whe_1", AppID: "app_1", URL: srv.URL, Secret: newSecret()},
	}
	var r Result
	memtest.Under(t, 1<<20, "a 16 MiB answer", func() { r = s.attempt(context.Background(), c) })
	require.NotNil(t, r.Attempt)
	assert.True(t, r.Attempt.Succeeded)
	assert.Len(t, r.Attempt.Excerpt, ExcerptBytes)
}
