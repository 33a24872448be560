package cursor

import (
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
)

func TestRoundTrip(t *testing.T) {
	for _, p := range []Position{
		{CreatedAt: time.Date(2026, 12, 1, 10, 0, 0, 123456000, time.UTC), ID: "cmp_06h35tqwbtzdy8pd2y94vft3rc"},
		{CreatedAt: time.UnixMicro(0).UTC()},
	} {
		got, err := Decode(Encode(p))
		if err != nil || !got.CreatedAt.Equal(p.CreatedAt) || got.ID != p.ID {
			t.Errorf("Decode(Encode(%v)) = %v, %v", p, got, err)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	long := make([]byte, maxID+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, c := range []string{"", "x", "!!!", Encode(Position{ID: string(long)}), "LTEuYQ" /* "-1.a" */, "YWJj" /* "abc" */} {
		if _, err := Decode(c); apperr.Code(err) != apperr.InvalidCursor {
			t.Errorf("Decode(%q) = %v, want invalid_cursor", c, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(Position{CreatedAt: time.Unix(1, 0), ID: "evt_1"}))
	f.Add("")
	f.Fuzz(func(t *testing.T, c string) {
		p, err := Decode(c)
		if err != nil {
			if apperr.Code(err) != apperr.InvalidCursor {
				t.Fatalf("Decode(%q): %v", c, err)
			}
			return
		}
		if q, err := Decode(Encode(p)); err != nil || !q.CreatedAt.Equal(p.CreatedAt) || q.ID != p.ID {
			t.Fatalf("round trip of %v: %v, %v", p, q, err)
		}
	})
}

func TestPageAndCut(t *testing.T) {
	v := map[string][]string{"limit": {"2"}, "cursor": {Encode(Position{CreatedAt: time.UnixMicro(5).UTC(), ID: "x"})}}
	limit, after, err := Page(v, 10, 100)
	if err != nil || limit != 2 || after == nil || after.ID != "x" {
		t.Fatalf("Page = %d, %v, %v", limit, after, err)
	}
	if limit, after, err := Page(nil, 10, 100); err != nil || limit != 10 || after != nil {
		t.Fatalf("Page(nil) = %d, %v, %v", limit, after, err)
	}
	for _, bad := range []string{"0", "101", "+1", " 1", "x"} {
		if _, _, err := Page(map[string][]string{"limit": {bad}}, 10, 100); apperr.Code(err) != apperr.InvalidLimit {
			t.Errorf("limit %q: %v", bad, err)
		}
	}
	pos := func(n int) Position { return Position{CreatedAt: time.UnixMicro(int64(n)).UTC(), ID: "i"} }
	if got, next := Cut([]int{1, 2}, 2, pos); len(got) != 2 || next != "" {
		t.Errorf("Cut at the end = %v, %q", got, next)
	}
	if got, next := Cut([]int{1, 2, 3}, 2, pos); len(got) != 2 || next != Encode(pos(2)) {
		t.Errorf("Cut before the end = %v, %q", got, next)
	}
}
