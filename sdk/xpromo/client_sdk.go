package xpromo

import (
	"context"
	"net/http"
	"time"
)

// Attribution (docs/protocol.md, docs/attribution.md): the app team's SDK
// keys and chains (API key), the in-app SDK's endpoints under /v1/sdk/ (no
// credential at all), and the operators' test clock and clearing sweep
// (admin token).

// RegisterSDKKey registers the public half of an SDK key pair with the app
// (POST /v1/apps/{app_id}/sdk-keys); params.PublicKey is
// attribution.EncodePublicKey of the key. The answer's KeyID is
// attribution.KeyID of the key, the "kid" of what it signs. Registering a
// key the app already holds answers it again (200 instead of 201; see
// WithResponse).
//
// Refusals: 422 invalid_public_key; 409 sdk_key_in_use (another app's
// key), sdk_key_revoked, too_many_sdk_keys (10 not revoked); 404 not_found
// for another app's id.
func (c *Client) RegisterSDKKey(ctx context.Context, appID string, params *RegisterSDKKeyRequest, opts ...CallOption) (*SDKKey, error) {
	out := new(SDKKey)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/sdk-keys", appID), body: nonNil(params)}, out, opts)
	return result(out, err)
}

// ListSDKKeys lists the app's registered SDK keys, revoked ones included
// (GET /v1/apps/{app_id}/sdk-keys).
func (c *Client) ListSDKKeys(ctx context.Context, appID string, opts ...CallOption) (*SDKKeyList, error) {
	out := new(SDKKeyList)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/sdk-keys", appID)}, out, opts)
	return result(out, err)
}

// RevokeSDKKey revokes one of the app's SDK keys (POST
// /v1/apps/{app_id}/sdk-keys/{key_id}/revoke) and returns it, with its
// RevokedAt: from now on nothing it signs verifies. Revoking a revoked key
// changes nothing.
func (c *Client) RevokeSDKKey(ctx context.Context, appID, keyID string, opts ...CallOption) (*SDKKey, error) {
	out := new(SDKKey)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/sdk-keys/%s/revoke", appID, keyID)}, out, opts)
	return result(out, err)
}

// GetChain reads an event chain (GET /v1/chains/{chain_id}), the record a
// LedgerLine's EventChainID names, with the click token and the install
// countersignature. Only the chain's publisher and advertiser apps may read
// it; for any other caller it is 404 not_found, like a missing one.
func (c *Client) GetChain(ctx context.Context, chainID string, opts ...CallOption) (*Chain, error) {
	out := new(Chain)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/chains/%s", chainID)}, out, opts)
	return result(out, err)
}

// The SDK* methods are what the SDK inside an app sends. They never carry
// a credential, even from a client built WithAPIKey or WithAdminToken: the
// in-app SDK holds no API key, and these endpoints need none (what they
// assert is signed with the app's SDK key instead). Pass WithIdempotencyKey
// to make a report safe to repeat, as sdk/slots does for its queued events.

// SDKFill asks for a creative for one of the publisher's slots (POST
// /v1/sdk/fill). params must be signed with the publisher app's SDK key
// (FillRequest.Sign) just before the call. No fill is an answer, not an
// error: Filled false with a NoFillReason. The server counts each fill as
// an impression, so ask only when the slot is about to be shown.
//
// A fill is sent without an Idempotency-Key (unless the call passes
// WithIdempotencyKey): it stores nothing, so a retry may simply fill
// again, and a keyed fill would cost the server two write transactions
// (recording the key, then its answer) on the path every impression takes.
// A retry after a lost answer gets a new offer and is counted as one more
// fill.
//
// Refusals: 422 invalid_app_id, invalid_slot, invalid_platform,
// invalid_device_id, invalid_locale, missing_field (no signature); 403
// fraud_bad_signature (the key is not a registered, unrevoked key of the
// app, the signature does not verify, or it signs another request),
// fraud_token_expired (signed further than the clock skew from the
// server's clock); 429 rate_limited (per IP, and per app once the
// signature verified).
func (c *Client) SDKFill(ctx context.Context, params *FillRequest, opts ...CallOption) (*FillResponse, error) {
	out := new(FillResponse)
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/sdk/fill", body: nonNil(params), auth: authNone, repeatable: true}, out, opts)
	return result(out, err)
}

