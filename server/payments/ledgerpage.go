package payments

import (
	"context"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
)

// Ledger page sizes.
const (
	DefaultLedgerLimit = xpromo.DefaultLedgerLimit // 100
	MaxLedgerLimit     = xpromo.MaxLedgerLimit     // 1000
)

// LedgerQuery selects a page of an app's wallet lines.
type LedgerQuery struct {
	From     time.Time // first instant included (zero: unbounded)
	Before   time.Time // first instant excluded (zero: unbounded)
	AfterSeq int64     // from the cursor: lines after this sequence number
	Limit    int
}

func invalid(code, field, format string, args ...any) error {
	e := apperr.New(code, format, args...)
	e.Field = field
	return e
}

// ParseLedgerQuery reads the query parameters of GET /v1/apps/{app_id}/ledger:
// from and to (UTC dates YYYY-MM-DD, to inclusive), limit (1..1000, default
// 100) and cursor (from a previous page of the same app).
func ParseLedgerQuery(appID string, v url.Values) (LedgerQuery, error) {
	q := LedgerQuery{Limit: DefaultLedgerLimit}
	date := func(name string) (time.Time, error) {
		if !v.Has(name) {
			return time.Time{}, nil
		}
		s := v.Get(name)
		d, err := time.Parse(time.DateOnly, s)
		if err != nil || len(s) != len(time.DateOnly) {
			return time.Time{}, invalid(apperr.InvalidDate, name, "%s must be a date of the form YYYY-MM-DD, got %q", name, s)
		}
		return d, nil
	}
	from, err := date("from")
	if err != nil {
		return q, err
	}
	to, err := date("to")
	if err != nil {
		return q, err
	}
	if !from.IsZero() && !to.IsZero() && from.After(to) {
		return q, invalid(apperr.InvalidRange, "from", "from (%s) is after to (%s)", from.Format(time.DateOnly), to.Format(time.DateOnly))
	}
	q.From = from
	if !to.IsZero() {
		q.Before = to.AddDate(0, 0, 1) // to is inclusive: up to the next midnight
	}
	if v.Has("limit") {
		s := v.Get("limit")
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLedgerLimit || strings.TrimSpace(s) != s || strings.HasPrefix(s, "+") {
			return q, invalid(apperr.InvalidLimit, "limit", "limit must be an integer from 1 to %d, got %q", MaxLedgerLimit, s)
		}
		q.Limit = n
	}
	if v.Has("cursor") {
		seq, err := decodeCursor(appID, v.Get("cursor"))
		if err != nil {
			return q, err
		}
		q.AfterSeq = seq
	}
	return q, nil
}

// The cursor is opaque to clients: base64url of "<app id>:<last seq>". It
// names the app so that a cursor of one app is refused on another; it needs
// no MAC because it grants nothing (the caller can only read its own app,
// and any sequence number of it).
func encodeCursor(appID string, seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(appID + ":" + strconv.FormatInt(seq, 10)))
}

func decodeCursor(appID, cursor string) (int64, error) {
	bad := invalid(apperr.InvalidCursor, "cursor", "cursor was not issued by this endpoint for this app; start again without it")
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || cursor == "" {
		return 0, bad
	}
	app, seqText, ok := cutLast(string(raw), ":")
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if !ok || app != appID || err != nil || seq < 1 || strconv.FormatInt(seq, 10) != seqText {
		return 0, bad
	}
	return seq, nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// LedgerPage returns a page of the app's wallet lines in sequence order, and
// the cursor of the next page ("" on the last one). One query: it asks for
// one line more than the page to know whether another page exists.
func (s *Service) LedgerPage(ctx context.Context, appID string, q LedgerQuery) ([]ledger.Line, string, error) {
	lines, err := s.Ledger.Lines(ctx, ledger.Wallet(appID), ledger.LineQuery{
		AfterSeq: q.AfterSeq, From: q.From, Before: q.Before, Limit: q.Limit + 1,
	})
	if err != nil {
		return nil, "", err
	}
	if len(lines) <= q.Limit {
		return lines, "", nil
	}
	lines = lines[:q.Limit]
	return lines, encodeCursor(appID, lines[len(lines)-1].Seq), nil
}
