package assembly_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// TestSDKClientEarnModeAndComplaints drives the earn mode and complaint
// methods of the Go client against the real server, on both stores.
func TestSDKClientEarnModeAndComplaints(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		chk := openapitest.New(t)
		a := start(t, chk, s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
		ctx := context.Background()
		c := xpromo.NewClient(a.url,
			xpromo.WithHTTPClient(&http.Client{Transport: chk.Transport(http.DefaultTransport)}),
			xpromo.WithAdminToken(adminToken),
			xpromo.WithRetryWait(time.Millisecond, 10*time.Millisecond),
		)
		reg := func(name, bundle string) (string, *xpromo.Client) {
			r, err := c.RegisterApp(ctx, sdkRegistration(name, bundle))
			require.NoError(t, err)
			_, err = c.AdminApproveApp(ctx, r.AppID, "vetted")
			require.NoError(t, err)
			return r.AppID, c.With(xpromo.WithAPIKey(r.APIKey))
		}
		repID, rep := reg("Reporter", "com.example.sdkrep")
		badID, _ := reg("Shady", "com.example.sdkshady")

		st, err := rep.EarnMode(ctx, repID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.EarnModeCash, st.EarnMode)
		st, err = rep.SetEarnMode(ctx, repID, xpromo.EarnModeCredits)
		require.NoError(t, err)
		assert.Equal(t, xpromo.EarnModeCredits, st.EarnMode)
		_, err = rep.SetEarnMode(ctx, repID, "gold")
		sdkErr(t, err, 422, "invalid_earn_mode")

		filed, err := rep.FileComplaint(ctx, repID, &xpromo.CreateComplaintRequest{AppID: badID, Reason: xpromo.ComplaintMalware, Detail: "the installer drops an extra binary"})
		require.NoError(t, err)
		assert.Equal(t, xpromo.ComplaintOpen, filed.Status)
		_, err = rep.FileComplaint(ctx, repID, &xpromo.CreateComplaintRequest{AppID: badID, Reason: xpromo.ComplaintFraud})
		sdkErr(t, err, 409, "complaint_open")
		_, err = rep.FileComplaint(ctx, repID, nil)
		sdkErr(t, err, 422, "missing_field")

		mine, err := rep.Complaints(ctx, repID, 0)
		require.NoError(t, err)
		require.Len(t, mine.Complaints, 1)
		assert.Equal(t, *filed, mine.Complaints[0])

		queue, err := c.AdminComplaints(ctx, xpromo.ComplaintOpen, 10)
		require.NoError(t, err)
		require.Len(t, queue.Complaints, 1)
		done, err := c.AdminResolveComplaint(ctx, filed.ComplaintID, &xpromo.ResolveComplaintRequest{Resolution: xpromo.ComplaintUpheld, Note: "confirmed"})
		require.NoError(t, err)
		assert.Equal(t, xpromo.ComplaintUpheld, done.Status)
		require.NotNil(t, done.ResolutionNote)
		assert.Equal(t, "confirmed", *done.ResolutionNote)
		_, err = c.AdminResolveComplaint(ctx, filed.ComplaintID, &xpromo.ResolveComplaintRequest{Resolution: xpromo.ComplaintDismissed})
		sdkErr(t, err, 409, "complaint_resolved")
		queue, err = c.AdminComplaints(ctx, "", 0)
		require.NoError(t, err)
		assert.Equal(t, []xpromo.Complaint{*done}, queue.Complaints)
	})
}
