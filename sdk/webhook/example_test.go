package webhook_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/xpromo/xpromo/sdk/webhook"
)

// A receiver verifies every request with the middleware and dedupes on
// webhook-id before acting.
func ExampleVerifier_Middleware() {
	// During a rotation, give both the new and the old secret.
	v, err := webhook.NewVerifier(os.Getenv("XPROMO_WEBHOOK_SECRET"))
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/xpromo/webhooks", v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // verified
		id := r.Header.Get(webhook.HeaderID)
		// Skip id if already handled; otherwise handle body and record id.
		_, _ = id, body
		w.WriteHeader(http.StatusNoContent)
	})))
}

// Verify checks one message; the errors say why it failed.
func ExampleVerifyAt() {
	header := http.Header{}
	header.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	header.Set("webhook-timestamp", "1614265330")
	header.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	body := []byte(`{"test": 2432232314}`)
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

	signedAt := time.Unix(1614265330, 0)
	fmt.Println(webhook.VerifyAt(secret, header, body, 5*time.Minute, signedAt.Add(time.Minute)))
	fmt.Println(webhook.VerifyAt(secret, header, body, 5*time.Minute, signedAt.Add(time.Hour)))
	fmt.Println(webhook.VerifyAt(secret, header, []byte(`{"test": 1}`), 5*time.Minute, signedAt))
	// Output:
	// <nil>
	// webhook: timestamp too old: signed 1h0m0s ago, tolerance 5m0s
	// webhook: no matching signature
}
