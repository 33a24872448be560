package xpromo

import "time"

// Wire types of the vetting gate's additive endpoints (docs/gate.md): the
// re-check, and the contact challenge's code and resend.

// ContactVerifyRequest is the body of POST /apps/{app_id}/contact/verify:
// the 6-digit code from the challenge email.
type ContactVerifyRequest struct {
	Code string `json:"code"`
}

// ContactVerification is the 200 answer of POST
// /apps/{app_id}/contact/verify: the challenge is answered (status "ok").
type ContactVerification struct {
	Status     string    `json:"status"`
	VerifiedAt time.Time `json:"verified_at"`
	// AttemptsLeft is how many more codes the challenge takes: 0 once it is
	// answered (a wrong code is contact_code_invalid, whose message says
	// how many are left).
	AttemptsLeft int `json:"attempts_left"`
}

// ContactChallenge is the 202 answer of POST /apps/{app_id}/contact/resend:
// a new challenge is on its way to the app's contact address.
type ContactChallenge struct {
	Email     string    `json:"email"`
	ExpiresAt time.Time `json:"expires_at"`
}