// SDKClick reports a click with the click token the publisher's SDK signed
// (POST /v1/sdk/click) and returns the chain it opened, `clicked`. The same
// token again answers the same chain.
//
// Refusals: 403 with the fraud code (fraud_bad_signature,
// fraud_token_expired, fraud_token_reused, …; see ChainReason).
func (c *Client) SDKClick(ctx context.Context, params *ClickRequest, opts ...CallOption) (*ClickResponse, error) {
	out := new(ClickResponse)
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/sdk/click", body: nonNil(params), auth: authNone}, out, opts)
	return result(out, err)
}

// SDKInstall claims an install with the click token and the advertiser
// SDK's countersignature (POST /v1/sdk/install) and returns the chain,
// `installed` (the same claim again answers the chain in its current
// state).
//
// Refusals: 403 with the fraud code of the rule that refused the claim;
// 409 budget_exhausted or insufficient_funds when the advertiser cannot
// pay. The chain is rejected either way; there is nothing to retry.
func (c *Client) SDKInstall(ctx context.Context, params *InstallRequest, opts ...CallOption) (*InstallResponse, error) {
	out := new(InstallResponse)
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/sdk/install", body: nonNil(params), auth: authNone}, out, opts)
	return result(out, err)
}

// SDKHeartbeat sends a signed heartbeat (POST /v1/sdk/heartbeat) and
// returns the chain's state after it: `activated_48h` once one arrived 48
// to 72 hours after the install.
//
// Refusals: 403 fraud_bad_signature, fraud_token_expired (stale ts),
// fraud_token_reused (seq not above the last); 404 not_found when the
// server has no such install.
func (c *Client) SDKHeartbeat(ctx context.Context, params *HeartbeatRequest, opts ...CallOption) (*HeartbeatResponse, error) {
	out := new(HeartbeatResponse)
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/sdk/heartbeat", body: nonNil(params), auth: authNone}, out, opts)
	return result(out, err)
}

// AdminGetClock reads the server's clock, which every domain reads, and
// whether it can be advanced (GET /v1/admin/clock).
func (c *Client) AdminGetClock(ctx context.Context, opts ...CallOption) (*ClockState, error) {
	out := new(ClockState)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/admin/clock", auth: authAdmin}, out, opts)
	return result(out, err)
}

// AdminAdvanceClock moves the server's test clock forward by d (POST
// /v1/admin/clock/advance) and returns the clock after the move, so that a
// client can cross attribution's 15-minute and 48-hour marks without
// waiting. d is sent in whole seconds (truncated); the server accepts 1 s
// to 365 days (422 invalid_duration otherwise) and refuses outside test
// mode (403 test_mode_only).
func (c *Client) AdminAdvanceClock(ctx context.Context, d time.Duration, opts ...CallOption) (*ClockState, error) {
	out := new(ClockState)
	_, err := c.call(ctx, request{
		method: http.MethodPost,
		path:   "/v1/admin/clock/advance",
		body:   AdvanceClockRequest{Seconds: int64(d / time.Second)},
		auth:   authAdmin,
	}, out, opts)
	return result(out, err)
}

// AdminSweep runs the clearing sweep now (POST
// /v1/admin/attribution/sweep) and returns what it settled: activated
// chains cleared, installed chains whose 72-hour window closed refunded.
// The server also sweeps in the background every few seconds; this is for
// a client that just advanced the test clock.
func (c *Client) AdminSweep(ctx context.Context, opts ...CallOption) (*SweepResult, error) {
	out := new(SweepResult)
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/admin/attribution/sweep", auth: authAdmin}, out, opts)
	return result(out, err)
}
