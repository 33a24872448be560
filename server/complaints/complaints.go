// Package complaints lets an app report another (misleading ad, malware,
// broken install, fraud, other) and operators resolve each report, upheld
// or dismissed. Upheld complaints are a behaviour signal of the reported app
// (Score.behavior.complaints, decisions §6); Upheld counts them.
//
// docs/apps.md ("Complaints") states the rules: who may complain, one open
// complaint per pair of apps, and what an operator's resolution records.
package complaints

import (
	"context"
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/textcheck"
)

// Reason is why an app reports another.
type Reason string

// Reasons.
const (
	MisleadingAd  Reason = "misleading_ad"
	Malware       Reason = "malware"
	BrokenInstall Reason = "broken_install"
	Fraud         Reason = "fraud"
	Other         Reason = "other"
)

// Reasons lists the reasons a complaint may give.
var Reasons = []Reason{MisleadingAd, Malware, BrokenInstall, Fraud, Other}

// Status is where a complaint stands.
type Status string

// Statuses. A complaint is open until an operator resolves it, once, as
// upheld or dismissed.
const (
	Open      Status = "open"
	Upheld    Status = "upheld"
	Dismissed Status = "dismissed"
)

// Statuses lists the statuses, the filter values of List.
var Statuses = []Status{Open, Upheld, Dismissed}

// Limits.
const (
	MaxDetail    = 2000 // characters of a complaint's detail
	MaxNote      = 500  // characters of an operator's resolution note
	DefaultLimit = 100
	MaxLimit     = 1000
)

// AuditAction is the action of a resolution's audit entry.
const AuditAction = "complaint.resolve"

// Complaint is one app's report about another.
type Complaint struct {
	ID         string
	ReporterID string // the app that complains
	AppID      string // the app complained about
	Reason     Reason
	Detail     string // "" when none was given
	Status     Status
	CreatedAt  time.Time
	ResolvedAt *time.Time // nil while open
	Note       string     // the operator's note on resolution, "" when none
}

// Tx is what the complaints domain needs from a transaction.
type Tx interface {
	// GetApp and InsertAdminAudit are apps.Tx's.
	GetApp(ctx context.Context, id string, lock bool) (a apps.App, ok bool, err error)
	InsertAdminAudit(ctx context.Context, e apps.AuditEntry) error

	// AppsTraded reports whether a chain links the two apps, either one the
	// publisher and the other the advertiser.
	AppsTraded(ctx context.Context, a, b string) (bool, error)

	// InsertComplaint fails with ledger.ErrConflict (retried) when the pair
	// already has an open complaint: the store allows one.
	InsertComplaint(ctx context.Context, c Complaint) error
	// OpenComplaint returns the reporter's open complaint about appID; ok is
	// false when there is none.
	OpenComplaint(ctx context.Context, reporterID, appID string) (c Complaint, ok bool, err error)
	// GetComplaint returns a complaint by id; with lock, the row stays
	// locked until the transaction ends.
	GetComplaint(ctx context.Context, id string, lock bool) (c Complaint, ok bool, err error)
	// ResolveComplaint records an open complaint's resolution.
	ResolveComplaint(ctx context.Context, id string, status Status, note string, at time.Time) error
	// ReporterComplaints returns the reporter's newest limit complaints,
	// newest first.
	ReporterComplaints(ctx context.Context, reporterID string, limit int) ([]Complaint, error)
	// Complaints returns the newest limit complaints with this status (any
	// status when ""), newest first (created_at, id), after the position
	// after when set.
	Complaints(ctx context.Context, status Status, after *cursor.Position, limit int) ([]Complaint, error)
	// CountComplaints counts the complaints about appID with this status.
	CountComplaints(ctx context.Context, appID string, status Status) (int, error)
}

// Service is the complaints domain's entry point.
type Service struct {
	Update func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	View   func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	Now    func() time.Time
}

func (s *Service) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

// FileParams are the fields of a complaint (CreateComplaintRequest).
type FileParams struct {
	AppID  string // the app complained about
	Reason string
	Detail string // optional
}

// File records reporterID's complaint about p.AppID. The reporter may
// complain when it has traded with the app (a chain links them, either way
// round), or when it is approved, throttled or live: a vetted app. An app
// cannot report itself, and has at most one open complaint per app
// (complaint_open).
func (s *Service) File(ctx context.Context, reporterID string, p FileParams) (Complaint, error) {
	if err := validate(p); err != nil {
		return Complaint{}, err
	}
	var c Complaint
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		reporter, ok, err := tx.GetApp(ctx, reporterID, false)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.NotFound, "app not found")
		}
		if _, ok, err := tx.GetApp(ctx, p.AppID, false); err != nil {
			return err
		} else if !ok {
			e := apperr.New(apperr.NotFound, "no app %q to complain about", p.AppID)
			e.Field = "app_id"
			return e
		}
		if p.AppID == reporterID {
			return apperr.New(apperr.ComplaintNotAllowed, "an app cannot complain about itself")
		}
		if !vetted(reporter.Status) {
			traded, err := tx.AppsTraded(ctx, reporterID, p.AppID)
			if err != nil {
				return err
			}
			if !traded {
				return apperr.New(apperr.ComplaintNotAllowed, "the app is %s and has no chain with %s; only an approved, throttled or live app, or one that traded with it, may complain", reporter.Status, p.AppID)
			}
		}
		if open, ok, err := tx.OpenComplaint(ctx, reporterID, p.AppID); err != nil {
			return err
		} else if ok {
			return apperr.New(apperr.ComplaintOpen, "complaint %s about this app is still open", open.ID)
		}
		c = Complaint{
			ID: ids.New("cmpl"), ReporterID: reporterID, AppID: p.AppID, Reason: Reason(p.Reason),
			Detail: p.Detail, Status: Open, CreatedAt: s.now(),
		}
		return tx.InsertComplaint(ctx, c)
	})
	if err != nil {
		return Complaint{}, err
	}
	return c, nil
}

