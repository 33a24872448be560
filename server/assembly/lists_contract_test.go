package assembly_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// contractLists exercises the dashboard's reads for TestContract, after the
// publisher's payout of 7000 and the advertiser's key rotation: the
// balance, the payouts list, the API key list and the operators' apps list.
func contractLists(t *testing.T, a *api, pubID, pubKey, advID, advKey string) {
	// The payout took every withdrawable cent: what is left is not
	// withdrawable.
	bal := decode[xpromo.Balance](t, a.expect(200, a.do("GET", "/v1/apps/"+pubID+"/balance", pubKey, nil)))
	assert.Equal(t, "EUR", bal.Currency)
	assert.Zero(t, bal.WithdrawableCents)
	assert.Equal(t, bal.WalletCents, bal.CreditsCents)
	assert.False(t, bal.PayoutPending)
	assert.Equal(t, int64(xpromo.MinPayoutCents), bal.MinPayoutCents)
	a.expect(404, a.do("GET", "/v1/apps/"+pubID+"/balance", advKey, nil))

	payouts := decode[xpromo.PayoutPage](t, a.expect(200, a.do("GET", "/v1/apps/"+pubID+"/payouts", pubKey, nil)))
	require.Len(t, payouts.Payouts, 1)
	assert.Equal(t, int64(7000), payouts.Payouts[0].AmountCents)
	assert.Equal(t, xpromo.PayoutSent, payouts.Payouts[0].Status)
	assert.NotNil(t, payouts.Payouts[0].TransferID)
	assert.Nil(t, payouts.NextCursor)
	assert.JSONEq(t, `{"payouts":[]}`, string(a.expect(200, a.do("GET", "/v1/apps/"+advID+"/payouts", advKey, nil)).Body))
	assert.Equal(t, "invalid_cursor", a.expect(422, a.do("GET", "/v1/apps/"+advID+"/payouts?cursor=zz", advKey, nil)).code(t))

	// Two keys after the rotation: the new one without expiry, the old one
	// with its 24 hours; never a key.
	keys := decode[xpromo.APIKeyList](t, a.expect(200, a.do("GET", "/v1/apps/"+advID+"/keys", advKey, nil)))
	require.Len(t, keys.Keys, 2)
	assert.Equal(t, advKey[:12], keys.Keys[0].Prefix)
	assert.Nil(t, keys.Keys[0].ExpiresAt)
	assert.NotNil(t, keys.Keys[1].ExpiresAt)
	assert.True(t, keys.Keys[0].Active && keys.Keys[1].Active)
	a.expect(404, a.do("GET", "/v1/apps/"+advID+"/keys", pubKey, nil))

	// The operators' list, by status, a page at a time.
	all := decode[xpromo.AdminAppPage](t, a.expect(200, a.do("GET", "/v1/admin/apps?limit=1", adminToken, nil)))
	require.Len(t, all.Apps, 1)
	require.NotNil(t, all.NextCursor)
	next := decode[xpromo.AdminAppPage](t, a.expect(200, a.do("GET", "/v1/admin/apps?limit=1&cursor="+*all.NextCursor, adminToken, nil)))
	require.Len(t, next.Apps, 1)
	assert.NotEqual(t, all.Apps[0].AppID, next.Apps[0].AppID)
	for _, app := range decode[xpromo.AdminAppPage](t, a.expect(200, a.do("GET", "/v1/admin/apps?status=pending", adminToken, nil))).Apps {
		assert.Equal(t, xpromo.AppStatusPending, app.Status)
	}
	assert.Equal(t, "invalid_app_status", a.expect(422, a.do("GET", "/v1/admin/apps?status=waiting", adminToken, nil)).code(t))
	a.expect(401, a.do("GET", "/v1/admin/apps", pubKey, nil))

	// The thresholds: six, in their order; another app's are 404.
	th := decode[xpromo.Thresholds](t, a.expect(200, a.do("GET", "/v1/apps/"+pubID+"/thresholds", pubKey, nil)))
	require.Len(t, th.Thresholds, 6)
	assert.Equal(t, xpromo.ThresholdLiveCleared, th.Thresholds[0].Name)
	assert.Equal(t, xpromo.ThresholdUpheldComplaints, th.Thresholds[5].Name)
	a.expect(404, a.do("GET", "/v1/apps/"+pubID+"/thresholds", advKey, nil))
}
