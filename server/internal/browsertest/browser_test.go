package browsertest_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/internal/browsertest"
)

// tinySite serves a clean page and a broken one under the dashboard's
// kind of CSP (no inline script or style).
func tinySite(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>t</title></head><body><main><h1>Tiny</h1>` + body + `</main></body></html>`))
		}
	}
	mux.HandleFunc("/clean", page(`<p>All fine.</p><a href="/next">Next</a>`))
	mux.HandleFunc("/next", page(`<p id="here">Next page.</p>`))
	mux.HandleFunc("/broken", page(`<script>document.title = 'inline'</script><script src="/bad.js"></script><img src="/pixel.png">`))
	mux.HandleFunc("/bad.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write([]byte(`console.error('something broke')`))
	})
	mux.HandleFunc("/pixel.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(onePixelPNG)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

var onePixelPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")

// TestHarness: the harness sees what it must fail a page for — an inline
// script the CSP blocks, a console.error, an image without a text
// alternative (axe critical) — and nothing on a clean page; it follows a
// link and writes a 1280x800 PNG.
func TestHarness(t *testing.T) {
	b := browsertest.Start(t)
	site := tinySite(t)
	p := b.NewPage(t)

	p.Open(site.URL + "/clean")
	assert.Equal(t, "Tiny", p.Text("h1"))
	assert.Empty(t, p.Problems())
	assert.Empty(t, p.Axe())
	p.ClickAndWait("a")
	assert.Equal(t, site.URL+"/next", p.Location())
	assert.Equal(t, "Next page.", p.Text("#here"))

	p.Open(site.URL + "/broken")
	problems := strings.Join(p.Problems(), "\n")
	assert.Contains(t, problems, "CSP violation: script-src-elem blocked inline")
	assert.Contains(t, problems, "console.error: \"something broke\"")
	ids := []string{}
	for _, v := range p.Axe() {
		ids = append(ids, v.ID+"/"+v.Impact)
	}
	assert.True(t, slices.Contains(ids, "image-alt/critical"), "%v", ids)
	assert.Empty(t, p.Problems(), "Problems drains what it returned")

	png, err := os.ReadFile(p.Screenshot("broken"))
	require.NoError(t, err)
	require.Greater(t, len(png), 24)
	assert.Equal(t, "\x89PNG", string(png[:4]))
	w := int(png[16])<<24 | int(png[17])<<16 | int(png[18])<<8 | int(png[19])
	h := int(png[20])<<24 | int(png[21])<<16 | int(png[22])<<8 | int(png[23])
	assert.Equal(t, []int{browsertest.Width, browsertest.Height}, []int{w, h})
}
