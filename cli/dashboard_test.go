package cli_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/assembly"
)

// `xpromo dashboard --open` prints and opens a sign-in link that signs a
// browser in once.
func TestDashboardLink(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	e.ok("apps", "register", "--name", "Clipboard Pro", "--platform", "mac", "--bundle-id", "com.example.clipboardpro",
		"--domain", "example.com", "--download-url", "https://example.com/ClipboardPro.dmg", "--contact-email", "team@example.com")

	out := e.ok("dashboard", "--open")
	require.Len(t, e.opened, 1)
	link := e.opened[0]
	assert.Contains(t, out.stdout, link, "the opened URL is printed too")
	assert.Contains(t, out.stdout, "expires_at")
	require.True(t, strings.HasPrefix(link, srv.url+"/dashboard/sign-in?link="), link)

	// The link's token signs a browser in, once.
	u, err := url.Parse(link)
	require.NoError(t, err)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	use := func() int {
		req, _ := http.NewRequest("POST", srv.url+"/dashboard/sign-in", strings.NewReader(url.Values{"link": {u.Query().Get("link")}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.url)
		resp, err := browser.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusSeeOther, use())
	assert.Equal(t, http.StatusUnauthorized, use(), "single use")

	js := e.ok("dashboard", "--json").stdout
	assert.Contains(t, js, `"url":"`+srv.url+`/dashboard/sign-in?link=`)
}
