package mcpserver

import (
	"context"
	"net/http"
	"net/url"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The app's own record: reading it and changing its appcast URL
// (docs/apps.md, "Reading and changing the app"). Same rules as tools.go:
// each mirrors its REST operation, schemas resolved from openapi.json.

// appToolNames are the app record tools' names (in ToolNames).
var appToolNames = []string{"get_app", "update_app"}

// appProps are the properties of openapi.json's App, which AppUpdate
// extends.
func appProps() schema {
	nullable := func(max int, desc string) schema {
		return withDesc(schema{"type": []any{"string", "null"}, "maxLength": max}, desc)
	}
	return schema{
		"app_id":        str(maxIDLength, ""),
		"name":          str(200, ""),
		"platform":      enum("mac (macOS) or win (Windows).", "mac", "win"),
		"bundle_id":     str(255, ""),
		"domain":        str(253, ""),
		"download_url":  strFormat("uri", maxURLLength, ""),
		"contact_email": strFormat("email", 254, ""),
		"category":      nullable(64, "The rate-card category key the app's slots sell in; null when none was given at registration."),
		"appcast_url":   nullable(maxURLLength, "The app's Sparkle-format appcast (release cadence); null when none."),
		"status":        appStatusSchema(),
		"earn_mode":     enum("cash or credits (get_earn_mode).", "cash", "credits"),
		"created_at":    dateTime(""),
		"updated_at":    dateTime("When the app last changed: its status, earn mode or appcast URL."),
	}
}

func appTools() []*tool {
	return []*tool{
		{
			name:  "get_app",
			title: "Read the app's registration",
			description: "Read the app as registered and as it stands (GET /v1/apps/{app_id}): name, platform, bundle_id, domain, download_url, contact_email, " +
				"category and appcast_url (null when none), status, earn_mode, created_at and updated_at. Nothing secret (no key)." + keyNote,
			params: []param{appIDParam()},
			output: allRequired("The app.", appProps()),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.GetApp(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "update_app",
			title: "Change the app's appcast URL",
			description: "Set the app's appcast_url, the Sparkle-format feed its release cadence is read from (a Windows app's only cadence source; a Mac app's when its bundle declares no SUFeedURL), " +
				"or remove it with null (PATCH /v1/apps/{app_id}). Checked as at registration (invalid_appcast_url). A change queues a scoring run that reads the new feed, due at once (or a minute after the last run ended): " +
				"the answer is the app and that run's scoring_job_id (null when nothing changed); follow it with get_score. " +
				"The other registration fields cannot be changed (field_not_changeable: register the app again). Allowed in any status, suspended and rejected included." + keyNote,
			params: []param{
				appIDParam(),
				{name: "appcast_url", required: true, schema: withDesc(schema{"type": []any{"string", "null"}, "format": "uri", "minLength": 1, "maxLength": maxURLLength, "pattern": `\S`},
					"Absolute https URL of the app's Sparkle-format appcast (as Sparkle, WinSparkle and NetSparkle publish), or null to remove it.")},
			},
			output: func() schema {
				props := appProps()
				props["scoring_job_id"] = withDesc(schema{"type": []any{"string", "null"}, "maxLength": maxIDLength},
					"The scoring job that reads the new appcast, due at once or a minute after the last run ended; null when the request changed nothing.")
				return allRequired("The app after the change.", props)
			}(),
			hints: hints{readOnly: false, destructive: false, idempotent: true, openWorld: true},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				// The arguments as they are (the API judges them), so an
				// agent's mistake gets the REST caller's code.
				out := new(xpromo.AppUpdate)
				err := c.Do(ctx, http.MethodPatch, "/v1/apps/"+url.PathEscape(a.str("app_id")), a.body(), out, opts...)
				return answer{value: out}, err
			},
		},
	}
}
