package cli_test

import (
	"encoding/csv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/assembly"
)

// TestNewcomerFlow walks README.md's "With the CLI" section, command for
// command: register, (an operator approves), top up in test mode, create a
// campaign, export the ledger as CSV, request a payout.
func TestNewcomerFlow(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	me := newCLI(t, srv)

	// 1. Register; the key is saved to the default profile.
	reg := me.ok("apps", "register", "--name", "Clipboard Pro", "--platform", "mac",
		"--bundle-id", "com.example.clipboardpro", "--domain", "example.com",
		"--download-url", "https://example.com/ClipboardPro.dmg", "--contact-email", "team@example.com")
	assert.Contains(t, reg.stdout, "shown only this once")
	app := appIDRe.FindStringSubmatch(reg.stdout)[1]
	assert.Equal(t, "pending", field(me.ok("apps", "score").stdout, "status"))

	// 2. The operator approves (their own shell, their token).
	op := newCLI(t, srv)
	op.vars["XPROMO_ADMIN_TOKEN"] = adminToken
	op.ok("admin", "approve", app)
	assert.Equal(t, "approved", field(me.ok("apps", "score").stdout, "status"))

	// 3. Top up EUR 50 in test mode, paying the test checkout at once.
	top := me.ok("topup", "--amount-cents", "5000", "--complete")
	assert.Equal(t, "completed", field(top.stdout, "status"))
	assert.Equal(t, "EUR 50.00 to "+app, field(top.stdout, "credited"))

	// 4. A campaign at the floor.
	cmp := me.ok("campaigns", "create", "--categories", "productivity", "--daily-budget-cents", "2000")
	assert.Equal(t, "throttled (within the app's daily cap until it is live)", field(cmp.stdout, "status"))

	// 5. The ledger as CSV.
	out := me.ok("ledger", "--format", "csv").stdout
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 2, out)
	assert.Equal(t, []string{"id", "ts", "type", "amount_cents", "counterparty_app_id", "event_chain_id", "balance_after", "note"}, rows[0])
	assert.Equal(t, []string{"topup", "5000", "5000"}, []string{rows[1][2], rows[1][3], rows[1][6]})

	// 6. A payout: refused, honestly. Only cash earnings of cleared installs
	// are withdrawable (docs/payments.md); a top-up is not, nor is an
	// operator's adjustment.
	r := me.fails(6, "below_minimum", "payout")
	assert.Contains(t, r.stderr, "withdrawable")
	op.ok("admin", "adjust", app, "--amount-cents", "10000", "--note", "goodwill credit")
	me.fails(6, "below_minimum", "payout")
}
