package gate_test

import (
	"crypto/sha256"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/gatetest"
	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

// BenchmarkGateDMG gates (gate.Inspect: SHA-256 of the file, bundle_match,
// signed) a signed, notarised .dmg whose HFS+ volume is 30 MB and 300 MB:
// a UDZO image whose volume holds the app and a payload, 90% random bytes
// (zlib chunks, stored as they are) and 10% zeros (zero chunks). It reports the peak heap above the
// baseline while gating (sampled every millisecond), which should not grow
// with the image: only the chunks a read touches are decoded. The ULFO and
// ULMO variants are the same volume with every chunk LZFSE (the fixture's
// encoder) or LZMA (an xz stream) — zeros included, as hdiutil writes them.
func BenchmarkGateDMG(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes int
		chunk uint32
	}{{"30MB", 30 << 20, 0}, {"300MB", 300 << 20, 0},
		{"ULFO-30MB", 30 << 20, fixture.ChunkLZFSE}, {"ULFO-300MB", 300 << 20, fixture.ChunkLZFSE},
		{"ULMO-30MB", 30 << 20, fixture.ChunkLZMA}, {"ULMO-300MB", 300 << 20, fixture.ChunkLZMA}} {
		b.Run(size.name, func(b *testing.B) {
			path := buildBenchDMG(b, size.bytes, size.chunk)
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			// What hashing the file alone costs (Inspect hashes it, as the
			// download does), to tell it from the gate's reads.
			hashStart := time.Now()
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(sha256.New(), f)
			f.Close()
			hashMs := float64(time.Since(hashStart).Microseconds()) / 1000
			p := gatetest.Certs()
			o := gate.InspectOptions{Roots: p.Root.Pool()}
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			peak := sampleHeap()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ins, err := gate.Inspect(ctx, path, o)
				if err != nil || !ins.Pass {
					b.Fatalf("%v %+v", err, ins)
				}
			}
			b.StopTimer()
			max := peak()
			b.ReportMetric(float64(max-base.HeapAlloc)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
			b.ReportMetric(hashMs, "sha256-ms")
		})
	}
}

func buildBenchDMG(b *testing.B, size int, chunk uint32) string {
	b.Helper()
	payload := make([]byte, size*9/10)
	rand.New(rand.NewSource(1)).Read(payload)
	img := gatetest.DMGChunks("com.snip.app", gatetest.AppOptions{Signer: gatetest.Certs().DevID, Notarized: true}, chunk,
		fixture.HFSFile{Name: "Hello.app/Contents/Resources/payload.bin", Data: payload},
		fixture.HFSFile{Name: "Hello.app/Contents/Resources/zeros.bin", Data: make([]byte, size-size*9/10)})
	path := filepath.Join(b.TempDir(), "bench.dmg")
	if err := os.WriteFile(path, img, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// sampleHeap samples HeapAlloc every millisecond until the returned
// function is called, which returns the highest value seen.
func sampleHeap() func() uint64 {
	var (
		mu   sync.Mutex
		max  uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			mu.Lock()
			max = maxU(max, m.HeapAlloc)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return max
	}
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}
