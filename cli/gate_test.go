package cli_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/gatetest"
)

// TestGateCommands: the contact challenge mailed again, answered by its
// code from the received email, and a re-check of a pending app.
func TestGateCommands(t *testing.T) {
	inbox := gatetest.SMTP(t)
	srv := startServer(t, assembly.Config{Gate: assembly.GateConfig{
		SMTP:       contact.SMTPConfig{Host: inbox.Host, Port: inbox.Port, TLS: contact.TLSNone, From: "xpromo <verify@xpromo.dev>"},
		Challenges: &gatetest.Challenges{},
	}})
	e := newCLI(t, srv)
	// A contact address outside the reserved names, so the challenge goes
	// to the SMTP server (test mode's sandbox answers @example.com itself).
	e.ok("apps", "register", "--name", "Gated", "--platform", "mac", "--bundle-id", "com.example.gated",
		"--domain", "example.com", "--download-url", "https://example.com/Gated.zip", "--contact-email", "team@gated.dev")

	r := e.ok("apps", "resend-contact")
	assert.Equal(t, "team@gated.dev", field(r.stdout, "email"))
	assert.Equal(t, "2026-11-22T09:00:00Z", field(r.stdout, "expires_at"))
	m, ok := inbox.Last("team@gated.dev")
	require.True(t, ok)

	r = e.ok("apps", "verify-contact", "--code", m.Code)
	assert.Equal(t, "ok", field(r.stdout, "status"))

	r = e.ok("apps", "recheck")
	assert.Regexp(t, `^job_`, field(r.stdout, "job_id"))
	assert.Equal(t, "queued", field(r.stdout, "status"))
}
