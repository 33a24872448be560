package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// Rotating the API key shows the new key once, and it works; a webhook
// endpoint added in the browser shows its secret once and lists in the API.
func TestDevelopersScreen(t *testing.T) {
	s := newStack(t, storagetest.SQLite(t))
	id, key := s.app("Clip")
	b := s.browser()
	b.signIn(key)
	dev := b.get("/dashboard/developers")
	require.Equal(t, http.StatusOK, dev.StatusCode, dev.Body)
	assert.Contains(t, dev.Body, "<code>"+key[:12]+"…</code>")

	rotate := url.Values{"idempotency_key": {dev.formKeyFor(t, "/dashboard/developers/keys/rotate")}}
	p := b.post("/dashboard/developers/keys/rotate", rotate)
	require.Equal(t, http.StatusOK, p.StatusCode, p.Body)
	m := regexp.MustCompile(`shown this once:</strong></p><pre class="token">([^<]+)</pre>`).FindStringSubmatch(p.Body)
	require.NotNil(t, m, p.Body)
	newKey := m[1]
	assert.NotEqual(t, key, newKey)
	assert.Equal(t, 200, s.api("GET", "/v1/apps/"+id, newKey, nil, nil), "the new key works")
	// A double click is one rotation: the same answer, the same key.
	again := b.post("/dashboard/developers/keys/rotate", rotate)
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	assert.Contains(t, again.Body, newKey)
	// The next visit does not show it.
	dev = b.get("/dashboard/developers")
	assert.NotContains(t, dev.Body, newKey)

	create := url.Values{"idempotency_key": {dev.formKeyFor(t, "/dashboard/developers/webhooks")}, "url": {"https://hooks.example.com/xpromo"},
		"event": {"chain.cleared", "payout.sent"}}
	p = b.post("/dashboard/developers/webhooks", create)
	require.Equal(t, http.StatusCreated, p.StatusCode, p.Body)
	assert.Contains(t, p.Body, "signing secret, shown this once")
	assert.Contains(t, p.Body, "whsec_")
	var eps struct {
		Endpoints []struct {
			ID  string `json:"id"`
			URL string `json:"url"`
		} `json:"endpoints"`
	}
	require.Equal(t, 200, s.api("GET", "/v1/apps/"+id+"/webhook-endpoints", newKey, nil, &eps))
	require.Len(t, eps.Endpoints, 1)
	assert.Equal(t, "https://hooks.example.com/xpromo", eps.Endpoints[0].URL)
	ep := b.get("/dashboard/developers/webhooks/" + eps.Endpoints[0].ID)
	require.Equal(t, http.StatusOK, ep.StatusCode, ep.Body)
	assert.Contains(t, ep.Body, "No attempt yet.")

	// Another app sees none of it.
	_, otherKey := s.app("Other")
	other := s.browser()
	other.signIn(otherKey)
	assert.Equal(t, http.StatusNotFound, other.get("/dashboard/developers/webhooks/"+eps.Endpoints[0].ID).StatusCode)
	assert.False(t, strings.Contains(other.get("/dashboard/developers").Body, "hooks.example.com"))
}
