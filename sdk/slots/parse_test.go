package slots

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/xpromo/xpromo/sdk/attribution"
)

const testJWS = "eyJhbGciOiJFZDI1NTE5Iiwia2lkIjoic2RrXzEifQ.eyJub25jZSI6Im4xIn0.c2lnbmF0dXJl"

// encodeBplist writes strs as a binary plist array of strings, the way
// browsers write kMDItemWhereFroms: ASCII strings as 0x5, others as
// UTF-16BE 0x6, with the smallest offset and reference sizes.
func encodeBplist(strs []string) []byte {
	var objs [][]byte
	lenHeader := func(kind byte, n int) []byte {
		if n < 15 {
			return []byte{kind<<4 | byte(n)}
		}
		switch {
		case n < 1<<8:
			return []byte{kind<<4 | 0xF, 0x10, byte(n)}
		case n < 1<<16:
			return []byte{kind<<4 | 0xF, 0x11, byte(n >> 8), byte(n)}
		default:
			return binary.BigEndian.AppendUint32([]byte{kind<<4 | 0xF, 0x12}, uint32(n))
		}
	}
	n := len(strs) + 1
	refSize := 1
	if n > 255 {
		refSize = 2
	}
	arr := lenHeader(0xA, len(strs))
	for i := range strs {
		arr = appendUint(arr, uint64(i+1), refSize)
	}
	objs = append(objs, arr)
	for _, s := range strs {
		ascii := true
		for _, r := range s {
			if r > 0x7F {
				ascii = false
			}
		}
		if ascii {
			objs = append(objs, append(lenHeader(0x5, len(s)), s...))
			continue
		}
		u := utf16.Encode([]rune(s))
		o := lenHeader(0x6, len(u))
		for _, c := range u {
			o = binary.BigEndian.AppendUint16(o, c)
		}
		objs = append(objs, o)
	}
	out := []byte("bplist00")
	offsets := make([]uint64, len(objs))
	for i, o := range objs {
		offsets[i] = uint64(len(out))
		out = append(out, o...)
	}
	offTable := uint64(len(out))
	offSize := 1
	for offTable >= 1<<(8*offSize) {
		offSize++
	}
	for _, o := range offsets {
		out = appendUint(out, o, offSize)
	}
	out = append(out, 0, 0, 0, 0, 0, 0, byte(offSize), byte(refSize))
	out = binary.BigEndian.AppendUint64(out, uint64(len(objs)))
	out = binary.BigEndian.AppendUint64(out, 0)
	out = binary.BigEndian.AppendUint64(out, offTable)
	return out
}

func appendUint(b []byte, v uint64, n int) []byte {
	for k := n - 1; k >= 0; k-- {
		b = append(b, byte(v>>(8*k)))
	}
	return b
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The fixtures were written by Python's plistlib (FMT_BINARY), an
// implementation independent of this one.
func TestParseWhereFromsFixtures(t *testing.T) {
	many := make([]string, 0, 300)
	for i := range 299 {
		many = append(many, "https://dl.example.com/"+itoa(i))
	}
	many = append(many, "https://dl.example.com/"+strings.Repeat("x", 300))
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"wherefroms_safari.bplist", []string{"https://dl.example.com/Notes.dmg?xpromo_click=" + testJWS, "https://publisher.example/"}},
		{"wherefroms_utf16.bplist", []string{"https://dl.example.com/Zürich Notes.dmg?xpromo_click=" + testJWS, "https://example.com/日本"}},
		{"wherefroms_single.bplist", []string{"https://dl.example.com/Notes.zip?xpromo_click=" + testJWS}},
		{"wherefroms_many.bplist", many},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseWhereFroms(readFixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestParseWhereFromsRefusesOtherShapes(t *testing.T) {
	good := readFixture(t, "wherefroms_safari.bplist")
	corrupt := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for name, b := range map[string][]byte{
		"dict root":    readFixture(t, "wherefroms_dict.bplist"),
		"empty":        nil,
		"xml plist":    []byte(`<?xml version="1.0"?><plist><array><string>https://x/</string></array></plist>`),
		"truncated":    good[:len(good)-1],
		"header only":  good[:40],
		"bad magic":    corrupt(func(b []byte) []byte { b[0] = 'x'; return b }),
		"top too big":  corrupt(func(b []byte) []byte { b[len(b)-9] = 9; return b }),
		"zero objects": corrupt(func(b []byte) []byte { copy(b[len(b)-24:], make([]byte, 8)); return b }),
		"offset size 0": corrupt(func(b []byte) []byte {
			b[len(b)-26] = 0
			return b
		}),
		"offset table outside": corrupt(func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[len(b)-8:], 1<<40)
			return b
		}),
		"huge string length": corrupt(func(b []byte) []byte {
			// The first string (object 1) uses the extended length form
			// 0x5F 0x10 n; make n run past the objects.
			// 0x5F 0x10 n; make it a 4-byte length 0x7F?????? instead.
			i := bytes.Index(b, []byte{0x5F, 0x10})
			b[i+1], b[i+2] = 0x12, 0x7F
			return b
		}),
		"negative 8-byte length": corrupt(func(b []byte) []byte {
			i := bytes.Index(b, []byte{0x5F, 0x10})
			b[i+1], b[i+2] = 0x13, 0xFF
			return b
		}),
		"element not a string": encodeNested(),
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := ParseWhereFroms(b); err == nil {
				t.Fatalf("parsed %q, want an error", got)
			}
		})
	}
}

