package xpromo

import (
	"encoding/json"
	"time"
)

// Wire types of the earn mode and complaints endpoints (additive, not in the
// API document; docs/apps.md describes them).

// EarnMode is how a publisher takes its earnings (decisions §3).
type EarnMode string

// Earn modes.
const (
	// EarnModeCash earnings are withdrawable (the default).
	EarnModeCash EarnMode = "cash"
	// EarnModeCredits earnings are ×1.2, spendable on campaigns, and never
	// withdrawable.
	EarnModeCredits EarnMode = "credits"
)

// Valid reports whether m is a known earn mode.
func (m EarnMode) Valid() bool { return m == EarnModeCash || m == EarnModeCredits }

// SetEarnModeRequest is the body of POST /apps/{app_id}/earn-mode.
type SetEarnModeRequest struct {
	EarnMode EarnMode `json:"earn_mode"`
}

// EarnModeState is the answer of GET and POST /apps/{app_id}/earn-mode: the
// app's mode and since when it applies. The mode in force when a chain
// clears decides how it pays; earnings already cleared keep theirs.
type EarnModeState struct {
	AppID    string   `json:"app_id"`
	EarnMode EarnMode `json:"earn_mode"`
	// EffectiveAt is when the mode took effect: the last switch, or the
	// app's registration when it never switched.
	EffectiveAt time.Time `json:"effective_at"`
}

// ComplaintReason is why an app reports another.
type ComplaintReason string

// Complaint reasons.
const (
	ComplaintMisleadingAd  ComplaintReason = "misleading_ad"
	ComplaintMalware       ComplaintReason = "malware"
	ComplaintBrokenInstall ComplaintReason = "broken_install"
	ComplaintFraud         ComplaintReason = "fraud"
	ComplaintOther         ComplaintReason = "other"
)

// ComplaintStatus is where a complaint stands: open until an operator
// resolves it, once, as upheld or dismissed.
type ComplaintStatus string

// Complaint statuses.
const (
	ComplaintOpen      ComplaintStatus = "open"
	ComplaintUpheld    ComplaintStatus = "upheld"
	ComplaintDismissed ComplaintStatus = "dismissed"
)

// CreateComplaintRequest is the body of POST /apps/{app_id}/complaints: the
// app (the path's, the caller) reports AppID.
type CreateComplaintRequest struct {
	AppID  string          `json:"app_id"`
	Reason ComplaintReason `json:"reason"`
	// Detail is optional: up to 2000 characters, on one line.
	Detail string `json:"detail,omitempty"`
}

// Complaint is one app's report about another.
type Complaint struct {
	ComplaintID string `json:"complaint_id"`
	// ReporterAppID is the app that complained, AppID the app complained
	// about.
	ReporterAppID string          `json:"reporter_app_id"`
	AppID         string          `json:"app_id"`
	Reason        ComplaintReason `json:"reason"`
	Detail        string          `json:"detail"` // "" when none was given
	Status        ComplaintStatus `json:"status"`
	CreatedAt     time.Time       `json:"created_at"`
	// ResolvedAt is null while the complaint is open.
	ResolvedAt *time.Time `json:"resolved_at"`
	// ResolutionNote is the operator's note; null while open or when none
	// was given.
	ResolutionNote *string `json:"resolution_note"`
}

// ComplaintPage is a list of complaints, newest first.
type ComplaintPage struct {
	Complaints []Complaint `json:"complaints"`
	// NextCursor (additive; GET /admin/complaints only) is set when older
	// complaints exist: pass it back as AdminComplaintListParams.Cursor.
	// Absent on the last page.
	NextCursor *string `json:"next_cursor,omitempty"`
}

// MarshalJSON emits Complaints as [] when nil.
func (p ComplaintPage) MarshalJSON() ([]byte, error) {
	type plain ComplaintPage
	if p.Complaints == nil {
		p.Complaints = []Complaint{}
	}
	return json.Marshal(plain(p))
}

// ResolveComplaintRequest is the body of POST
// /admin/complaints/{complaint_id}/resolve.
type ResolveComplaintRequest struct {
	// Resolution is ComplaintUpheld or ComplaintDismissed.
	Resolution ComplaintStatus `json:"resolution"`
	// Note is optional: up to 500 characters, kept with the complaint and
	// in the audit log.
	Note string `json:"note,omitempty"`
}
