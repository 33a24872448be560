package xpromo

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// An answer longer than maxResponseBytes, here a gzip bomb the transport
// inflates, is ErrResponseTooLarge, not decoded truncated, and reading it
// allocates under 8 × the bound (the buffer grown by doubling). The bound
// is cut to 1 MiB for the test; the client's is 32 MiB.
func TestAHugeAnswerIsTooLarge(t *testing.T) {
	defer func(n int) { maxResponseBytes = n }(maxResponseBytes)
	maxResponseBytes = 1 << 20
	var z bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	_, _ = gz.Write([]byte(`{"app_id":"`))
	_, _ = gz.Write(bytes.Repeat([]byte("0"), 8<<20))
	_, _ = gz.Write([]byte(`"}`))
	_ = gz.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(z.Bytes())
	}))
	defer srv.Close()
	c := NewClient(srv.URL, WithRetries(0))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.GetApp(context.Background(), "app_1")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("got %v, want ErrResponseTooLarge", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Fatalf("allocated %d bytes", n)
	}
}