// encodeNested is an array whose element is itself an array.
func encodeNested() []byte {
	b := encodeBplist([]string{"a"})
	i := bytes.LastIndex(b[:len(b)-32], []byte{0x51, 'a'})
	b[i] = 0xA0 // empty array instead of the string
	return b
}

func TestParseWhereFromsRoundTrip(t *testing.T) {
	for _, strs := range [][]string{
		{},
		{""},
		{"https://dl.example.com/App.dmg?xpromo_click=" + testJWS, "https://example.com/"},
		{strings.Repeat("é", 70000)},
		{"🙂 surrogate pair", "x"},
	} {
		got, err := ParseWhereFroms(encodeBplist(strs))
		if err != nil {
			t.Fatalf("%q: %v", strs, err)
		}
		if !slices.Equal(got, strs) {
			t.Fatalf("got %q want %q", got, strs)
		}
	}
}

func FuzzParseWhereFroms(f *testing.F) {
	for _, name := range []string{"wherefroms_safari.bplist", "wherefroms_utf16.bplist", "wherefroms_single.bplist", "wherefroms_dict.bplist"} {
		f.Add(readFixture(f, name))
	}
	f.Add(encodeBplist([]string{"https://x/?xpromo_click=" + testJWS}))
	f.Add([]byte("bplist00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		strs, err := ParseWhereFroms(b)
		if err != nil {
			return
		}
		// Whatever parses re-encodes to the same strings.
		again, err := ParseWhereFroms(encodeBplist(strs))
		if err != nil || !slices.Equal(again, strs) {
			t.Fatalf("round trip of %q: %q, %v", strs, again, err)
		}
	})
}

func TestParseZoneIdentifier(t *testing.T) {
	edge := "[ZoneTransfer]\r\nZoneId=3\r\nReferrerUrl=https://publisher.example/\r\nHostUrl=https://dl.example.com/Setup.exe?xpromo_click=" + testJWS + "\r\n"
	utf16le := []byte{0xFF, 0xFE}
	for _, c := range utf16.Encode([]rune(edge)) {
		utf16le = binary.LittleEndian.AppendUint16(utf16le, c)
	}
	want := ZoneIdentifier{ZoneID: 3, HostURL: "https://dl.example.com/Setup.exe?xpromo_click=" + testJWS, ReferrerURL: "https://publisher.example/"}
	for name, in := range map[string][]byte{
		"crlf":     []byte(edge),
		"utf8 bom": append([]byte{0xEF, 0xBB, 0xBF}, edge...),
		"utf16le":  utf16le,
		"lf, case and spaces, other section first": []byte("[Other]\nHostUrl=https://wrong/\n\n[zonetransfer]\n zoneid = 3\nREFERRERURL=https://publisher.example/\nhosturl=https://dl.example.com/Setup.exe?xpromo_click=" + testJWS),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseZoneIdentifier(in)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
	// Internet Explorer era streams carry only the zone.
	z, err := ParseZoneIdentifier([]byte("[ZoneTransfer]\r\nZoneId=3\r\n"))
	if err != nil || z != (ZoneIdentifier{ZoneID: 3}) {
		t.Fatalf("zone only: %+v %v", z, err)
	}
	for name, in := range map[string]string{
		"no section":  "ZoneId=3\nHostUrl=https://x/",
		"bad zone":    "[ZoneTransfer]\nZoneId=internet",
		"not utf8":    "[ZoneTransfer]\nHostUrl=\xff\xfe\xfd",
		"odd utf16":   "\xff\xfe[",
		"wrong title": "[ZoneTransferX]\nHostUrl=https://x/",
	} {
		if z, err := ParseZoneIdentifier([]byte(in)); err == nil {
			t.Errorf("%s: parsed %+v, want an error", name, z)
		}
	}
}

func FuzzParseZoneIdentifier(f *testing.F) {
	f.Add([]byte("[ZoneTransfer]\r\nZoneId=3\r\nHostUrl=https://dl.example.com/a.exe?xpromo_click=" + testJWS + "\r\n"))
	f.Add([]byte("\xff\xfe[\x00Z\x00"))
	f.Add([]byte("[ZoneTransfer]\nZoneId=-1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		z, err := ParseZoneIdentifier(b)
		if err != nil {
			return
		}
		if strings.ContainsAny(z.HostURL, "\n") || z.ZoneID < -1 {
			t.Fatalf("bad result %+v", z)
		}
		if tok, ok := TokenFromURL(z.HostURL); ok && !strings.Contains(z.HostURL, tok) {
			t.Fatalf("token %q is not in %q", tok, z.HostURL)
		}
	})
}

func TestParseQuarantine(t *testing.T) {
	q, err := ParseQuarantine([]byte("0083;65f1c2a0;Safari;3c5e0f6b-2e7a-4c2b-9c49-5e1a2c7d8b90"))
	if err != nil {
		t.Fatal(err)
	}
	want := Quarantine{Flags: 0x83, Time: time.Unix(0x65f1c2a0, 0).UTC(), Agent: "Safari", EventID: "3C5E0F6B-2E7A-4C2B-9C49-5E1A2C7D8B90"}
	if q != want {
		t.Fatalf("got %+v want %+v", q, want)
	}
	// Files quarantined by some tools have no agent or event.
	q, err = ParseQuarantine([]byte("0081;65f1c2a0;;"))
	if err != nil || q.Agent != "" || q.EventID != "" || q.Flags != 0x81 {
		t.Fatalf("no agent: %+v %v", q, err)
	}
	for _, in := range []string{"", "zz;1;a;b", "0083;nothex;Safari;x"} {
		if q, err := ParseQuarantine([]byte(in)); err == nil {
			t.Errorf("%q parsed as %+v", in, q)
		}
	}
}

func FuzzParseQuarantine(f *testing.F) {
	f.Add([]byte("0083;65f1c2a0;Safari;3C5E0F6B-2E7A-4C2B-9C49-5E1A2C7D8B90"))
	f.Add([]byte("0081;;;"))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := ParseQuarantine(b)
		if err == nil && q.EventID != strings.ToUpper(q.EventID) {
			t.Fatalf("event id %q not upper-cased", q.EventID)
		}
	})
}

