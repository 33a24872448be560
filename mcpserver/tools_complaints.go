package mcpserver

import (
	"context"
	"net/http"
	"net/url"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The earn mode and complaint tools (docs/apps.md, "Earn mode" and
// "Complaints"). Same rules as tools.go: each mirrors its REST operation,
// schemas as in openapi.json. The operators' side (resolving complaints)
// is admin-only and has no tool.

// complaintToolNames are these tools' names (in ToolNames).
var complaintToolNames = []string{"get_earn_mode", "set_earn_mode", "create_complaint", "list_complaints"}

// Bounds of these operations in openapi.json.
const (
	maxDetailLength       = 2000
	maxNoteLength         = 500
	maxComplaintLimit     = 1000
	defaultComplaintLimit = 100
)

func earnModeStateSchema() schema {
	return allRequired("The app's earn mode and since when it applies.", schema{
		"app_id":       str(maxIDLength, ""),
		"earn_mode":    enum("cash (withdrawable) or credits (x1.2, spendable on campaigns, never withdrawable).", "cash", "credits"),
		"effective_at": dateTime("When the mode took effect: the last switch, or the app's registration when it never switched."),
	})
}

func complaintReasonSchema() schema {
	return enum("Why: misleading_ad, malware, broken_install, fraud or other.", "misleading_ad", "malware", "broken_install", "fraud", "other")
}

func complaintSchema() schema {
	return allRequired("A complaint.", schema{
		"complaint_id":    str(maxIDLength, "Opaque identifier (cmpl_…)."),
		"reporter_app_id": str(maxIDLength, "The app that complained."),
		"app_id":          str(maxIDLength, "The app complained about."),
		"reason":          complaintReasonSchema(),
		"detail":          str(maxDetailLength, "Empty when none was given."),
		"status":          enum("open until an operator resolves it, once, as upheld or dismissed.", "open", "upheld", "dismissed"),
		"created_at":      dateTime(""),
		"resolved_at":     withDesc(schema{"type": []any{"string", "null"}, "format": "date-time", "maxLength": maxDateTimeLength}, "Null while open."),
		"resolution_note": nullableString(maxNoteLength, "The operator's note; null while open or when none was given."),
	})
}

func complaintPageSchema() schema {
	return object("Complaints, newest first.", []string{"complaints"}, schema{
		"complaints":  array(complaintSchema(), maxComplaintLimit, ""),
		"next_cursor": str(256, "Present only on the operators' list (GET /v1/admin/complaints), when older complaints exist."),
	})
}

func complaintTools() []*tool {
	return []*tool{
		{
			name:  "get_earn_mode",
			title: "Read the app's earn mode",
			description: "Read how the app takes its publisher earnings and since when (GET /v1/apps/{app_id}/earn-mode): cash (the default: withdrawable) " +
				"or credits (x1.2, spendable on campaigns, never withdrawable)." + keyNote,
			params: []param{appIDParam()},
			output: earnModeStateSchema(),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.EarnMode(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "set_earn_mode",
			title: "Choose the app's earn mode",
			description: "Choose how the app takes the earnings of installs that clear from now on (POST /v1/apps/{app_id}/earn-mode): cash, withdrawable by request_payout, " +
				"or credits, 1.2 times as much but only spendable on the app's own campaigns and never withdrawable. The mode in force when a chain clears decides how it pays, " +
				"so installs not yet cleared pay in the new mode; earnings already cleared keep theirs (credits never become cash). Choosing the current mode changes nothing. " +
				"A suspended or rejected app answers earn_mode_not_allowed." + keyNote,
			params: []param{
				appIDParam(),
				{name: "earn_mode", required: true, schema: withDesc(schema{"type": "string", "maxLength": 16, "enum": []any{"cash", "credits"}}, "cash or credits.")},
				idempotencyKeyParam(),
			},
			output: earnModeStateSchema(),
			// Setting the same mode twice changes nothing more.
			hints: reversible,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.EarnModeState)
				err := c.Do(ctx, http.MethodPost, "/v1/apps/"+url.PathEscape(a.str("app_id"))+"/earn-mode", a.body(), out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "create_complaint",
			title: "Report another app",
			description: "Report another app to the network's operators (POST /v1/apps/{app_id}/complaints): app_id is your app (the reporter), reported_app_id the app you report " +
				"(the REST body's app_id). Allowed when your app traded with it (a chain links the two apps) or is approved, throttled or live; never about itself " +
				"(complaint_not_allowed). One open complaint per app (complaint_open). An operator upholds or dismisses it; upheld complaints count against the reported app's behaviour score." + keyNote,
			params: []param{
				appIDParam(),
				{name: "reported_app_id", required: true, schema: nonEmpty(maxIDLength, "The app complained about.")},
				{name: "reason", required: true, schema: withDesc(schema{"type": "string", "maxLength": 32, "enum": []any{"misleading_ad", "malware", "broken_install", "fraud", "other"}},
					"misleading_ad, malware, broken_install, fraud or other.")},
				{name: "detail", schema: str(maxDetailLength, "Optional: what happened, on one line (no control characters), at most 2000 characters.")},
				idempotencyKeyParam(),
			},
			output: complaintSchema(),
			hints:  hints{readOnly: false, destructive: false, idempotent: false, openWorld: false},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				body := a.body()
				if v, ok := body["reported_app_id"]; ok {
					delete(body, "reported_app_id")
					body["app_id"] = v
				}
				out := new(xpromo.Complaint)
				err := c.Do(ctx, http.MethodPost, "/v1/apps/"+url.PathEscape(a.str("app_id"))+"/complaints", body, out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:        "list_complaints",
			title:       "List the app's complaints",
			description: "List the complaints the app filed, newest first, with their status and the operator's resolution (GET /v1/apps/{app_id}/complaints)." + keyNote,
			params: []param{
				appIDParam(),
				{name: "limit", in: inQuery, schema: withDesc(
					schema{"type": "integer", "minimum": 1, "maximum": maxComplaintLimit, "default": defaultComplaintLimit},
					"Optional: complaints to return, 1 to 1000 (100 when omitted).")},
			},
			output: complaintPageSchema(),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.ComplaintPage)
				err := c.Do(ctx, http.MethodGet, "/v1/apps/"+url.PathEscape(a.str("app_id"))+"/complaints?"+a.query().Encode(), nil, out, opts...)
				return answer{value: out}, err
			},
		},
	}
}
