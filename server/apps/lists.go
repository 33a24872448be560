package apps

import (
	"context"
	"net/url"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/cursor"
)

// The lists of the apps domain (docs/dashboard.md "API"): the operators' apps
// by status (GET /v1/admin/apps, the review queue), an app's API keys (GET
// /v1/apps/{app_id}/keys) and the audit log's pages (GET /v1/admin/audit).

// ListTx is what the lists read.
type ListTx interface {
	// AppPage returns up to q.Limit apps with q.Status ("" every status),
	// oldest first (created_at, id), after q.After when set.
	AppPage(ctx context.Context, q AppQuery) ([]App, error)
	// AppAPIKeys returns the app's newest limit API keys, newest first
	// (of keys issued at one instant, the one without expiry first).
	AppAPIKeys(ctx context.Context, appID string, limit int) ([]APIKey, error)
	// AuditPage returns up to limit audit entries, newest first (the order
	// they were written in, reversed), after the entry after.ID when set.
	AuditPage(ctx context.Context, after *cursor.Position, limit int) ([]AuditEntry, error)
}

// Bounds of GET /v1/admin/apps.
const (
	DefaultAppLimit = 100
	MaxAppLimit     = 1000
)

// AppQuery selects a page of apps, oldest first: the review queue is
// GET /v1/admin/apps?status=pending, who has waited longest on top.
type AppQuery struct {
	Status xpromo.AppStatus // "": every status
	After  *cursor.Position
	Limit  int
}

// ParseAppQuery reads the query of GET /v1/admin/apps: `status` (one of
// the app statuses; 422 invalid_app_status), `limit` and `cursor`.
func ParseAppQuery(v url.Values) (AppQuery, error) {
	var q AppQuery
	if v.Has("status") {
		q.Status = xpromo.AppStatus(v.Get("status"))
		if !q.Status.Valid() {
			return q, fieldErr(apperr.InvalidAppStatus, "status",
				"status must be pending, approved, throttled, live, suspended or rejected, got %q", v.Get("status"))
		}
	}
	var err error
	q.Limit, q.After, err = cursor.Page(v, DefaultAppLimit, MaxAppLimit)
	return q, err
}

// AppPage is a page of apps; Next is the cursor of the following page, ""
// on the last one.
type AppPage struct {
	Apps []App
	Next string
}

// ListApps returns a page of apps for operators.
func (s *Service) ListApps(ctx context.Context, q AppQuery) (AppPage, error) {
	var out AppPage
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		limit := q.Limit
		q.Limit++ // one more tells whether a next page exists
		list, err := tx.AppPage(ctx, q)
		out.Apps, out.Next = cursor.Cut(list, limit, func(a App) cursor.Position {
			return cursor.Position{CreatedAt: a.CreatedAt, ID: a.ID}
		})
		return err
	})
	return out, err
}

// MaxKeyList bounds GET /v1/apps/{app_id}/keys: the newest keys of the app.
// Every rotation adds one, and keys older than the previous one have all
// expired (a rotation expires the keys before it within KeyOverlap).
const MaxKeyList = 20

// KeyInfo is one of an app's API keys as its team sees it: never the key,
// never its hash.
type KeyInfo struct {
	Prefix    string
	CreatedAt time.Time
	ExpiresAt *time.Time
	// Active is whether the key authenticates now.
	Active bool
}

// APIKeys returns the app's newest MaxKeyList keys, newest first.
func (s *Service) APIKeys(ctx context.Context, appID string) ([]KeyInfo, error) {
	now := s.now()
	var out []KeyInfo
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		if _, ok, err := tx.GetApp(ctx, appID, false); err != nil {
			return err
		} else if !ok {
			return notFound()
		}
		keys, err := tx.AppAPIKeys(ctx, appID, MaxKeyList)
		for _, k := range keys {
			out = append(out, KeyInfo{Prefix: k.Prefix, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt,
				Active: k.ExpiresAt == nil || k.ExpiresAt.After(now)})
		}
		return err
	})
	return out, err
}

// AuditQuery selects a page of the audit log, newest first.
type AuditQuery struct {
	After *cursor.Position
	Limit int
}

// ParseAuditQuery reads the query of GET /v1/admin/audit: `limit` (1 to
// MaxAuditLimit, DefaultAuditLimit when omitted) and `cursor`.
func ParseAuditQuery(v url.Values) (AuditQuery, error) {
	var q AuditQuery
	var err error
	q.Limit, q.After, err = cursor.Page(v, DefaultAuditLimit, MaxAuditLimit)
	return q, err
}

// AuditPage is a page of the audit log; Next is the cursor of the
// following (older) page, "" on the last one.
type AuditPage struct {
	Entries []AuditEntry
	Next    string
}
