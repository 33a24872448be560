package attribution

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gaissmai/bart"
)

// ASNTable maps IP addresses to their AS numbers: a longest-prefix-match
// table (bart) loaded from the iptoasn.com TSV format, each address range
// converted to the CIDR prefixes that cover it exactly.
type ASNTable struct {
	t      bart.Table[uint32]
	ranges int
}

// Ranges is the number of routed ranges loaded.
func (a *ASNTable) Ranges() int { return a.ranges }

// Lookup returns the AS number announcing ip.
func (a *ASNTable) Lookup(ip netip.Addr) (uint32, bool) {
	return a.t.Lookup(ip.Unmap())
}

// LoadIPToASN reads an IP-to-ASN table in the iptoasn.com TSV format
// (ip2asn-v4.tsv, ip2asn-v6.tsv, ip2asn-combined.tsv; gzip-compressed or
// not): one range per line, tab-separated range_start, range_end, AS_number,
// country_code, AS_description. Rows of AS 0 ("Not routed") are skipped.
// A malformed line fails the load with its line number: a half-loaded table
// would silently miss datacenters.
func LoadIPToASN(r io.Reader) (*ASNTable, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("ip-to-asn table: %w", err)
		}
		defer gz.Close()
		br = bufio.NewReaderSize(gz, 1<<16)
	}
	table := &ASNTable{}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
		fields := bytes.SplitN(line, []byte{'\t'}, 4)
		if len(fields) < 3 {
			return nil, fmt.Errorf("ip-to-asn table: line %d: want range_start, range_end, AS_number separated by tabs", n)
		}
		start, err1 := netip.ParseAddr(string(fields[0]))
		end, err2 := netip.ParseAddr(string(fields[1]))
		asn, err3 := strconv.ParseUint(string(fields[2]), 10, 32)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("ip-to-asn table: line %d: %q is not a range and an AS number", n, line)
		}
		start, end = start.Unmap(), end.Unmap()
		if start.Zone() != "" || end.Zone() != "" || start.Is4() != end.Is4() || end.Less(start) {
			return nil, fmt.Errorf("ip-to-asn table: line %d: %s-%s is not a range", n, start, end)
		}
		if asn == 0 {
			continue // not routed
		}
		for _, p := range RangePrefixes(start, end) {
			table.t.Insert(p, uint32(asn))
		}
		table.ranges++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ip-to-asn table: %w", err)
	}
	return table, nil
}

// RangePrefixes returns the shortest list of CIDR prefixes covering exactly
// the addresses from start to end (both included, same family, no zone).
func RangePrefixes(start, end netip.Addr) []netip.Prefix {
	var out []netip.Prefix
	for {
		// The shortest prefix that starts at start and ends at or before end.
		var p netip.Prefix
		for bits := 0; bits <= start.BitLen(); bits++ {
			c := netip.PrefixFrom(start, bits).Masked()
			if c.Addr() == start && !end.Less(lastAddr(c)) {
				p = c
				break
			}
		}
		out = append(out, p)
		last := lastAddr(p)
		if last == end {
			return out
		}
		start = last.Next()
	}
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	if a.Is4() {
		b := a.As4()
		for i := p.Bits(); i < 32; i++ {
			b[i/8] |= 0x80 >> (i % 8)
		}
		return netip.AddrFrom4(b)
	}
	b := a.As16()
	for i := p.Bits(); i < 128; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom16(b)
}

// Datacenters lists what counts as a datacenter: AS numbers (hosting and
// cloud providers) and address prefixes (published cloud ranges).
type Datacenters struct {
	asns     map[uint32]bool
	prefixes bart.Lite
}

//go:embed datacenters.txt
var defaultDatacenters string

// DefaultDatacenters is the list shipped with the server: the ASNs of the
// largest cloud and hosting providers (datacenters.txt).
func DefaultDatacenters() *Datacenters {
	d, err := ParseDatacenters(strings.NewReader(defaultDatacenters))
	if err != nil {
		panic(err) // the embedded list is tested
	}
	return d
}

// ParseDatacenters reads a datacenter list: one entry per line, an AS number
// ("AS16509" or "16509") or a CIDR prefix ("3.5.140.0/22", "2600:1f00::/24");
// text after '#' is a comment.
func ParseDatacenters(r io.Reader) (*Datacenters, error) {
	d := &Datacenters{asns: map[uint32]bool{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			p, err := netip.ParsePrefix(line)
			if err != nil {
				return nil, fmt.Errorf("datacenter list: line %d: %q is not a CIDR prefix", n, line)
			}
			d.prefixes.Insert(p.Masked())
			continue
		}
		num := strings.TrimPrefix(strings.ToUpper(line), "AS")
		asn, err := strconv.ParseUint(num, 10, 32)
		if err != nil || asn == 0 {
			return nil, fmt.Errorf("datacenter list: line %d: %q is not an AS number or a prefix", n, line)
		}
		d.asns[uint32(asn)] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("datacenter list: %w", err)
	}
	if len(d.asns) == 0 && d.prefixes.Size() == 0 {
		return nil, errors.New("datacenter list: no entries")
	}
	return d, nil
}

// ASNs is the number of AS numbers listed.
func (d *Datacenters) ASNs() int { return len(d.asns) }

// Classifier implements IPClassifier: an address is a datacenter's when it
// falls in a listed prefix or its AS (from the table) is listed. Without a
// table, only the prefixes apply.
type Classifier struct {
	Table       *ASNTable // nil: no AS numbers known
	Datacenters *Datacenters
}

// Classify implements IPClassifier.
func (c *Classifier) Classify(ip netip.Addr) (uint32, bool) {
	ip = ip.Unmap()
	var asn uint32
	if c.Table != nil {
		asn, _ = c.Table.Lookup(ip)
	}
	if c.Datacenters == nil {
		return asn, false
	}
	if c.Datacenters.prefixes.Contains(ip) {
		return asn, true
	}
	return asn, asn != 0 && c.Datacenters.asns[asn]
}
