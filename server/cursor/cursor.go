// Package cursor is the page cursor of the lists ordered by (created_at,
// id): the events API, a webhook endpoint's attempts and the campaigns list.
// A cursor is opaque to clients: base64url of "<unix microseconds>.<id>",
// the position of the previous page's last item. It grants nothing: each
// list reads only the caller's own rows, whatever position it is given.
package cursor

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
)

// Position is a place in a list ordered by (created_at, id): after the item
// (CreatedAt, ID). An empty ID is the edge of the instant CreatedAt.
type Position struct {
	CreatedAt time.Time
	ID        string
}

// maxID bounds a cursor's id (ids are at most 64 bytes).
const maxID = 64

// Encode returns the cursor of p.
func Encode(p Position) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.CreatedAt.UnixMicro(), 10) + "." + p.ID))
}

// Decode reads a cursor Encode made; anything else is 422 invalid_cursor
// (field cursor).
func Decode(c string) (Position, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return Position{}, invalid()
	}
	us, id, ok := strings.Cut(string(raw), ".")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || n < 0 || len(id) > maxID {
		return Position{}, invalid()
	}
	return Position{CreatedAt: time.UnixMicro(n).UTC(), ID: id}, nil
}

func invalid() error {
	e := apperr.New(apperr.InvalidCursor, "cursor was not issued by this operation; start again without it")
	e.Field = "cursor"
	return e
}
