package assembly_test

import (
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/gatetest"
)

// contractGateConfig mails challenges to inbox and keeps them in memory
// (the contract test runs no jobs: the endpoints are exercised at their
// edges; gate_test.go runs the gate through the API).
func contractGateConfig(inbox *gatetest.Inbox) assembly.GateConfig {
	return assembly.GateConfig{
		SMTP:       contact.SMTPConfig{Host: inbox.Host, Port: inbox.Port, TLS: contact.TLSNone, From: "xpromo <verify@xpromo.dev>"},
		Challenges: &gatetest.Challenges{},
	}
}

// contractGate exercises the gate's endpoints: the re-check of a pending
// app and of an operator-approved one, the contact challenge's resend, its
// link page and POST, and its code.
func contractGate(t *testing.T, a *api, inbox *gatetest.Inbox) {
	// A contact outside the reserved names: its challenge goes to the SMTP
	// server, not to test mode's sandbox inbox.
	body := registration("Gated", "com.example.gated")
	body["contact_email"] = "team@gated.dev"
	reg := a.expect(201, a.do("POST", "/v1/apps", "", body)).json(t)
	id, key := reg["app_id"].(string), reg["api_key"].(string)

	// Pending with its gate job queued: the re-check answers that job.
	job := a.expect(202, a.do("POST", "/v1/apps/"+id+"/gate/recheck", key, nil)).json(t)
	assert.Equal(t, "gate", job["kind"])
	assert.Equal(t, "queued", job["status"])
	assert.Nil(t, job["result"])

	// The contact challenge: resent, too soon, answered by its link.
	sent := a.expect(202, a.do("POST", "/v1/apps/"+id+"/contact/resend", key, nil)).json(t)
	assert.Equal(t, "team@gated.dev", sent["email"])
	r := a.expect(429, a.do("POST", "/v1/apps/"+id+"/contact/resend", key, nil))
	assert.Equal(t, "contact_resend_too_soon", r.code(t))
	assert.NotEmpty(t, r.Header.Get("Retry-After"))
	m, ok := inbox.Last("team@gated.dev")
	require.True(t, ok)
	link, err := url.Parse(m.Link)
	require.NoError(t, err)
	assert.Equal(t, "/v1/contact/verify", link.Path)
	token := link.Query().Get("token")

	assert.Equal(t, "contact_code_invalid", a.expect(422, a.do("POST", "/v1/apps/"+id+"/contact/verify", key, map[string]any{"code": wrongCode(m.Code)})).code(t))
	assert.Equal(t, "missing_field", a.expect(422, a.do("POST", "/v1/apps/"+id+"/contact/verify", key, map[string]any{"code": ""})).code(t))

	// Opening the link changes nothing: the page's button POSTs the token.
	page := a.expect(200, a.do("GET", "/v1/contact/verify?token="+url.QueryEscape(token), "", nil))
	assert.Regexp(t, regexp.MustCompile(`<form method="post" action="/v1/contact/verify\?token=`+regexp.QuoteMeta(url.QueryEscape(token))+`">`), string(page.Body))
	done := a.expect(200, a.do("POST", "/v1/contact/verify?token="+url.QueryEscape(token), "", nil))
	assert.Contains(t, string(done.Body), "Confirmed.")
	again := a.expect(200, a.do("POST", "/v1/contact/verify?token="+url.QueryEscape(token), "", nil))
	assert.Contains(t, string(again.Body), "already used")
	bad := a.expect(200, a.do("POST", "/v1/contact/verify?token=nonsense", "", nil))
	assert.Contains(t, string(bad.Body), "not valid")

	assert.Equal(t, "contact_challenge_used", a.expect(409, a.do("POST", "/v1/apps/"+id+"/contact/verify", key, map[string]any{"code": m.Code})).code(t))
	assert.Equal(t, "contact_already_verified", a.expect(409, a.do("POST", "/v1/apps/"+id+"/contact/resend", key, nil)).code(t))

	// Another app answers by code.
	reg2 := a.expect(201, a.do("POST", "/v1/apps", "", map[string]any{"name": "Coded", "platform": "mac", "bundle_id": "com.example.coded",
		"domain": "example.com", "download_url": "https://example.com/Coded.zip", "contact_email": "coded@gated.dev"})).json(t)
	id2, key2 := reg2["app_id"].(string), reg2["api_key"].(string)
	assert.Equal(t, "contact_no_challenge", a.expect(409, a.do("POST", "/v1/apps/"+id2+"/contact/verify", key2, map[string]any{"code": "123456"})).code(t))
	a.expect(202, a.do("POST", "/v1/apps/"+id2+"/contact/resend", key2, nil))
	m2, ok := inbox.Last("coded@gated.dev")
	require.True(t, ok)
	v := a.expect(200, a.do("POST", "/v1/apps/"+id2+"/contact/verify", key2, map[string]any{"code": m2.Code})).json(t)
	assert.Equal(t, "ok", v["status"])
	assert.Equal(t, 0.0, v["attempts_left"], "answered: no more codes")

	// An app an operator decided is not the gate's to re-check.
	a.expect(200, a.do("POST", "/v1/admin/apps/"+id+"/approve", adminToken, nil))
	assert.Equal(t, "gate_recheck_refused", a.expect(409, a.do("POST", "/v1/apps/"+id+"/gate/recheck", key, nil)).code(t))
}

func wrongCode(c string) string {
	if c == "000000" {
		return "000001"
	}
	return "000000"
}
