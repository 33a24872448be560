package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/ratelimit"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// sdkKey makes an SDK key and registers it with the app.
func (s *testServer) sdkKey(appID, apiKey string) attribution.KeyPair {
	s.t.Helper()
	kp, err := attribution.GenerateKey(nil)
	require.NoError(s.t, err)
	res := s.do(http.MethodPost, "/v1/apps/"+appID+"/sdk-keys", apiKey, xpromo.RegisterSDKKeyRequest{PublicKey: attribution.EncodePublicKey(kp.Public)})
	require.Equal(s.t, http.StatusCreated, res.status, res.body)
	return kp
}

// signedFill is a fill request of appID signed with kp at `at`.
func signedFill(t *testing.T, kp attribution.KeyPair, appID string, at time.Time) xpromo.FillRequest {
	t.Helper()
	r := xpromo.FillRequest{AppID: appID, Slot: xpromo.SlotAboutWindow, Platform: xpromo.PlatformMac, DeviceID: "dev_Zk3pV0m2Qm8y1c9tXr4s5A", Locale: "de-CH"}
	require.NoError(t, r.Sign(kp, at))
	return r
}

// TestSDKFillIsSigned: POST /v1/sdk/fill serves only requests signed by a
// registered, unrevoked SDK key of the app, over exactly the request, at the
// server's time; everything else is a 4xx with a catalogued code (never a
// 5xx), and only the app's own signed fills spend its fill budget.
func TestSDKFillIsSigned(t *testing.T) {
	budget := httpapi.FillPolicy
	httpapi.FillPolicy = ratelimit.Policy{Name: budget.Name, Limit: 3, Window: budget.Window}
	t.Cleanup(func() { httpapi.FillPolicy = budget })
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		start := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		srv := serve(t, s, start, unlimited)
		pub, pubKey := srv.newApp() // pending: its fills are answered publisher_not_eligible
		kp := srv.sdkKey(pub, pubKey)
		other := srv.register(appRequest("Other", xpromo.PlatformMac))
		otherKey := srv.sdkKey(other.AppID, other.APIKey)
		revoked := srv.sdkKey(pub, pubKey)
		res := srv.do(http.MethodPost, "/v1/apps/"+pub+"/sdk-keys/"+revoked.ID+"/revoke", pubKey, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		unregistered, err := attribution.GenerateKey(nil)
		require.NoError(t, err)
		now := srv.clock.Now()
		good := signedFill(t, kp, pub, now)

		with := func(edit func(r *xpromo.FillRequest)) xpromo.FillRequest {
			r := good
			edit(&r)
			return r
		}
		skew := attribution.DefaultClockSkew
		for name, tc := range map[string]struct {
			body   any
			status int
			code   string
		}{
			"unsigned":               {`{"app_id":"` + pub + `","slot":"about_window","platform":"mac"}`, 422, "missing_field"},
			"empty signature":        {with(func(r *xpromo.FillRequest) { r.Signature = "" }), 422, "missing_field"},
			"garbage signature":      {with(func(r *xpromo.FillRequest) { r.Signature = "x.y.z" }), 403, "fraud_bad_signature"},
			"another app's key":      {signedFill(t, otherKey, pub, now), 403, "fraud_bad_signature"},
			"an unregistered key":    {signedFill(t, unregistered, pub, now), 403, "fraud_bad_signature"},
			"a revoked key":          {signedFill(t, revoked, pub, now), 403, "fraud_bad_signature"},
			"another app's fill":     {with(func(r *xpromo.FillRequest) { r.AppID = other.AppID }), 403, "fraud_bad_signature"},
			"another slot":           {with(func(r *xpromo.FillRequest) { r.Slot = xpromo.SlotBeforeQuit }), 403, "fraud_bad_signature"},
			"another device":         {with(func(r *xpromo.FillRequest) { r.DeviceID = "dev_else" }), 403, "fraud_bad_signature"},
			"stale":                  {signedFill(t, kp, pub, now.Add(-skew-time.Second)), 403, "fraud_token_expired"},
			"from the future":        {signedFill(t, kp, pub, now.Add(skew+time.Second)), 403, "fraud_token_expired"},
			"NUL in app_id":          {with(func(r *xpromo.FillRequest) { r.AppID = "a\x00b" }), 400, "invalid_encoding"}, // the edge's input policy
			"app_id of 200 bytes":    {with(func(r *xpromo.FillRequest) { r.AppID = strings.Repeat("a", 200) }), 422, "invalid_app_id"},
			"device_id of 1 MB":      {with(func(r *xpromo.FillRequest) { r.DeviceID = strings.Repeat("d", 1_000_000) }), 422, "invalid_device_id"},
			"device_id with NULs":    {with(func(r *xpromo.FillRequest) { r.DeviceID = "dev\x00\x00" }), 400, "invalid_encoding"},
			"locale of 100 KB":       {with(func(r *xpromo.FillRequest) { r.Locale = strings.Repeat("de-", 33_000) + "CH" }), 422, "invalid_locale"},
			"locale with a NUL":      {with(func(r *xpromo.FillRequest) { r.Locale = "de\x00" }), 400, "invalid_encoding"},
			"slot of 100 KB":         {with(func(r *xpromo.FillRequest) { r.Slot = xpromo.Slot(strings.Repeat("s", 100_000)) }), 422, "invalid_slot"},
			"unknown platform":       {with(func(r *xpromo.FillRequest) { r.Platform = "linux" }), 422, "invalid_platform"},
			"signature of 10 KB":     {with(func(r *xpromo.FillRequest) { r.Signature = strings.Repeat("A", 10_000) }), 422, "too_long"}, // over openapi.json's maxLength
			"unknown field":          {`{"app_id":"` + pub + `","slot":"about_window","platform":"mac","signature":"` + good.Signature + `","iat":1}`, 422, "unknown_field"},
			"signature not a string": {`{"app_id":"` + pub + `","slot":"about_window","platform":"mac","signature":7}`, 422, "invalid_type"},
		} {
			res := srv.do(http.MethodPost, "/v1/sdk/fill", "", tc.body)
			assert.Equal(t, tc.status, res.status, "%s: %s", name, res.body)
			assert.Equal(t, tc.code, res.code(t), name)
			assert.Less(t, len(res.body), 2000, "%s: the refusal echoes the request", name)
		}

		// None of those spent the app's budget (3 here): its own signed
		// fills get through, then the budget is spent.
		for i := range 3 {
			res := srv.do(http.MethodPost, "/v1/sdk/fill", "", good)
			require.Equal(t, http.StatusOK, res.status, "signed fill %d: %s", i+1, res.body)
			var f xpromo.FillResponse
			res.decode(t, &f)
			require.NotNil(t, f.NoFillReason)
			assert.Equal(t, xpromo.NoFillPublisherNotEligible, *f.NoFillReason)
		}
		res = srv.do(http.MethodPost, "/v1/sdk/fill", "", good)
		assert.Equal(t, http.StatusTooManyRequests, res.status, res.body)
		assert.Equal(t, "rate_limited", res.code(t))
		// Still refused for a stranger: the signature comes before the
		// budget, so a forged fill never learns or spends it.
		res = srv.do(http.MethodPost, "/v1/sdk/fill", "", signedFill(t, unregistered, pub, now))
		assert.Equal(t, http.StatusForbidden, res.status, res.body)
	})
}
