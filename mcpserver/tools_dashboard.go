package mcpserver

import (
	"context"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The web dashboard's sign-in link (docs/dashboard.md). Same rules as
// tools.go: the tool mirrors its REST operation.

// dashboardToolNames are these tools' names (in ToolNames).
var dashboardToolNames = []string{"dashboard_link"}

func dashboardTools() []*tool {
	return []*tool{{
		name:  "dashboard_link",
		title: "Mint a dashboard sign-in link",
		description: "Mint a single-use link to the app's web dashboard (POST /v1/dashboard/sign-in-links): give the url to the person, who opens it in a browser within 5 minutes and presses Continue " +
			"to see the app's figures, installs with their signatures, ledger and top-up form. The link works once; it signs a browser in for at most 12 hours (30 minutes idle)." + keyNote,
		params: []param{idempotencyKeyParam()},
		output: allRequired("The link and when it stops working.", schema{
			"url":        strFormat("uri", maxURLLength, "The sign-in link: the server's base URL + /dashboard/sign-in?link=<token>. Single use; treat it as a secret until it is used or expires."),
			"expires_at": dateTime("When the link stops working (5 minutes after it was minted)."),
		}),
		// Each call mints a new link; nothing else changes.
		hints: hints{readOnly: false, destructive: false, idempotent: false, openWorld: false},
		call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
			out, err := c.DashboardLink(ctx, opts...)
			return answer{value: out}, err
		},
	}}
}
