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
