package attribution

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/internal/memtest"
)

// A click token carrying a bomb in its claims (within the 4096 bytes a
// token may be) or a huge one is refused as bad_signature before anything
// is looked up, and refusing it allocates under 256 KiB. The bounds are the
// token package's (sdk/attribution), which both sides parse with.
func TestClickTokenBombs(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"Ed25519","kid":"sk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","typ":"xpromo-click+jwt"}`))
	sig := b64(make([]byte, 64))
	s := &Service{}
	for class, claims := range map[string]string{
		"deep":     `{"jti":` + strings.Repeat("[", 1300) + strings.Repeat("]", 1300) + `}`,
		"wide":     `{"jti":[` + strings.Repeat("0,", 1300) + `0]}`,
		"long key": `{"` + strings.Repeat("k", 2700) + `":1}`,
		"huge":     `{"jti":"` + strings.Repeat("x", 8<<10) + `"}`,
	} {
		raw := header + "." + b64([]byte(claims)) + "." + sig
		var r *refusal
		var err error
		memtest.Under(t, 256<<10, "click token "+class, func() { _, r, err = s.verifyClick(context.Background(), raw, time.Now()) })
		if err != nil || r == nil || r.code != FraudBadSignature {
			t.Errorf("%s: refusal %+v, error %v; want %s", class, r, err, FraudBadSignature)
		}
	}
}