func vetted(st xpromo.AppStatus) bool {
	return st == xpromo.AppStatusApproved || st == xpromo.AppStatusThrottled || st == xpromo.AppStatusLive
}

func validate(p FileParams) error {
	switch {
	case p.AppID == "":
		return field(apperr.New(apperr.MissingField, "app_id is required: the app complained about"), "app_id")
	case p.Reason == "":
		return field(apperr.New(apperr.MissingField, "reason is required"), "reason")
	case !slices.Contains(Reasons, Reason(p.Reason)):
		return field(apperr.New(apperr.InvalidComplaintReason, "reason must be one of misleading_ad, malware, broken_install, fraud, other"), "reason")
	}
	return checkText("detail", p.Detail, MaxDetail, apperr.TooLong, apperr.InvalidCharacters)
}

// checkText refuses text longer than max characters (tooLong) or holding
// control or invisible formatting characters (hidden): the input policy's
// rule with the field's codes as openapi.json gives them, kept here for
// callers other than the HTTP API.
func checkText(name, s string, max int, tooLong, hidden string) error {
	if utf8.RuneCountInString(s) > max {
		return field(apperr.New(tooLong, "%s is longer than %d characters", name, max), name)
	}
	if r, ok := textcheck.FirstHidden(s); ok {
		return field(apperr.New(hidden, "%s holds the character %U", name, r), name)
	}
	return nil
}

func field(e *apperr.Error, name string) *apperr.Error {
	e.Field = name
	return e
}

// Mine returns the reporter's newest limit complaints, newest first.
func (s *Service) Mine(ctx context.Context, reporterID string, limit int) ([]Complaint, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	var out []Complaint
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		out, err = tx.ReporterComplaints(ctx, reporterID, limit)
		return err
	})
	return out, err
}

// List returns a page of the newest limit complaints with status (all when
// ""), newest first, after the position after (a cursor's) when set: the
// operators' queue. next is the cursor of the following page, "" on the
// last one.
func (s *Service) List(ctx context.Context, status string, after *cursor.Position, limit int) (list []Complaint, next string, err error) {
	if status != "" && !slices.Contains(Statuses, Status(status)) {
		return nil, "", field(apperr.New(apperr.InvalidResolution, "status must be one of open, upheld, dismissed"), "status")
	}
	if err := checkLimit(limit); err != nil {
		return nil, "", err
	}
	err = s.View(ctx, func(ctx context.Context, tx Tx) error {
		page, err := tx.Complaints(ctx, Status(status), after, limit+1)
		list, next = cursor.Cut(page, limit, func(c Complaint) cursor.Position {
			return cursor.Position{CreatedAt: c.CreatedAt, ID: c.ID}
		})
		return err
	})
	return list, next, err
}

func checkLimit(limit int) error {
	if limit < 1 || limit > MaxLimit {
		return field(apperr.New(apperr.InvalidLimit, "limit must be an integer from 1 to %d", MaxLimit), "limit")
	}
	return nil
}

// Resolve records an operator's resolution of an open complaint, upheld or
// dismissed, with an optional note; the resolution and its audit entry
// commit together. A complaint is resolved once (complaint_resolved).
func (s *Service) Resolve(ctx context.Context, id, resolution, note string) (Complaint, error) {
	st := Status(resolution)
	switch {
	case resolution == "":
		return Complaint{}, field(apperr.New(apperr.MissingField, "resolution is required: upheld or dismissed"), "resolution")
	case st != Upheld && st != Dismissed:
		return Complaint{}, field(apperr.New(apperr.InvalidResolution, "resolution must be upheld or dismissed"), "resolution")
	}
	if err := checkText("note", note, MaxNote, apperr.InvalidNote, apperr.InvalidNote); err != nil {
		return Complaint{}, err
	}
	var c Complaint
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		var ok bool
		var err error
		c, ok, err = tx.GetComplaint(ctx, id, true)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.NotFound, "no complaint %q", id)
		}
		if c.Status != Open {
			return apperr.New(apperr.ComplaintResolved, "complaint %s was already %s", id, c.Status)
		}
		now := s.now()
		if err := tx.ResolveComplaint(ctx, id, st, note, now); err != nil {
			return err
		}
		c.Status, c.ResolvedAt, c.Note = st, &now, note
		detail, err := json.Marshal(map[string]string{
			"resolution": string(st), "app_id": c.AppID, "reporter_app_id": c.ReporterID, "reason": string(c.Reason), "note": note,
		})
		if err != nil {
			return err
		}
		return tx.InsertAdminAudit(ctx, apps.AuditEntry{ID: ids.New("aud"), Actor: apps.ActorAdmin, Action: AuditAction, Subject: id, Detail: detail, At: now})
	})
	if err != nil {
		return Complaint{}, err
	}
	return c, nil
}

// Upheld counts the upheld complaints about the app: the complaints signal
// of its behaviour score.
func (s *Service) Upheld(ctx context.Context, appID string) (int, error) {
	var n int
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		n, err = tx.CountComplaints(ctx, appID, Upheld)
		return err
	})
	return n, err
}
