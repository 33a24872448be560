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