func TestTokenFromURL(t *testing.T) {
	tok := newTestClick(t, testKeys(t).publisher, "app_adv")
	other := newTestClick(t, testKeys(t).publisher, "app_other")
	for _, tc := range []struct {
		url, want string
		ok        bool
	}{
		{"https://dl.example.com/Notes.dmg?xpromo_click=" + tok, tok, true},
		{"https://dl.example.com/Notes.dmg?v=2&xpromo_click=" + tok + "&utm_source=x", tok, true},
		{"  https://dl.example.com/a?xpromo_click=" + tok + "\r", tok, true},
		{"https://dl.example.com/?xpromo_click=bad.bad.bad&xpromo_click=" + other, other, true}, // first that parses
		{"https://dl.example.com/Notes.dmg", "", false},
		{"https://dl.example.com/Notes.dmg?xpromo_click=", "", false},
		{"https://dl.example.com/Notes.dmg?xpromo_click=" + testJWS, "", false},          // JWS shape, not a click token
		{"https://dl.example.com/Notes.dmg?xpromo_click=" + tok[:len(tok)-2], "", false}, // cut signature
		{"https://dl.example.com/Notes.dmg?xp_token=" + tok, "", false},                  // other parameter
		{"https://dl.example.com/Notes.dmg#xpromo_click=" + tok, "", false},              // fragments are not sent
		{"about:internet", "", false},
		{"%zz", "", false},
	} {
		got, ok := TokenFromURL(tc.url)
		if got != tc.want || ok != tc.ok {
			t.Errorf("TokenFromURL(%q) = %q, %v; want %q, %v", tc.url, got, ok, tc.want, tc.ok)
		}
	}
	// The URL the publisher's SDK opens round-trips.
	u, err := attribution.HandoffURL("https://dl.example.com/Notes.dmg?v=2", tok)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := TokenFromURL(u); !ok || got != tok {
		t.Fatalf("TokenFromURL(HandoffURL) = %q, %v", got, ok)
	}
}

func FuzzTokenFromURL(f *testing.F) {
	f.Add("https://dl.example.com/Notes.dmg?xpromo_click=" + newTestClick(f, testKeys(f).publisher, "app_adv"))
	f.Add("https://x/?xpromo_click=a.b.c&xpromo_click=")
	f.Fuzz(func(t *testing.T, raw string) {
		tok, ok := TokenFromURL(raw)
		if !ok {
			return
		}
		if _, err := attribution.ParseClick(tok); err != nil {
			t.Fatalf("TokenFromURL(%q) returned %q, which does not parse: %v", raw, tok, err)
		}
	})
}
