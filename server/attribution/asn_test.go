package attribution_test

import (
	"bytes"
	"compress/gzip"
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/attribution"
)

func loadTestTable(t testing.TB) *attribution.ASNTable {
	t.Helper()
	f, err := os.Open("testdata/ip2asn-test.tsv")
	require.NoError(t, err)
	defer f.Close()
	table, err := attribution.LoadIPToASN(f)
	require.NoError(t, err)
	return table
}

func TestLoadIPToASN(t *testing.T) {
	table := loadTestTable(t)
	assert.Equal(t, 9, table.Ranges(), "the two rows of AS 0 are not routed")
	for ip, want := range map[string]uint32{
		"1.0.0.1": 13335, "3.0.0.0": 16509, "3.127.255.255": 16509, "81.2.69.160": 20712,
		"203.0.113.255": 64500, "2001:db8::1": 64496, "2001:db8:1:ff::1": 64500, "2a05:d050::1": 16509,
		"::ffff:3.5.140.2": 16509, // IPv4-mapped IPv6 is its IPv4 address
	} {
		got, ok := table.Lookup(netip.MustParseAddr(ip))
		assert.True(t, ok, ip)
		assert.Equal(t, want, got, ip)
	}
	for _, ip := range []string{"3.128.0.0", "127.0.0.1", "0.1.2.3", "9.9.9.9", "2001:db8:2::1"} {
		_, ok := table.Lookup(netip.MustParseAddr(ip))
		assert.False(t, ok, ip)
	}

	// The same table gzipped loads the same.
	raw, err := os.ReadFile("testdata/ip2asn-test.tsv")
	require.NoError(t, err)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err = zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	zipped, err := attribution.LoadIPToASN(&gz)
	require.NoError(t, err)
	assert.Equal(t, table.Ranges(), zipped.Ranges())

	for _, bad := range []string{
		"1.0.0.0\t1.0.0.255\n",                    // no AS number
		"1.0.0.0\tnope\t13335\tUS\tX\n",           // not an address
		"1.0.0.9\t1.0.0.1\t13335\tUS\tX\n",        // end before start
		"1.0.0.0\t2001:db8::\t13335\tUS\tX\n",     // mixed families
		"1.0.0.0\t1.0.0.255\t4294967296\tUS\tX\n", // AS number too large
		"1.0.0.0\t1.0.0.255\t-1\tUS\tX\n",         // negative
		"\n\n1.0.0.0 1.0.0.255 13335 US X\n",      // spaces, not tabs
	} {
		_, err := attribution.LoadIPToASN(strings.NewReader(bad))
		assert.Error(t, err, "%q", bad)
	}
}

// RangePrefixes covers exactly the range, with prefixes that do not
// overlap, for random ranges of both families.
func TestRangePrefixes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	addr := func(v6 bool) netip.Addr {
		if v6 {
			var b [16]byte
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			b[0] = 0x20
			return netip.AddrFrom16(b)
		}
		return netip.AddrFrom4([4]byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))})
	}
	for i := range 1000 {
		v6 := i%2 == 1
		a, b := addr(v6), addr(v6)
		if b.Less(a) {
			a, b = b, a
		}
		if i%3 == 0 { // short ranges too
			b = a
			for range rng.IntN(600) {
				if n := b.Next(); n.IsValid() {
					b = n
				}
			}
		}
		ps := attribution.RangePrefixes(a, b)
		require.NotEmpty(t, ps)
		// Contiguous, in order, from a to b.
		assert.Equal(t, a, ps[0].Addr(), "%s-%s", a, b)
		for j, p := range ps {
			require.Equal(t, p.Masked(), p, "prefix %s is not canonical", p)
			last := lastOf(p)
			if j+1 < len(ps) {
				require.Equal(t, last.Next(), ps[j+1].Addr(), "%s-%s: gap or overlap after %s", a, b, p)
			} else {
				require.Equal(t, b, last, "%s-%s ends at %s", a, b, last)
			}
		}
		// At most two prefixes per bit of address.
		assert.LessOrEqual(t, len(ps), 2*a.BitLen())
	}
	// Whole spaces are one prefix.
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}, attribution.RangePrefixes(netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("255.255.255.255")))
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/31"), netip.MustParsePrefix("10.0.0.2/32")},
		attribution.RangePrefixes(netip.MustParseAddr("10.0.0.0"), netip.MustParseAddr("10.0.0.2")))
}

