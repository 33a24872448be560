package webhooks_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/webhook"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
	"github.com/xpromo/xpromo/server/webhooks"
)

// BenchmarkDeliver measures the worker end to end, as each server instance
// runs it (Service.Run with package assembly's 4 deliverers): dispatching events into
// deliveries, claiming them, signing and POSTing them to a local receiver
// over keep-alive connections, and recording every attempt. One op is one
// delivery; 8 endpoints of one app receive every event. The receiver
// answers 204 at once, so the figure is the worker's own ceiling.
func BenchmarkDeliver(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchDeliver(b, storagetest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) { benchDeliver(b, storagetest.Postgres(b)) })
}

func benchDeliver(b *testing.B, s storage.Store) {
	const endpoints = 8
	clock := clocktest.New(start)
	svc := newService(s, clock)
	var got atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(recv.Close)
	addAppTB(b, s, "app_1")
	for range endpoints {
		if _, err := svc.CreateEndpoint(context.Background(), "app_1", xpromo.CreateWebhookEndpointRequest{URL: recv.URL, Events: xpromo.EventTypes}); err != nil {
			b.Fatal(err)
		}
	}
	events := (b.N + endpoints - 1) / endpoints
	var evs []outbox.Event
	for i := range events {
		evs = append(evs, outbox.New("app_1", xpromo.EventChainStateChanged, map[string]any{"chain": map[string]any{"chain_id": "chn_x", "state": "installed"}, "previous_state": "clicked", "i": i}, start.Add(time.Duration(i)*time.Microsecond)))
	}
	for len(evs) > 0 {
		n := min(len(evs), 1000)
		if err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error { return tx.InsertOutbox(ctx, evs[:n]) }); err != nil {
			b.Fatal(err)
		}
		evs = evs[n:]
	}
	want := int64(events * endpoints)

	b.ResetTimer()
	began := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { svc.Run(ctx, 4, 5*time.Millisecond) })
	for got.Load() < want {
		time.Sleep(time.Millisecond)
	}
	// The last claims' results are recorded before the figure is taken.
	for {
		st, err := svc.Deliver(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if st.Claimed == 0 {
			break
		}
	}
	cancel()
	wg.Wait()
	elapsed := time.Since(began)
	b.StopTimer()
	b.ReportMetric(float64(want)/elapsed.Seconds(), "deliveries/s")
	if n := got.Load(); n != want {
		b.Fatalf("the receiver got %d requests, want %d", n, want)
	}
}

// BenchmarkDeliverCeiling is the machine's ceiling for the sending half
// alone: the same client, body and signature, 8 senders POSTing to the same
// receiver, no database. BenchmarkDeliver divided by it is the share of the
// worker's time the store takes.
func BenchmarkDeliverCeiling(b *testing.B) {
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(recv.Close)
	client := webhooks.NewClient(outbound.Options{TestOnlyAllowLoopback: true})
	ev := outbox.New("app_1", xpromo.EventChainStateChanged, map[string]any{"chain": map[string]any{"chain_id": "chn_x", "state": "installed"}, "previous_state": "clicked"}, start)
	body, _ := json.Marshal(ev.Wire())
	secret := "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 32))
	b.SetParallelism(4) // 8 senders on 2 cores, as the worker's 8 endpoints
	began := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			sig, err := webhook.Sign(secret, ev.ID, start, body)
			if err != nil {
				b.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPost, recv.URL, bytes.NewReader(body))
			req.Header.Set("webhook-signature", sig)
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "requests/s")
}
