package mcpserver

import (
	"context"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The vetting gate's tools: a re-check, and the contact challenge's code and
// resend (docs/gate.md). Same rules as tools.go: each mirrors its REST
// operation, schemas resolved from openapi.json.

// gateToolNames are the gate tools' names (in ToolNames).
var gateToolNames = []string{"recheck_gate", "verify_contact_code", "resend_contact_challenge"}

func jobSchema() schema {
	return allRequired("A background job of the app.", schema{
		"job_id":      str(maxIDLength, ""),
		"kind":        enum("", "scoring", "gate"),
		"status":      enum("", "queued", "running", "succeeded", "failed"),
		"created_at":  dateTime(""),
		"run_after":   dateTime("The earliest time a worker may start the job."),
		"finished_at": withDesc(schema{"type": []any{"string", "null"}, "format": "date-time", "maxLength": maxDateTimeLength}, "Null until the job succeeded or failed."),
		"attempts":    withDesc(schema{"type": "integer", "minimum": 0, "maximum": 1000}, "How many times a worker started the job."),
		"last_error": withDesc(schema{"oneOf": []any{schema{"type": "null"}, allRequired("", schema{
			"code":    withDesc(schema{"type": "string", "maxLength": 64, "pattern": "^[a-z][a-z0-9_]*$"}, "A stable lowercase code, e.g. gate_scanner_unavailable."),
			"message": str(500, ""),
		})}}, "The error of the job's last failed attempt; null when none failed."),
		"result": withDesc(schema{"oneOf": []any{schema{"type": "null"}, schema{"type": "object", "maxProperties": 20}}},
			"What the job recorded when it succeeded; for a gate job the five booleans, reasons, retry_after and the evidence of each check."),
	})
}

func gateTools() []*tool {
	return []*tool{
		{
			name:  "recheck_gate",
			title: "Run the vetting gate again",
			description: "Run the vetting gate again for an app it rejected, once what its reasons say is fixed (POST /v1/apps/{app_id}/gate/recheck): " +
				"the app goes back to pending and a gate job is queued now; the answer is that job (follow it with get_score). A pending app gets its queued gate job. " +
				"Refused with gate_recheck_refused for an app an operator decided or one already approved, and with gate_domain_too_young (retry_after: the date the domain becomes eligible, when the gate re-checks by itself)." + keyNote,
			params: []param{appIDParam(), idempotencyKeyParam()},
			output: jobSchema(),
			hints:  hints{readOnly: false, destructive: false, idempotent: true, openWorld: true},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.RecheckGate(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "verify_contact_code",
			title: "Answer the contact challenge",
			description: "Answer the vetting gate's contact challenge with the 6-digit code from the email sent to the app's contact_email (POST /v1/apps/{app_id}/contact/verify); " +
				"the gate then runs again at once. Wrong code: contact_code_invalid (five tries, then contact_code_locked; the email's link still works). " +
				"contact_challenge_expired: ask for a new one with resend_contact_challenge." + keyNote,
			params: []param{appIDParam(),
				{name: "code", required: true, schema: withDesc(schema{"type": "string", "minLength": 1, "maxLength": 6}, "The 6-digit code from the challenge email.")},
				idempotencyKeyParam()},
			output: allRequired("The challenge is answered.", schema{
				"status":        withDesc(schema{"type": "string", "enum": []any{"ok"}}, "The challenge is answered."),
				"verified_at":   dateTime(""),
				"attempts_left": withDesc(schema{"type": "integer", "minimum": 0, "maximum": 5}, "How many more codes the challenge takes: 0 once it is answered (a wrong code answers 422 contact_code_invalid, whose message says how many are left)."),
			}),
			hints: hints{readOnly: false, destructive: false, idempotent: false, openWorld: false},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.VerifyContactCode(ctx, a.str("app_id"), a.str("code"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "resend_contact_challenge",
			title: "Mail the contact challenge again",
			description: "Mail the app's contact address a new challenge, a link and a 6-digit code valid 24 hours, superseding the previous one (POST /v1/apps/{app_id}/contact/resend). " +
				"At most one a minute and five a day (contact_resend_too_soon with retry_after); contact_already_verified when the address already answered." + keyNote,
			params: []param{appIDParam(), idempotencyKeyParam()},
			output: allRequired("The challenge on its way.", schema{
				"email":      str(254, "The app's contact address, where the challenge went."),
				"expires_at": dateTime("When its link and code stop working (24 hours)."),
			}),
			hints: hints{readOnly: false, destructive: false, idempotent: false, openWorld: true},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.ResendContactChallenge(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
	}
}
