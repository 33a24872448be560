package appcast_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/internal/memtest"
	"github.com/xpromo/xpromo/server/reputation"
	"github.com/xpromo/xpromo/server/reputation/appcast"
)

// Each bomb class of XML (1 MiB, within MaxFeedBytes) is
// cadence_feed_invalid, and parsing it allocates under 16 MiB: the wide one,
// refused at its 50,001st element, costs the most, in garbage of the
// tokens before it. Without the bounds, the wide-attribute feed alone
// allocated some 100 MiB and the wide one kept every element. A feed over
// MaxFeedBytes is refused as it is fetched, having cost under 6 × MaxFeedBytes
// (the read buffer, grown by doubling).
func TestFeedBombs(t *testing.T) {
	const open = `<rss version="2.0"><channel>`
	const shut = `</channel></rss>`
	fill := func(unit string) string { return strings.Repeat(unit, (1<<20)/len(unit)) }
	for class, b := range map[string]string{
		"deep":            open + fill("<a>") + fill("</a>"),
		"wide":            open + fill("<a/>") + shut,
		"many items":      open + fill("<item/>") + shut,
		"wide attributes": open + `<a ` + fill(`b="" `) + `/>` + shut,
		"huge attribute":  open + `<a b="` + fill("x") + `"/>` + shut,
		"huge text":       open + `<title>` + fill("x") + `</title>` + shut,
		"many namespaces": open + `<a ` + fill(`xmlns:n="u" `) + `/>` + shut,
	} {
		data := []byte(b)
		var err error
		memtest.Under(t, 16<<20, class, func() { _, err = appcast.Parse(data) })
		assert.ErrorIs(t, err, appcast.ErrInvalid, class)
		assert.Equal(t, reputation.ReasonCadenceFeedInvalid, appcast.ReasonFor(err), class)
	}

	huge := []byte(open + strings.Repeat("<!-- x -->", appcast.MaxFeedBytes/10+1) + shut)
	srv := server(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(huge) })
	var res appcast.Result
	memtest.Under(t, 6*appcast.MaxFeedBytes, "huge", func() { res = client(5*time.Second).Check(context.Background(), srv.URL, appcast.Mac) })
	assert.Equal(t, reputation.ReasonCadenceFeedInvalid, res.Reason, "huge: %v", res.Err)
}
