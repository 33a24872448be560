package cursor

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/xpromo/xpromo/server/apperr"
)

// Page reads the paging parameters of a list's query: `limit` (1 to max,
// def when omitted; 422 invalid_limit otherwise) and `cursor` (a previous
// page's next_cursor; nil when omitted; 422 invalid_cursor otherwise).
func Page(v url.Values, def, max int) (limit int, after *Position, err error) {
	limit = def
	if v.Has("limit") {
		s := v.Get("limit")
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > max || strings.TrimSpace(s) != s || strings.HasPrefix(s, "+") {
			e := apperr.New(apperr.InvalidLimit, "limit must be an integer from 1 to %d, got %q", max, s)
			e.Field = "limit"
			return 0, nil, e
		}
		limit = n
	}
	if v.Has("cursor") {
		p, err := Decode(v.Get("cursor"))
		if err != nil {
			return 0, nil, err
		}
		after = &p
	}
	return limit, after, nil
}

// Cut ends a page read with one row more than limit (which tells whether a
// next page exists): it returns the first limit items and the cursor of the
// next page, "" when list was the last one.
func Cut[T any](list []T, limit int, pos func(T) Position) ([]T, string) {
	if len(list) <= limit {
		return list, ""
	}
	list = list[:limit]
	return list, Encode(pos(list[len(list)-1]))
}
