package webhook_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/webhook"
)

// FuzzVerifyHeaders feeds arbitrary timestamp and signature headers. Verify
// must never panic, must answer every failure with one of the package's
// errors, and must accept only a header that carries the right signature.
func FuzzVerifyHeaders(f *testing.F) {
	f.Add("1614265330", specSig)
	f.Add("1614265330", "v1,a v1a,b "+specSig)
	f.Add("-1", "v1,")
	f.Add("", ",,,")
	f.Add("00001614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE")
	f.Add("1614265330", "v1,"+string(make([]byte, 44)))
	known := []*webhook.Error{webhook.ErrMissingHeader, webhook.ErrInvalidTimestamp, webhook.ErrInvalidSignature,
		webhook.ErrTimestampTooOld, webhook.ErrTimestampTooNew, webhook.ErrNoMatchingSignature}
	f.Fuzz(func(t *testing.T, ts, sig string) {
		h := http.Header{}
		h.Set(webhook.HeaderID, specID)
		h.Set(webhook.HeaderTimestamp, ts)
		h.Set(webhook.HeaderSignature, sig)
		err := webhook.VerifyAt(specSecret, h, []byte(specBody), time.Hour, specTime)
		if err == nil {
			if ts != "1614265330" {
				t.Fatalf("verified with timestamp %q", ts)
			}
			return
		}
		for _, k := range known {
			if errors.Is(err, k) {
				return
			}
		}
		t.Fatalf("unexpected error %v", err)
	})
}
