package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
)

// TestEarnModeAndComplaints: `apps earn-mode`, `complaints` and `admin
// complaints` against the real server.
func TestEarnModeAndComplaints(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	e.vars["XPROMO_ADMIN_TOKEN"] = adminToken
	n := e.normalizer()
	rep := e.register("", "Reporter", "com.example.reporter")
	bad := e.register("shady", "Shady", "com.example.shady")
	e.ok("admin", "approve", rep.appID)

	// Earn mode: read, switch, refuse a mode that does not exist.
	assert.Equal(t, "cash", field(e.ok("apps", "earn-mode").stdout, "earn_mode"))
	golden(t, n, "apps-earn-mode", e.ok("apps", "earn-mode", "credits").stdout)
	var st xpromo.EarnModeState
	require.NoError(t, json.Unmarshal([]byte(e.ok("apps", "earn-mode", "--json").stdout), &st))
	assert.Equal(t, xpromo.EarnModeCredits, st.EarnMode)
	e.fails(2, "", "apps", "earn-mode", "gold")

	// Complaints: the approved reporter files one; the pending app may not
	// (it never traded with the reporter).
	filed := e.ok("complaints", "file", bad.appID, "--reason", "misleading_ad", "--detail", "promises a free app")
	golden(t, n, "complaints-file", filed.stdout)
	complaintID := field(filed.stdout, "complaint_id")
	e.fails(6, "complaint_open", "complaints", "file", bad.appID, "--reason", "fraud")
	e.fails(3, "complaint_not_allowed", "--profile", "shady", "complaints", "file", rep.appID, "--reason", "other")
	e.fails(5, "invalid_complaint_reason", "complaints", "file", bad.appID, "--reason", "rude")
	golden(t, n, "complaints-list", e.ok("complaints", "list").stdout)

	// Operators.
	golden(t, n, "admin-complaints-list", e.ok("admin", "complaints", "list", "--status", "open").stdout)
	golden(t, n, "admin-complaints-resolve", e.ok("admin", "complaints", "resolve", complaintID, "--resolution", "upheld", "--note", "confirmed").stdout)
	e.fails(6, "complaint_resolved", "admin", "complaints", "resolve", complaintID, "--resolution", "dismissed")
	var page xpromo.ComplaintPage
	require.NoError(t, json.Unmarshal([]byte(e.ok("admin", "complaints", "list", "--status", "upheld", "--json").stdout), &page))
	require.Len(t, page.Complaints, 1)
	assert.Equal(t, complaintID, page.Complaints[0].ComplaintID)
}
