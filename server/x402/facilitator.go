package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	wire "github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/server/jsonbound"
)

// Bounds of the answers of other services (docs/limits.md): bytes read, and
// the structure of the JSON within jsonbound.Answer. An answer beyond them
// is no answer: ErrUnknown from the facilitator, an error from the chain
// and the rate endpoint.
const (
	MaxFacilitatorAnswerBytes = 1 << 20
	MaxChainAnswerBytes       = 4 << 20
	MaxRateAnswerBytes        = 64 << 10
	// maxRateChars bounds the rate's text before big.Rat reads it: an
	// exponent as short as 1e9999999 would take seconds and megabytes.
	maxRateChars = 40
)

// ErrUnknown marks a facilitator call whose outcome is unknown: no answer
// (timeout, connection cut), a 5xx, or an answer that is not the x402
// response. For /settle it means the transfer may or may not have landed.
var ErrUnknown = errors.New("x402: facilitator outcome unknown")

// Facilitator is the client of an x402 facilitator's HTTP API (x402 v1
// spec §7): POST {URL}/verify and POST {URL}/settle with
// {x402Version, paymentPayload, paymentRequirements}.
type Facilitator struct {
	// URL is the facilitator's base URL, e.g. https://x402.org/facilitator.
	URL string
	// HTTP sends the requests: the server's outbound client, whose timeout
	// bounds each call.
	HTTP *http.Client
	// Header, when set, is added to every request (e.g. a facilitator's
	// API key).
	Header http.Header
}

// Verify asks the facilitator to verify p against q. A definitive answer
// (valid or not) has a nil error; an error wraps ErrUnknown.
func (f *Facilitator) Verify(ctx context.Context, p wire.PaymentPayload, q wire.Requirements) (wire.VerifyResponse, error) {
	var r wire.VerifyResponse
	err := f.post(ctx, "/verify", p, q, &r, func(raw map[string]json.RawMessage) bool { _, ok := raw["isValid"]; return ok })
	return r, err
}

// Settle asks the facilitator to settle p (send the transferWithAuthorization
// and wait for it). Success is r.Success with a transaction hash; a refusal
// is r.Success false with r.ErrorReason and a nil error (nothing moved); an
// error wraps ErrUnknown (the transfer may have landed).
func (f *Facilitator) Settle(ctx context.Context, p wire.PaymentPayload, q wire.Requirements) (wire.SettleResponse, error) {
	var r wire.SettleResponse
	err := f.post(ctx, "/settle", p, q, &r, func(raw map[string]json.RawMessage) bool { _, ok := raw["success"]; return ok })
	if err == nil && r.Success && r.Transaction == "" {
		return r, fmt.Errorf("%w: /settle answered success without a transaction hash", ErrUnknown)
	}
	return r, err
}

// post sends one call. 2xx and 4xx answers carrying the response's key
// field (has) are answers; anything else is ErrUnknown.
func (f *Facilitator) post(ctx context.Context, path string, p wire.PaymentPayload, q wire.Requirements, out any, has func(map[string]json.RawMessage) bool) error {
	body, err := json.Marshal(wire.FacilitatorRequest{X402Version: wire.Version, PaymentPayload: p, PaymentRequirements: q})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(f.URL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("x402: facilitator URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, vs := range f.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := f.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnknown, path, err)
	}
	defer resp.Body.Close()
	raw, err := jsonbound.Read(resp.Body, MaxFacilitatorAnswerBytes, jsonbound.Answer)
	if err != nil {
		return fmt.Errorf("%w: %s: reading the answer: %v", ErrUnknown, path, err)
	}
	return decodeAnswer(path, resp.StatusCode, raw, out, has)
}

// decodeAnswer reads a facilitator's answer (status, and raw, already within
// the bounds of jsonbound.Answer) into out, or fails with ErrUnknown.
func decodeAnswer(path string, status int, raw []byte, out any, has func(map[string]json.RawMessage) bool) error {
	if status >= 500 || status < 200 || (status >= 300 && status < 400) {
		return fmt.Errorf("%w: %s answered %d", ErrUnknown, path, status)
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil || !has(probe) || json.Unmarshal(raw, out) != nil {
		return fmt.Errorf("%w: %s answered %d with no x402 response", ErrUnknown, path, status)
	}
	return nil
}
