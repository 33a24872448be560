package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The endpoints of attribution that the REST client does not wrap (yet)
// are called through Client.Do with the wire types of sdk/xpromo.

// operator is the network's operator: approvals, the test clock and the
// clearing sweep, with the admin token.
type operator struct {
	client *xpromo.Client // WithAdminToken
	token  string
}

// admin sends the admin token on a Do call (Do sends the API key).
func (o operator) admin() xpromo.CallOption {
	return xpromo.WithHeader("Authorization", "Bearer "+o.token)
}

// clock reads the server's clock (GET /v1/admin/clock).
func (o operator) clock(ctx context.Context) (xpromo.ClockState, error) {
	var c xpromo.ClockState
	err := o.client.Do(ctx, http.MethodGet, "/v1/admin/clock", nil, &c, o.admin())
	return c, err
}

// advance moves the server's test clock forward by d (POST
// /v1/admin/clock/advance; test mode only).
func (o operator) advance(ctx context.Context, d time.Duration) (xpromo.ClockState, error) {
	var c xpromo.ClockState
	err := o.client.Do(ctx, http.MethodPost, "/v1/admin/clock/advance",
		xpromo.AdvanceClockRequest{Seconds: int64(d / time.Second)}, &c, o.admin())
	return c, err
}

// sweep runs the clearing sweep now (POST /v1/admin/attribution/sweep);
// the server also runs it in the background.
func (o operator) sweep(ctx context.Context) (xpromo.SweepResult, error) {
	var r xpromo.SweepResult
	err := o.client.Do(ctx, http.MethodPost, "/v1/admin/attribution/sweep", nil, &r, o.admin())
	return r, err
}

// registerSDKKey registers the public half of an app's SDK key (POST
// /v1/apps/{app_id}/sdk-keys) with the app's API key: what
// `xpromo keys sdk register` does.
func registerSDKKey(ctx context.Context, app *xpromo.Client, appID string, key attribution.KeyPair) (xpromo.SDKKey, error) {
	var k xpromo.SDKKey
	err := app.Do(ctx, http.MethodPost, "/v1/apps/"+url.PathEscape(appID)+"/sdk-keys",
		xpromo.RegisterSDKKeyRequest{PublicKey: attribution.EncodePublicKey(key.Public)}, &k)
	return k, err
}

// getChain reads an event chain (GET /v1/chains/{chain_id}), as one of its
// two apps.
func getChain(ctx context.Context, app *xpromo.Client, chainID string) (xpromo.Chain, error) {
	var c xpromo.Chain
	err := app.Do(ctx, http.MethodGet, "/v1/chains/"+url.PathEscape(chainID), nil, &c)
	return c, err
}

// waitReady polls GET /readyz until it answers 200 or timeout passes.
func waitReady(ctx context.Context, baseURL string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/readyz answered %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("the server at %s was not ready within %s: %v", baseURL, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