// lastOf is the highest address of p, by walking bytes.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestClassifier(t *testing.T) {
	f, err := os.Open("testdata/datacenters-test.txt")
	require.NoError(t, err)
	defer f.Close()
	dc, err := attribution.ParseDatacenters(f)
	require.NoError(t, err)
	c := &attribution.Classifier{Table: loadTestTable(t), Datacenters: dc}
	for ip, want := range map[string]struct {
		asn uint32
		dc  bool
	}{
		"203.0.113.9":   {64500, true},  // hosting AS
		"3.5.140.2":     {16509, true},  // AWS
		"2001:db8:1::7": {64500, true},  // hosting AS, IPv6
		"192.0.2.200":   {64497, true},  // a listed cloud range in a broadband AS
		"192.0.2.10":    {64497, false}, // the same AS outside the range
		"198.51.100.7":  {64496, false}, // residential
		"1.0.0.1":       {13335, false}, // not in this list
		"9.9.9.9":       {0, false},     // unknown
	} {
		asn, isDC := c.Classify(netip.MustParseAddr(ip))
		assert.Equal(t, want.asn, asn, ip)
		assert.Equal(t, want.dc, isDC, ip)
	}
	// Without a table only prefixes apply.
	c = &attribution.Classifier{Datacenters: dc}
	_, isDC := c.Classify(netip.MustParseAddr("203.0.113.9"))
	assert.False(t, isDC)
	_, isDC = c.Classify(netip.MustParseAddr("192.0.2.200"))
	assert.True(t, isDC)

	// The shipped list parses and names the big clouds.
	def := attribution.DefaultDatacenters()
	c = &attribution.Classifier{Table: loadTestTable(t), Datacenters: def}
	_, isDC = c.Classify(netip.MustParseAddr("3.5.140.2"))
	assert.True(t, isDC, "AWS is in the shipped list")
	assert.Greater(t, def.ASNs(), 20)

	for _, bad := range []string{"", "# only a comment\n", "AS0\n", "ASX\n", "10.0.0.0/33\n"} {
		_, err := attribution.ParseDatacenters(strings.NewReader(bad))
		assert.Error(t, err, "%q", bad)
	}
}

// FuzzLoadIPToASN: the table loader never panics on operator input, and
// whatever it loads answers lookups.
func FuzzLoadIPToASN(f *testing.F) {
	raw, err := os.ReadFile("testdata/ip2asn-test.tsv")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(raw))
	f.Add("1.0.0.0\t1.0.0.255\t13335\tUS\tX\n")
	f.Add("::\tffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff\t1\tZZ\tall\n")
	f.Add("0.0.0.0\t255.255.255.255\t7\tZZ\tall\n# comment\n\n")
	f.Fuzz(func(t *testing.T, data string) {
		table, err := attribution.LoadIPToASN(strings.NewReader(data))
		if err != nil {
			return
		}
		for _, ip := range []string{"1.0.0.1", "::1", "255.255.255.255", "2001:db8::1"} {
			table.Lookup(netip.MustParseAddr(ip))
		}
	})
}

// FuzzParseDatacenters: the datacenter list parser never panics.
func FuzzParseDatacenters(f *testing.F) {
	f.Add("AS16509\n3.0.0.0/8 # aws\n")
	f.Add("2600:1f00::/24\n16509\n")
	f.Fuzz(func(t *testing.T, data string) {
		d, err := attribution.ParseDatacenters(strings.NewReader(data))
		if err != nil {
			return
		}
		(&attribution.Classifier{Datacenters: d}).Classify(netip.MustParseAddr("3.1.2.3"))
	})
}
