package httpapi

import (
	"net/netip"

	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/lifecycle"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/ratelimit"
	"github.com/xpromo/xpromo/server/webhooks"
)

// Services are the domain components behind the /v1 API. cmd (through the
// wire package) builds them; tests build them on a real store.
type Services struct {
	Auth        Authenticator
	AdminToken  string // guards /v1/admin; empty closes the admin surface
	Apps        *apps.Service
	Market      *market.Service
	Payments    *payments.Service
	Ledger      ledger.Reader
	Idempotency *idempotency.Service
	// Limiter counts requests per caller (limits.go) under ReadPolicy (GET,
	// HEAD) or WritePolicy (other methods); nil disables rate limiting.
	Limiter                 ratelimit.Limiter
	ReadPolicy, WritePolicy ratelimit.Policy
	// Guide is integration-guide.md, served by GET /v1/integration-guide.
	Guide []byte
	// GuideProtocol and GuideVectors are docs/protocol.md and the test
	// vectors, served beside the guide (GET /v1/integration-guide/…).
	GuideProtocol, GuideVectors []byte
	// BaseURL is the server's public URL (scheme://host[:port]), used in links
	// it hands out, such as checkout_url.
	BaseURL string

	// Attribution serves the SDK endpoints, SDK keys and chains (sdk.go).
	Attribution *attribution.Service
	// Gate backs the vetting gate's endpoints (gate.go).
	Gate *gate.Service
	// Webhooks serves the webhook endpoints and the events API (webhooks.go).
	Webhooks *webhooks.Service
	// Complaints serves the complaint endpoints (complaints.go).
	Complaints *complaints.Service
	// Lifecycle answers GET /v1/apps/{app_id}/thresholds (apps.go): how
	// close an app is to each lifecycle threshold; nil leaves the route out.
	Lifecycle *lifecycle.Service
	// Clock is the server's clock, which test mode can advance (sdk.go).
	Clock TestClock
	// StripeWebhook receives Stripe's events at POST /v1/stripe/webhook;
	// nil (test mode without Stripe) leaves the route out.
	StripeWebhook StripeWebhook
	// TrustedProxies are the proxies whose X-Forwarded-For the SDK
	// endpoints believe for the client's address.
	TrustedProxies []netip.Prefix
	// SignInLinks mints the dashboard's sign-in links (dashboard.go); nil
	// leaves POST /v1/dashboard/sign-in-links out.
	SignInLinks SignInLinks
}
