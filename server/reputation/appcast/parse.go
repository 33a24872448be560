package appcast

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// SparkleNS is the Sparkle XML namespace.
const SparkleNS = "http://www.andymatuschak.org/xml-namespaces/sparkle"

// Feed is a parsed appcast.
type Feed struct {
	Title    string
	Releases []Release
	// Undated counts items whose pubDate is missing or unreadable; they
	// are not releases.
	Undated int
}

// Release is one <item> of an appcast.
type Release struct {
	Title        string
	PublishedAt  time.Time // UTC
	Version      string    // sparkle:version (CFBundleVersion / file version)
	ShortVersion string    // sparkle:shortVersionString
	Channel      string    // sparkle:channel ("" is the default channel)
	EnclosureURL string
	OS           string // the enclosure's sparkle:os ("" when absent)
}

type wireFeed struct {
	XMLName xml.Name `xml:"rss"`
	Channel *struct {
		Title string     `xml:"title"`
		Items []wireItem `xml:"item"`
	} `xml:"channel"`
}

type wireItem struct {
	Title        string          `xml:"title"`
	PubDate      string          `xml:"pubDate"`
	Version      string          `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle version"`
	ShortVersion string          `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle shortVersionString"`
	Channel      string          `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle channel"`
	Enclosures   []wireEnclosure `xml:"enclosure"`
}

type wireEnclosure struct {
	URL          string `xml:"url,attr"`
	Version      string `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle version,attr"`
	ShortVersion string `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle shortVersionString,attr"`
	OS           string `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle os,attr"`
}

