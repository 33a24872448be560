package xpromo

import (
	"encoding/json"
	"time"
)

// Wire types of the apps area's additive endpoints (not in the API document):
// key rotation, job lookup, and the operators' admin surface.

// KeyRotation is the 201 answer of POST /apps/{app_id}/keys/rotate: a new
// API key (shown only here) and when every key issued before it stops working.
type KeyRotation struct {
	APIKey string `json:"api_key"`
	// PreviousKeyExpiresAt is 24 hours after the rotation.
	PreviousKeyExpiresAt time.Time `json:"previous_key_expires_at"`
}

// JobKind is the kind of a background job queued for an app.
type JobKind string

// Job kinds.
const (
	JobScoring JobKind = "scoring" // computes the reputation of Score
	JobGate    JobKind = "gate"    // runs the vetting gate
)

// JobStatus is the status of a background job.
type JobStatus string

// Job statuses.
const (
	JobQueued    JobStatus = "queued"
	JobRunning   JobStatus = "running"
	JobSucceeded JobStatus = "succeeded"
	JobFailed    JobStatus = "failed"
)

// Job is the answer of GET /apps/{app_id}/jobs/{job_id}; scoring_job_id of
// RegisterAppResponse resolves here.
type Job struct {
	JobID     string    `json:"job_id"`
	Kind      JobKind   `json:"kind"`
	Status    JobStatus `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	// RunAfter is the earliest time a worker may start the job.
	RunAfter time.Time `json:"run_after"`
	// FinishedAt is null until the job succeeded or failed.
	FinishedAt *time.Time `json:"finished_at"`
	// Attempts counts the times a worker started the job.
	Attempts int `json:"attempts"`
	// LastError is the error of the job's last failed attempt; null when
	// none failed. A job that succeeded after a retry keeps it.
	LastError *JobError `json:"last_error"`
	// Result (additive) is what the job recorded when it succeeded, null
	// before: for a gate job the five booleans, the reasons and the
	// evidence of each check (docs/gate.md); for a scoring job the
	// reputation.
	Result *json.RawMessage `json:"result"`
}

// JobError is why an attempt at a job failed: a stable lowercase code
// (docs/apps.md, "Jobs") and a message for the app's owner.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// AdminActionRequest is the optional body of the admin app actions
// (approve, reject, suspend, reinstate, review). Reject requires Reason.
type AdminActionRequest struct {
	Reason string `json:"reason,omitempty"`
}

// App is an app's registration and state, as its team reads it (GET
// /apps/{app_id}, PATCH /apps/{app_id}) and, with its status history, as
// operators do (AdminApp). It holds nothing secret: no key, no hash.
type App struct {
	AppID        string   `json:"app_id"`
	Name         string   `json:"name"`
	Platform     Platform `json:"platform"`
	BundleID     string   `json:"bundle_id"`
	Domain       string   `json:"domain"`
	DownloadURL  string   `json:"download_url"`
	ContactEmail string   `json:"contact_email"`
	// Category is null when none was given at registration.
	Category  *string   `json:"category"`
	Status    AppStatus `json:"status"`
	EarnMode  string    `json:"earn_mode"` // cash or credits
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt (additive) is when the app last changed: its status, earn
	// mode or appcast URL.
	UpdatedAt time.Time `json:"updated_at"`
	// AppcastURL (additive) is the app's Sparkle-format appcast, given at
	// registration or by UpdateApp; null when it has none.
	AppcastURL *string `json:"appcast_url"`
}

// AppUpdate is the 200 answer of PATCH /apps/{app_id}: the app after the
// change, and the scoring job that reads its feed again.
type AppUpdate struct {
	App
	// ScoringJobID is the scoring job that reads the new appcast, due at
	// once or a minute after the app's last scoring run ended; null when
	// the request changed nothing. GetJob follows it.
	ScoringJobID *string `json:"scoring_job_id"`
}

// UpdateAppRequest is the body of PATCH /apps/{app_id}. AppcastURL is
// always sent: a URL sets it (String("https://…")), nil sends null and
// clears it. The registration's other fields cannot be changed
// (field_not_changeable).
type UpdateAppRequest struct {
	AppcastURL *string `json:"appcast_url"`
}

// String returns a pointer to s, for the pointer fields of params
// (UpdateAppRequest.AppcastURL), as stripe-go's stripe.String.
func String(s string) *string { return &s }

// AdminApp is an app as operators see it (GET /admin/apps/{app_id} and the
// answer of every admin app action): the App and its status history.
type AdminApp struct {
	App
	// StatusHistory lists every status change, oldest first.
	StatusHistory []StatusChange `json:"status_history"`
}

// MarshalJSON emits StatusHistory as [] when nil.
func (a AdminApp) MarshalJSON() ([]byte, error) {
	type plain AdminApp
	if a.StatusHistory == nil {
		a.StatusHistory = []StatusChange{}
	}
	return json.Marshal(plain(a))
}

// StatusChange is one row of an app's append-only status history.
type StatusChange struct {
	// From is null on the first row (registration).
	From   *AppStatus `json:"from"`
	To     AppStatus  `json:"to"`
	Reason string     `json:"reason"`
	// Actor is who made the change: admin, system, gate, fraud, market.
	Actor string    `json:"actor"`
	At    time.Time `json:"at"`
}

// AuditEntry is one row of the append-only operator audit log.
type AuditEntry struct {
	ID    string `json:"id"`
	Actor string `json:"actor"`
	// Action names what was done, e.g. "app.approve".
	Action string `json:"action"`
	// Subject is the id of what it was done to, e.g. an app id.
	Subject string `json:"subject"`
	// Detail is a JSON object describing the change.
	Detail json.RawMessage `json:"detail"`
	At     time.Time       `json:"at"`
}

// AuditPage is the answer of GET /admin/audit: entries newest first.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	// NextCursor (additive) is set when older entries exist: pass it back
	// as AuditListParams.Cursor. Absent on the last page.
	NextCursor *string `json:"next_cursor,omitempty"`
}

// MarshalJSON emits Entries as [] when nil.
func (p AuditPage) MarshalJSON() ([]byte, error) {
	type plain AuditPage
	if p.Entries == nil {
		p.Entries = []AuditEntry{}
	}
	return json.Marshal(plain(p))
}
