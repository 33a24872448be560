package storetest

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/ledger"
)

// Bench runs the ledger benchmarks on a store; newStore must return an empty
// store. Each benchmark reports ops/s (operations committed per second) and
// verifies the whole ledger afterwards: a fast ledger that breaks an
// invariant fails the benchmark.
//
//   - Post/parallel: single operations (a top-up or an escrow hold, 2 lines
//     each) from 16 concurrent posters over 1,000 apps through Ledger.Post,
//     whose group commit shares transactions between them.
//   - PostSolo/parallel: the same, one transaction per operation.
//   - PostBatch/100 and /500: 100 or 500 operations per transaction from 1
//     poster, the shape of the clearing sweep.
//   - Lines/page100: reading one 100-line page of a wallet's ledger.
func Bench(b *testing.B, newStore func(b *testing.B) ledger.Store) {
	// Post shares transactions between concurrent posters (group commit);
	// PostSolo posts the same load one transaction per operation (a batch
	// of one), as Post did before: the two side by side in one run.
	b.Run("Post/parallel", func(b *testing.B) {
		benchParallel(b, newStore(b), func(l *ledger.Ledger, op ledger.Operation) error {
			_, err := l.Post(ctx, op)
			return err
		})
	})
	b.Run("PostSolo/parallel", func(b *testing.B) {
		benchParallel(b, newStore(b), func(l *ledger.Ledger, op ledger.Operation) error {
			_, errs, err := l.PostBatch(ctx, []ledger.Operation{op})
			if err == nil {
				err = errs[0]
			}
			return err
		})
	})
	for _, size := range []int{100, 500} {
		b.Run(fmt.Sprintf("PostBatch/%d", size), func(b *testing.B) {
			s := newStore(b)
			l := &ledger.Ledger{Store: s, Now: time.Now}
			b.ResetTimer()
			for i := range b.N {
				ops := make([]ledger.Operation, size)
				for j := range ops {
					ops[j], _ = ledger.TopUp(fmt.Sprintf("b%d-%d", i, j), fmt.Sprintf("app%04d", (i*size+j)%1000), 5000, "")
				}
				if _, errs, err := l.PostBatch(ctx, ops); err != nil || errs[0] != nil {
					b.Fatal(err, errs[0])
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "ops/s")
			verifyBench(b, s)
		})
	}
	b.Run("Lines/page100", func(b *testing.B) {
		s := newStore(b)
		l := &ledger.Ledger{Store: s, Now: time.Now}
		ops := make([]ledger.Operation, 1000)
		for j := range ops {
			ops[j], _ = ledger.TopUp(fmt.Sprintf("r%d", j), "reader", 5000, "")
		}
		if _, _, err := l.PostBatch(ctx, ops); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			lines, err := s.Lines(ctx, ledger.Wallet("reader"), ledger.LineQuery{AfterSeq: int64(i%9) * 100, Limit: 100})
			if err != nil || len(lines) != 100 {
				b.Fatal(err, len(lines))
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
	})
}

// benchParallel posts from 16 posters over 1,000 apps through post: top-ups
// and escrow holds (which may find their wallet short: not an error).
func benchParallel(b *testing.B, s ledger.Store, post func(*ledger.Ledger, ledger.Operation) error) {
	l := &ledger.Ledger{Store: s, Now: time.Now}
	var n atomic.Int64
	b.SetParallelism(8) // 8 × GOMAXPROCS posters
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
		for pb.Next() {
			i := n.Add(1)
			app := fmt.Sprintf("app%04d", rng.IntN(1000))
			op, _ := ledger.TopUp(fmt.Sprintf("b%d", i), app, 5000, "")
			if i%2 == 0 { // every other operation holds escrow from a funded wallet
				op, _ = ledger.EscrowHold(fmt.Sprintf("h%d", i), ledger.Hold{ID: fmt.Sprintf("ch%d", i), Advertiser: app, Publisher: "pub", Amount: 1, ChainID: fmt.Sprintf("ch%d", i)})
			}
			if err := post(l, op); err != nil && i%2 == 1 {
				b.Error(err)
			}
		}
	})
	report(b, s)
}

func report(b *testing.B, s ledger.Store) {
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	verifyBench(b, s)
}

func verifyBench(b *testing.B, s ledger.Store) {
	rep, err := ledger.Verify(ctx, s)
	if err != nil {
		b.Fatal(err)
	}
	if !rep.OK() {
		b.Fatalf("%d invariant violations, first: %v", len(rep.Violations), rep.Violations[0])
	}
}