// Parse reads an appcast. It refuses (ErrInvalid) anything but an RSS
// document with a channel: a DOCTYPE or any other <!…> declaration (no DTD
// is ever read, so no entity can expand), an encoding other than UTF-8, more
// than MaxFeedBytes or MaxItems, a structure beyond the bounds below, or
// items of which none has a readable date. An item without a readable
// pubDate is counted in Undated and skipped.
//
// The structure is bounded token by token as the feed is decoded, before
// any token beyond a bound is stored: elements nested at most MaxDepth deep,
// at most MaxElements of them and MaxAttributes on one, no tag (with its
// attributes) longer than MaxTagBytes and no text, CDATA section or comment
// longer than MaxTokenBytes, so neither a deep, a wide nor a long-attribute
// feed costs more memory than a few times its size.
func Parse(data []byte) (Feed, error) {
	if len(data) > MaxFeedBytes {
		return Feed{}, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, MaxFeedBytes)
	}
	src := &budgetReader{data: data}
	src.budget = src.next(0)
	raw := xml.NewDecoder(src) // src is an io.ByteReader: read as is, without a buffer ahead
	raw.CharsetReader = func(charset string, r io.Reader) (io.Reader, error) {
		switch strings.ToLower(charset) {
		case "utf-8", "utf8", "us-ascii":
			return r, nil
		}
		return nil, fmt.Errorf("encoding %q is not UTF-8", charset)
	}
	d := xml.NewTokenDecoder(&boundedTokens{d: raw, src: src})
	// Everything before the root element: the XML declaration, comments.
	var root xml.StartElement
	for {
		tok, err := d.Token()
		if err != nil {
			return Feed{}, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			root = se
			break
		}
	}
	if root.Name.Local != "rss" || root.Name.Space != "" {
		return Feed{}, fmt.Errorf("%w: the root element is <%s>, not <rss>", ErrInvalid, root.Name.Local)
	}
	var w wireFeed
	if err := d.DecodeElement(&w, &root); err != nil {
		return Feed{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if w.Channel == nil {
		return Feed{}, fmt.Errorf("%w: no <channel>", ErrInvalid)
	}
	f := Feed{Title: strings.TrimSpace(w.Channel.Title)}
	for _, it := range w.Channel.Items {
		at, err := ParseDate(it.PubDate)
		if err != nil {
			f.Undated++
			continue
		}
		r := Release{
			Title:        strings.TrimSpace(it.Title),
			PublishedAt:  at,
			Version:      strings.TrimSpace(it.Version),
			ShortVersion: strings.TrimSpace(it.ShortVersion),
			Channel:      strings.TrimSpace(it.Channel),
		}
		if len(it.Enclosures) > 0 {
			e := it.Enclosures[0]
			r.EnclosureURL, r.OS = strings.TrimSpace(e.URL), strings.TrimSpace(e.OS)
			// Sparkle 1.x put the versions on the enclosure.
			if r.Version == "" {
				r.Version = strings.TrimSpace(e.Version)
			}
			if r.ShortVersion == "" {
				r.ShortVersion = strings.TrimSpace(e.ShortVersion)
			}
		}
		f.Releases = append(f.Releases, r)
	}
	if len(f.Releases) == 0 && f.Undated > 0 {
		return Feed{}, fmt.Errorf("%w: none of the %d items has a readable pubDate", ErrInvalid, f.Undated)
	}
	return f, nil
}

// zones are the time zones RFC 822 §5.1 names, and what feeds write.
var zones = map[string]int{
	"UT": 0, "UTC": 0, "GMT": 0, "Z": 0,
	"EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
}

var months = map[string]time.Month{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
	"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}

// ParseDate reads an RSS pubDate: RFC 822 / RFC 1123 and the variants
// feeds write — the weekday optional, one- or two-digit days, full or
// abbreviated month names in any case, two- or four-digit years (two
// digits are 19xx from 70 on, else 20xx), seconds optional, a numeric zone
// (+0200) or a named one (GMT, UT, UTC, Z, EST…PDT). An RFC 3339 date is
// accepted too (some generators write one). The result is in UTC.
func ParseDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if i := strings.IndexByte(s, ','); i >= 0 {
		s = s[i+1:] // the weekday says nothing the date does not
	}
	f := strings.Fields(s)
	if len(f) != 5 {
		return time.Time{}, fmt.Errorf("pubDate %q: want day month year time zone", s)
	}
	day, err := number(f[0], 1, 2)
	if err != nil {
		return time.Time{}, fmt.Errorf("pubDate %q: day: %v", s, err)
	}
	name := strings.ToLower(f[1])
	if len(name) < 3 {
		return time.Time{}, fmt.Errorf("pubDate %q: month %q", s, f[1])
	}
	month, ok := months[name[:3]]
	if !ok || (len(name) > 3 && !strings.HasPrefix(strings.ToLower(time.Month(month).String()), name)) {
		return time.Time{}, fmt.Errorf("pubDate %q: month %q", s, f[1])
	}
	year, err := number(f[2], 2, 4)
	if err != nil || len(f[2]) == 3 {
		return time.Time{}, fmt.Errorf("pubDate %q: year %q", s, f[2])
	}
	if len(f[2]) == 2 {
		if year >= 70 {
			year += 1900
		} else {
			year += 2000
		}
	}
	hms := strings.Split(f[3], ":")
	if len(hms) < 2 || len(hms) > 3 {
		return time.Time{}, fmt.Errorf("pubDate %q: time %q", s, f[3])
	}
	var clock [3]int
	for i, part := range hms {
		if clock[i], err = number(part, 2, 2); err != nil {
			return time.Time{}, fmt.Errorf("pubDate %q: time %q", s, f[3])
		}
	}
	if clock[0] > 23 || clock[1] > 59 || clock[2] > 60 {
		return time.Time{}, fmt.Errorf("pubDate %q: time %q", s, f[3])
	}
	offset, err := zoneOffset(f[4])
	if err != nil {
		return time.Time{}, fmt.Errorf("pubDate %q: %v", s, err)
	}
	t := time.Date(year, month, day, clock[0], clock[1], min(clock[2], 59), 0, time.FixedZone("", offset))
	if t.Day() != day { // 31 Feb is not 3 March
		return time.Time{}, fmt.Errorf("pubDate %q: no such day", s)
	}
	return t.UTC(), nil
}

// number reads between lo and hi ASCII digits.
func number(s string, lo, hi int) (int, error) {
	if len(s) < lo || len(s) > hi {
		return 0, fmt.Errorf("%q: want %d to %d digits", s, lo, hi)
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a number", s)
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

func zoneOffset(z string) (int, error) {
	if h, ok := zones[strings.ToUpper(z)]; ok {
		return h * 3600, nil
	}
	if len(z) == 5 && (z[0] == '+' || z[0] == '-') {
		hh, err1 := strconv.Atoi(z[1:3])
		mm, err2 := strconv.Atoi(z[3:5])
		if err1 == nil && err2 == nil && hh <= 23 && mm <= 59 && z[1] != '+' && z[1] != '-' && z[3] != '+' && z[3] != '-' {
			off := hh*3600 + mm*60
			if z[0] == '-' {
				off = -off
			}
			return off, nil
		}
	}
	return 0, fmt.Errorf("zone %q", z)
}

// budgetReader hands the decoder data byte by byte, and no more than budget
// bytes past the end of the last token: a token longer than MaxTokenBytes
// fails while it is being read, before the decoder has built it.
type budgetReader struct {
	data   []byte
	pos    int
	budget int // bytes allowed up to, excluding
}

var errTokenTooLong = fmt.Errorf("a tag longer than %d bytes, or a text, CDATA section or comment longer than %d", MaxTagBytes, MaxTokenBytes)

// next returns the budget of the token starting at offset: MaxTagBytes for
// a tag (whose attributes the decoder builds all at once), MaxTokenBytes for
// a text, a CDATA section or a comment. The decoder may hold one byte read
// ahead, which the budget allows for.
func (r *budgetReader) next(offset int) int {
	rest := r.data[min(offset, len(r.data)):]
	if len(rest) > 1 && rest[0] == '<' && rest[1] != '!' {
		return offset + 1 + MaxTagBytes
	}
	return offset + 1 + MaxTokenBytes
}

func (r *budgetReader) ReadByte() (byte, error) {
	if r.pos >= len(r.data) {
		return 0, io.EOF
	}
	if r.pos >= r.budget {
		return 0, errTokenTooLong
	}
	r.pos++
	return r.data[r.pos-1], nil
}

// Read makes it an io.Reader too, as a CharsetReader is handed one.
func (r *budgetReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c, err := r.ReadByte()
		if err != nil {
			if n > 0 && err == io.EOF {
				return n, nil
			}
			return n, err
		}
		p[n] = c
		n++
	}
	return n, nil
}

// boundedTokens is the decoder's token stream with the feed's bounds on
// structure held: it counts depth, elements, attributes and items as each
// token passes, and gives the next token its byte budget.
type boundedTokens struct {
	d                      *xml.Decoder
	src                    *budgetReader
	depth, elements, items int
}

func (b *boundedTokens) Token() (xml.Token, error) {
	// RawToken: the decoder over boundedTokens translates name spaces and
	// matches end tags, once.
	tok, err := b.d.RawToken()
	if err != nil {
		return nil, err
	}
	b.src.budget = b.src.next(int(b.d.InputOffset()))
	switch t := tok.(type) {
	case xml.StartElement:
		b.depth++
		b.elements++
		switch {
		case b.depth > MaxDepth:
			return nil, fmt.Errorf("elements nest deeper than %d levels", MaxDepth)
		case b.elements > MaxElements:
			return nil, fmt.Errorf("more than %d elements", MaxElements)
		case len(t.Attr) > MaxAttributes:
			return nil, fmt.Errorf("<%s> has more than %d attributes", t.Name.Local, MaxAttributes)
		}
		if b.depth == 3 && t.Name.Local == "item" { // rss/channel/item
			if b.items++; b.items > MaxItems {
				return nil, fmt.Errorf("more than %d items", MaxItems)
			}
		}
	case xml.EndElement:
		b.depth--
	case xml.Directive:
		return nil, fmt.Errorf("a <!%.20s> declaration (DTDs are refused)", t)
	}
	return tok, nil
}
