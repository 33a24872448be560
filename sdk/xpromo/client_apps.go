package xpromo

import (
	"context"
	"net/http"
)

// RegisterApp registers an app (POST /v1/apps; no key needed). The answer
// carries the app's API key, shown only here: keep it, and use it with
// c.With(WithAPIKey(resp.APIKey)). The app starts `pending`: the vetting
// gate and a scoring job are queued.
//
// Validation failures are 422 *Error (e.g. invalid_platform).
func (c *Client) RegisterApp(ctx context.Context, params *RegisterAppRequest, opts ...CallOption) (*RegisterAppResponse, error) {
	out := new(RegisterAppResponse)
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/apps", body: nonNil(params)}, out, opts)
	return result(out, err)
}

// GetScore reads an app's status, gate outcomes and score (GET
// /v1/apps/{app_id}/score). Another app's id answers 404 not_found, like a
// missing one.
func (c *Client) GetScore(ctx context.Context, appID string, opts ...CallOption) (*Score, error) {
	out := new(Score)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/score", appID)}, out, opts)
	return result(out, err)
}

// GetJob reads a background job of the app (GET
// /v1/apps/{app_id}/jobs/{job_id}), e.g. RegisterAppResponse.ScoringJobID.
func (c *Client) GetJob(ctx context.Context, appID, jobID string, opts ...CallOption) (*Job, error) {
	out := new(Job)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/jobs/%s", appID, jobID)}, out, opts)
	return result(out, err)
}

// RotateKey issues a new API key for the app (POST
// /v1/apps/{app_id}/keys/rotate). Every key issued before it keeps working
// until PreviousKeyExpiresAt (24 hours). The client keeps sending its old
// key; switch with c.With(WithAPIKey(rotation.APIKey)).
func (c *Client) RotateKey(ctx context.Context, appID string, opts ...CallOption) (*KeyRotation, error) {
	out := new(KeyRotation)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/keys/rotate", appID)}, out, opts)
	return result(out, err)
}

// result returns out, or nil and err.
func result[T any](out *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return out, nil
}

// nonNil returns p, or a pointer to T's zero value when p is nil, so that a
// nil params still sends a JSON object (and the server reports the missing
// fields).
func nonNil[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

// RecheckGate runs the vetting gate again for an app the gate rejected
// (POST /v1/apps/{app_id}/gate/recheck): the app goes back to pending and
// the returned gate job is queued (a pending app gets its queued job).
// Refused with gate_recheck_refused for an app an operator decided or one
// already approved, and gate_domain_too_young (RetryAfter) while its
// domain is still too young.
func (c *Client) RecheckGate(ctx context.Context, appID string, opts ...CallOption) (*Job, error) {
	out := new(Job)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/gate/recheck", appID)}, out, opts)
	return result(out, err)
}

// VerifyContactCode answers the contact challenge with the 6-digit code
// from its email (POST /v1/apps/{app_id}/contact/verify). Wrong codes are
// contact_code_invalid; see docs/gate.md for the others.
func (c *Client) VerifyContactCode(ctx context.Context, appID, code string, opts ...CallOption) (*ContactVerification, error) {
	out := new(ContactVerification)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/contact/verify", appID), body: &ContactVerifyRequest{Code: code}}, out, opts)
	return result(out, err)
}

// ResendContactChallenge mails the app's contact address a new challenge
// (POST /v1/apps/{app_id}/contact/resend); contact_resend_too_soon (429,
// RetryAfter) within one a minute or five a day.
func (c *Client) ResendContactChallenge(ctx context.Context, appID string, opts ...CallOption) (*ContactChallenge, error) {
	out := new(ContactChallenge)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/contact/resend", appID)}, out, opts)
	return result(out, err)
}

// GetApp reads the app's registration and state (GET /v1/apps/{app_id}):
// its name, platform, bundle id, domain, download URL, contact, category,
// appcast URL, status and earn mode. Another app's id answers 404
// not_found, like a missing one.
func (c *Client) GetApp(ctx context.Context, appID string, opts ...CallOption) (*App, error) {
	out := new(App)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s", appID)}, out, opts)
	return result(out, err)
}

// UpdateApp changes the app's appcast URL (PATCH /v1/apps/{app_id}):
// params.AppcastURL = String(url) sets it, nil clears it. A change queues a
// scoring run that reads the new feed, due at once or a minute after the
// last run ended (AppUpdate.ScoringJobID).
// Refusals: 422 invalid_appcast_url (checked as at registration), and
// field_not_changeable for the other registration fields; a nil params
// sends {} (422 missing_field). Sending the same
// change again is harmless (it changes nothing and queues nothing), so the
// call needs no Idempotency-Key.
func (c *Client) UpdateApp(ctx context.Context, appID string, params *UpdateAppRequest, opts ...CallOption) (*AppUpdate, error) {
	var body any = params
	if params == nil {
		// {}, which the server refuses (missing_field): a nil params must
		// not send appcast_url null and clear the URL.
		body = struct{}{}
	}
	out := new(AppUpdate)
	_, err := c.call(ctx, request{method: http.MethodPatch, path: pathf("/v1/apps/%s", appID), body: body}, out, opts)
	return result(out, err)
}
