package assembly_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// contractDashboard exercises the dashboard's sign-in link for TestContract:
// a link below the server's URL that expires 5 minutes later, and a 401
// without a key. Using the link is a browser's page, not an operation
// (server/dashboard's tests).
func contractDashboard(t *testing.T, a *api, key string) {
	link := a.expect(201, a.do("POST", "/v1/dashboard/sign-in-links", key, nil)).json(t)
	url, _ := link["url"].(string)
	assert.True(t, strings.HasPrefix(url, a.url+"/dashboard/sign-in?link="), url)
	expires, err := time.Parse(time.RFC3339, link["expires_at"].(string))
	assert.NoError(t, err)
	assert.False(t, expires.IsZero())
	assert.Equal(t, "unauthorized", a.expect(401, a.do("POST", "/v1/dashboard/sign-in-links", "", nil)).code(t))
}
