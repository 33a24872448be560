package slots

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ZoneIdentifier is the Mark of the Web that Windows browsers attach to a
// downloaded file as the NTFS alternate data stream "<file>:Zone.Identifier":
//
//	[ZoneTransfer]
//	ZoneId=3
//	ReferrerUrl=https://example.com/apps/notes
//	HostUrl=https://dl.example.com/NotesSetup.exe?xp_token=…
type ZoneIdentifier struct {
	// ZoneID is the URL security zone (3 = Internet), or -1 when absent.
	ZoneID int
	// HostURL is the URL the file was downloaded from.
	HostURL string
	// ReferrerURL is the page the download started from.
	ReferrerURL string
}

// maxZoneIdentifierSize bounds the stream we are willing to parse; real
// streams are well under a kilobyte.
const maxZoneIdentifierSize = 64 << 10

var errZoneIdentifier = errors.New("slots: malformed Zone.Identifier")

// ParseZoneIdentifier parses the content of a Zone.Identifier stream: an
// INI text in UTF-8 (with or without a byte order mark) or UTF-16 with a
// byte order mark, CRLF or LF line ends. Keys are matched without regard to
// case, and only inside the [ZoneTransfer] section, which must be present.
func ParseZoneIdentifier(b []byte) (ZoneIdentifier, error) {
	z := ZoneIdentifier{ZoneID: -1}
	if len(b) > maxZoneIdentifierSize {
		return z, fmt.Errorf("%w: %d bytes is too large", errZoneIdentifier, len(b))
	}
	text, err := decodeText(b)
	if err != nil {
		return z, err
	}
	inSection, seen := false, false
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			name, ok := strings.CutSuffix(line[1:], "]")
			inSection = ok && strings.EqualFold(strings.TrimSpace(name), "ZoneTransfer")
			seen = seen || inSection
			continue
		}
		if !inSection {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case strings.EqualFold(key, "ZoneId"):
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 {
				return z, fmt.Errorf("%w: ZoneId %q", errZoneIdentifier, value)
			}
			z.ZoneID = n
		case strings.EqualFold(key, "HostUrl"):
			z.HostURL = value
		case strings.EqualFold(key, "ReferrerUrl"):
			z.ReferrerURL = value
		}
	}
	if !seen {
		return z, fmt.Errorf("%w: no [ZoneTransfer] section", errZoneIdentifier)
	}
	return z, nil
}

// decodeText turns UTF-8 (optional BOM) or BOM-marked UTF-16 into a string.
func decodeText(b []byte) (string, error) {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		b = b[3:]
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}), bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		var order binary.ByteOrder = binary.LittleEndian
		if b[0] == 0xFE {
			order = binary.BigEndian
		}
		b = b[2:]
		if len(b)%2 != 0 {
			return "", fmt.Errorf("%w: odd length UTF-16", errZoneIdentifier)
		}
		u := make([]uint16, len(b)/2)
		for i := range u {
			u[i] = order.Uint16(b[2*i:])
		}
		return string(utf16.Decode(u)), nil
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%w: not UTF-8", errZoneIdentifier)
	}
	return string(b), nil
}
