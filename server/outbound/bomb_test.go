package outbound_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/internal/memtest"
	"github.com/xpromo/xpromo/server/outbound"
)

// A gzip bomb: 16 MiB of zeros in about 70 KiB. Go's transport asks for
// gzip and inflates the answer itself, and the body limit counts inflated
// bytes, so the bomb fails at MaxResponseBytes of output and the heap never
// holds more than a few times the limit (bound: 8 × the limit, for
// ReadAll's growth and the transport's buffers).
func TestGzipBombIsBoundedByInflatedBytes(t *testing.T) {
	var z bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	zeros := make([]byte, 1<<20)
	for range 16 {
		_, _ = gz.Write(zeros)
	}
	require.NoError(t, gz.Close())
	bomb := z.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Contains(t, r.Header.Get("Accept-Encoding"), "gzip")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(bomb)
	}))
	defer srv.Close()
	const limit = 1 << 20
	c := outbound.New(outbound.Options{TestOnlyAllowLoopback: true, MaxResponseBytes: limit})
	var err error
	var n int
	memtest.Under(t, 8*limit, "a 16 MiB gzip bomb", func() {
		var resp *http.Response
		resp, err = c.Get(srv.URL)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body []byte
		body, err = io.ReadAll(resp.Body)
		n = len(body)
	})
	require.ErrorIs(t, err, outbound.ErrResponseTooLarge)
	require.LessOrEqual(t, n, limit)
}
