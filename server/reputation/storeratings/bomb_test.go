package storeratings_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/internal/memtest"
	"github.com/xpromo/xpromo/server/reputation"
)

// A store answering a bomb of any class is reviews_unavailable (never a
// score), and reading it allocates under 8 MiB (8 × the 1 MiB an answer may
// be).
func TestAnswerBombs(t *testing.T) {
	var body string
	s := newStore(t, func(w http.ResponseWriter, r *http.Request) { answer(body)(w, r) })
	c := client(t, s.URL, 5*time.Second)
	for _, b := range memtest.JSONBombs(1 << 20) {
		body = string(b.Text)
		var res reputation.Signal
		memtest.Under(t, 8<<20, "lookup answer "+b.Class, func() { res = c.Check(context.Background(), bundle, "mac").Signal })
		assert.Equal(t, reputation.ReasonReviewsUnavailable, res.Reason, b.Class)
	}
}
