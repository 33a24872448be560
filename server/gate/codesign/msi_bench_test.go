package codesign

import (
	"context"
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/internal/testtool"
)

// BenchmarkGateMSI verifies the Authenticode signature of a real MSI —
// built by wixl around a payload of random bytes (so its cabinet does not
// compress), signed by osslsigncode — read from disk as a download is.
// It reports the time and the peak live heap of one verification: the
// digest is streamed, so the heap should not grow with the package.
// 30 MB always; 300 MB with XPROMO_BENCH_GATE_LARGE=1 (building it takes
// a minute). Nothing is committed: the MSI is built in a temporary
// directory.
func BenchmarkGateMSI(b *testing.B) {
	sizes := []int64{30 << 20}
	if os.Getenv("XPROMO_BENCH_GATE_LARGE") != "" {
		sizes = append(sizes, 300<<20)
	}
	for _, size := range sizes {
		path := bigSignedMSI(b, size) // once, outside the timed runs
		b.Run(strconv.FormatInt(size>>20, 10)+"MB", func(b *testing.B) {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			v := &Verifier{Roots: testPKI().root.Pool()}
			b.SetBytes(st.Size())
			b.ReportAllocs()
			var peak uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p, err := peakHeap(func() error {
					_, err := v.VerifyMSI(context.Background(), f, st.Size())
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
				peak = max(peak, p)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}

// peakHeap runs fn, sampling the live heap every millisecond, and returns
// the largest sample above the heap before it started.
func peakHeap(fn func() error) (uint64, error) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak uint64
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if v := read(); v > base {
					mu.Lock()
					peak = max(peak, v-base)
					mu.Unlock()
				}
			}
		}
	}()
	err := fn()
	close(done)
	mu.Lock()
	defer mu.Unlock()
	return peak, err
}

// bigSignedMSI builds an MSI of about size bytes with wixl and signs
// it with osslsigncode.
func bigSignedMSI(b *testing.B, size int64) string {
	b.Helper()
	testtool.Command(b, "wixl", "Debian: apt-get install wixl")
	testtool.Command(b, "osslsigncode", "Debian: apt-get install osslsigncode")
	dir, err := os.MkdirTemp("", "bench-gate-msi-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	payload, err := os.Create(filepath.Join(dir, "payload.bin"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(payload, rand.Reader, size); err != nil {
		b.Fatal(err)
	}
	payload.Close()
	msi := fixture.Wixl(b, dir)
	os.Remove(filepath.Join(dir, "payload.bin"))
	certs, key := testPKI().leaf.WritePEM(dir)
	out := filepath.Join(dir, "signed.msi")
	if o, err := exec.Command("osslsigncode", "sign", "-certs", certs, "-key", key, "-h", "sha256", "-in", msi, "-out", out).CombinedOutput(); err != nil {
		b.Fatalf("osslsigncode: %v\n%s", err, o)
	}
	os.Remove(msi)
	return out
}
