package conformance

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Errors and codes: one Error body shape, stable codes (seed-api "Errors";
// decisions §10; docs/errors.md).
func errorChecks() []Check {
	return []Check{
		{"every error answer has the Error body shape", checkErrorShape},
		{"registration refuses bad fields with 422 and a field code", checkRegistrationCodes},
		{"bodies: malformed JSON, unknown fields, wrong types, wrong media type, over 1 MiB", checkBodyCodes},
		{"unknown paths and methods answer with Error bodies", checkRoutingErrors},
	}
}

// checkErrorBody checks ex carries the Error body: {"error": {"code":
// string, "message": string, "retry_after": date-time or null}} as JSON.
func checkErrorBody(c *C, ex Exchange) {
	c.Helper()
	if ct := ex.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.Errorf("%s %s → %d: Content-Type %q, want application/json", ex.Method, ex.URL, ex.Status, ct)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(ex.Body, &body); err != nil {
		c.Errorf("%s: the error answer is not a JSON object: %v", ex, err)
		return
	}
	raw, ok := body["error"]
	if !ok {
		c.Errorf("%s: no \"error\" object", ex)
		return
	}
	var e map[string]json.RawMessage
	if err := json.Unmarshal(raw, &e); err != nil {
		c.Errorf("%s: \"error\" is not an object", ex)
		return
	}
	var code, msg string
	if json.Unmarshal(e["code"], &code) != nil || code == "" {
		c.Errorf("%s: error.code is not a non-empty string", ex)
	} else if !stableCode(code) {
		c.Errorf("%s: error.code %q is not a stable lowercase code", ex, code)
	}
	if json.Unmarshal(e["message"], &msg) != nil {
		c.Errorf("%s: error.message is not a string", ex)
	}
	ra, ok := e["retry_after"]
	if !ok {
		c.Errorf("%s: error.retry_after is missing (it is nullable, not optional)", ex)
	} else if string(ra) != "null" {
		var s string
		if json.Unmarshal(ra, &s) != nil {
			c.Errorf("%s: error.retry_after is neither null nor a string", ex)
		} else if _, err := time.Parse(time.RFC3339, s); err != nil {
			c.Errorf("%s: error.retry_after %q is not an RFC 3339 date-time", ex, s)
		}
	}
}

// errorCode is the error.code of an exchange's Error body ("" if none).
func errorCode(ex Exchange) string {
	var e xpromo.ErrorResponse
	if json.Unmarshal(ex.Body, &e) != nil {
		return ""
	}
	return e.Error.Code
}

// stableCode: lowercase letters, digits and underscores.
func stableCode(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return s != ""
}

func checkErrorShape(c *C) {
	a := c.NewApp()
	ctx := c.Ctx()
	// 401, 404, 422 (registration, top-up), 409 (payout), 400.
	_, err := c.Public().GetScore(ctx, a.ID)
	c.ExpectError(err, 401, "unauthorized", "score without a key")
	checkErrorBody(c, c.Last())
	_, err = a.Client.GetScore(ctx, missingLike(a.ID))
	c.ExpectError(err, 404, "not_found", "score of a missing app")
	checkErrorBody(c, c.Last())
	bad := Registration(xpromo.PlatformMac)
	bad.Platform = "linux"
	_, err = c.Public().RegisterApp(ctx, bad)
	c.ExpectError(err, 422, "invalid_platform", "registration with platform linux")
	checkErrorBody(c, c.Last())
	_, err = a.Client.TopUp(ctx, a.ID, &xpromo.TopUpParams{AmountCents: 4999})
	c.ExpectError(err, 422, "below_minimum", "top-up of 4999")
	checkErrorBody(c, c.Last())
	_, err = a.Client.RequestPayout(ctx, a.ID)
	c.ExpectError(err, 409, "below_minimum", "payout of an empty wallet")
	checkErrorBody(c, c.Last())
	checkErrorBody(c, c.Raw("POST", "/v1/apps", []byte(`{"name":`), "Content-Type", "application/json"))
}

func checkRegistrationCodes(c *C) {
	cases := []struct {
		name string
		mod  func(*xpromo.RegisterAppRequest)
		code string
	}{
		{"platform linux", func(r *xpromo.RegisterAppRequest) { r.Platform = "linux" }, "invalid_platform"},
		{"platform Mac (case matters)", func(r *xpromo.RegisterAppRequest) { r.Platform = "Mac" }, "invalid_platform"},
		{"no name", func(r *xpromo.RegisterAppRequest) { r.Name = "" }, "missing_field"},
		{"no platform", func(r *xpromo.RegisterAppRequest) { r.Platform = "" }, "missing_field"},
		{"no bundle_id", func(r *xpromo.RegisterAppRequest) { r.BundleID = "" }, "missing_field"},
		{"no domain", func(r *xpromo.RegisterAppRequest) { r.Domain = "" }, "missing_field"},
		{"no download_url", func(r *xpromo.RegisterAppRequest) { r.DownloadURL = "" }, "missing_field"},
		{"no contact_email", func(r *xpromo.RegisterAppRequest) { r.ContactEmail = "" }, "missing_field"},
		{"bundle_id without a dot", func(r *xpromo.RegisterAppRequest) { r.BundleID = "snip" }, "invalid_bundle_id"},
		{"domain with a scheme", func(r *xpromo.RegisterAppRequest) { r.Domain = "https://example.com" }, "invalid_domain"},
		{"relative download_url", func(r *xpromo.RegisterAppRequest) { r.DownloadURL = "/download.dmg" }, "invalid_url"},
		{"contact_email without @", func(r *xpromo.RegisterAppRequest) { r.ContactEmail = "team.example.com" }, "invalid_email"},
	}
	for _, tc := range cases {
		req := Registration(xpromo.PlatformMac)
		tc.mod(req)
		_, err := c.Public().RegisterApp(c.Ctx(), req)
		c.ExpectError(err, 422, tc.code, "registration with "+tc.name)
	}
}

func checkBodyCodes(c *C) {
	valid, _ := json.Marshal(Registration(xpromo.PlatformWin))
	var withExtra map[string]any
	_ = json.Unmarshal(valid, &withExtra)
	withExtra["colour"] = "blue"
	extra, _ := json.Marshal(withExtra)
	withExtra["colour"] = nil
	delete(withExtra, "colour")
	withExtra["name"] = 42
	wrongType, _ := json.Marshal(withExtra)
	huge := append(append([]byte(`{"name":"`), bytes.Repeat([]byte("a"), 1<<20+1)...), []byte(`"}`)...)

	for _, tc := range []struct {
		name   string
		body   []byte
		ctype  string
		status int
		code   string
	}{
		{"malformed JSON", []byte(`{"name":`), "application/json", 400, "malformed_json"},
		{"two JSON values", append(append([]byte{}, valid...), valid...), "application/json", 400, "malformed_json"},
		{"an unknown field", extra, "application/json", 422, "unknown_field"},
		{"a string field sent as a number", wrongType, "application/json", 422, "invalid_type"},
		{"Content-Type text/plain", valid, "text/plain", 415, "unsupported_media_type"},
		{"a body over 1 MiB", huge, "application/json", 413, "body_too_large"},
	} {
		ex := c.Raw("POST", "/v1/apps", tc.body, "Content-Type", tc.ctype)
		if ex.Status != tc.status {
			c.Errorf("POST /v1/apps with %s: status %d, want %d (%s)", tc.name, ex.Status, tc.status, clip(ex.Body))
			continue
		}
		checkErrorBody(c, ex)
		var e xpromo.ErrorResponse
		if json.Unmarshal(ex.Body, &e) == nil && e.Error.Code != tc.code {
			c.Errorf("POST /v1/apps with %s: code %q, want %q", tc.name, e.Error.Code, tc.code)
		}
	}
	// The same rules hold with a key, on another operation.
	a := c.NewApp()
	ex := c.Raw("POST", "/v1/apps/"+a.ID+"/top-up", []byte(`{"amount_cents": 5000, "currency": "EUR"}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+a.Key)
	if ex.Status != 422 {
		c.Errorf("top-up with an unknown field: %s, want 422 unknown_field", ex)
	}
	checkErrorBody(c, ex)
	ex = c.Raw("POST", "/v1/apps/"+a.ID+"/top-up", []byte(`{"amount_cents": "5000"}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+a.Key)
	if ex.Status != 422 {
		c.Errorf("top-up with amount_cents as a string: %s, want 422 invalid_type", ex)
	}
	checkErrorBody(c, ex)
}

func checkRoutingErrors(c *C) {
	ex := c.Raw("GET", "/v1/no-such-resource", nil)
	if ex.Status != http.StatusNotFound {
		c.Errorf("an unknown path: %s, want 404", ex)
	}
	checkErrorBody(c, ex)
	ex = c.Raw("DELETE", "/v1/rate-card", nil)
	if ex.Status != http.StatusMethodNotAllowed {
		c.Errorf("DELETE on a GET resource: %s, want 405", ex)
	}
	checkErrorBody(c, ex)
}
