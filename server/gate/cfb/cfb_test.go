package cfb

import (
	"bytes"
	"io"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

func FuzzStreams(f *testing.F) {
	f.Add(fixture.MSI(map[string]string{"ProductName": "x"}))
	f.Add(fixture.CFB(map[string][]byte{"big": bytes.Repeat([]byte("x"), 5000), "small": []byte("y")}))
	lim := Limits{MaxBytes: 256 << 10, MaxEntries: 200, MaxDepth: 8}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Open(bytes.NewReader(b), int64(len(b)), lim)
		if err != nil {
			return
		}
		var walk func(e *Entry, depth int)
		walk = func(e *Entry, depth int) {
			if depth > lim.MaxDepth+1 {
				t.Fatal("storages deeper than the limit")
			}
			for _, k := range c.Children(e) {
				switch k.Type {
				case TypeStream:
					_ = c.CopyStream(k, io.Discard)
					_, _ = c.ReadStream(k)
				case TypeStorage:
					walk(k, depth+1)
				}
			}
		}
		walk(c.Root(), 0)
	})
}

func TestStreamsRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789"), 1000)
	b := fixture.CFB(map[string][]byte{"big": big, "small": []byte("tiny")})
	c, err := Open(bytes.NewReader(b), int64(len(b)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, e := range c.Children(c.Root()) {
		var buf bytes.Buffer
		if err := c.CopyStream(e, &buf); err != nil {
			t.Fatal(err)
		}
		whole, err := c.ReadStream(e)
		if err != nil || !bytes.Equal(whole, buf.Bytes()) {
			t.Fatalf("ReadStream and CopyStream disagree on %q: %v", e.Name, err)
		}
		got[e.Name] = whole
	}
	if !bytes.Equal(got["big"], big) || string(got["small"]) != "tiny" {
		t.Fatalf("streams: %q", got)
	}
}
