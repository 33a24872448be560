package aivis_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/internal/memtest"
	"github.com/xpromo/xpromo/server/reputation"
)

// The model endpoint answering a bomb, as its HTTP answer or as the
// assistant's content, is the signal's documented failure (unavailable,
// unparseable), never a score; reading one allocates under 4 MiB (16 × the
// 256 KiB an answer may be).
func TestAnswerBombs(t *testing.T) {
	var body string
	srv := newModelServer(t, func(w http.ResponseWriter, r *http.Request) { jsonAnswer(body)(w, r) })
	c := newClient(t, srv.URL, nil)
	check := func(what, want string) {
		t.Helper()
		var res reputation.Signal
		memtest.Under(t, 4<<20, what, func() { res = c.Check(context.Background(), app).Signal })
		assert.Equal(t, want, res.Reason, what)
	}
	for _, b := range memtest.JSONBombs(256 << 10) {
		body = string(b.Text)
		check("answer "+b.Class, reputation.ReasonAIUnavailable)
	}
	for class, content := range map[string]string{
		"deep":     strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000),
		"wide":     `{"known":true,"familiarity":[` + strings.Repeat("0,", 10_000) + `0],"sentiment":0,"summary":""}`,
		"long key": `{"` + strings.Repeat("k", 1000) + `":1}`,
		"nested":   `{"known":true,"familiarity":` + strings.Repeat(`{"a":`, 50) + `1` + strings.Repeat(`}`, 50) + `,"sentiment":0,"summary":""}`,
	} {
		body = completion(content, "stop")
		check("content "+class, reputation.ReasonAIUnparseable)
	}
}
