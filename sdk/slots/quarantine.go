package slots

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Quarantine is the value of the macOS extended attribute
// com.apple.quarantine, which LaunchServices attaches to downloaded files
// and propagates to what is copied out of them (the app dragged out of a
// quarantined disk image, the files Archive Utility extracts):
//
//	0083;65f1c2a0;Safari;3C5E0F6B-2E7A-4C2B-9C49-5E1A2C7D8B90
//
// It carries no URL (that lives in the user's QuarantineEventsV2 database,
// keyed by EventID), but its EventID is shared between a downloaded disk
// image or archive and the app that came out of it, which lets the SDK find
// the download whose kMDItemWhereFroms holds the token.
type Quarantine struct {
	// Flags are the quarantine flags (hex in the attribute).
	Flags uint16
	// Time is when the file was quarantined (zero when absent).
	Time time.Time
	// Agent is the application that downloaded the file, e.g. "Safari".
	Agent string
	// EventID is the quarantine event UUID, upper-cased; empty when absent.
	EventID string
}

var errQuarantine = errors.New("slots: malformed com.apple.quarantine")

// ParseQuarantine parses a com.apple.quarantine value: up to four fields
// separated by ';' (flags in hex, time in hex seconds since 1970, agent
// name, event UUID). Only the flags are required.
func ParseQuarantine(b []byte) (Quarantine, error) {
	var q Quarantine
	s := strings.TrimRight(string(b), "\x00\r\n")
	if len(s) > 4096 {
		return q, fmt.Errorf("%w: %d bytes is too large", errQuarantine, len(s))
	}
	f := strings.SplitN(s, ";", 4)
	flags, err := strconv.ParseUint(f[0], 16, 16)
	if err != nil {
		return q, fmt.Errorf("%w: flags %q", errQuarantine, f[0])
	}
	q.Flags = uint16(flags)
	if len(f) > 1 && f[1] != "" {
		sec, err := strconv.ParseUint(f[1], 16, 40)
		if err != nil {
			return q, fmt.Errorf("%w: time %q", errQuarantine, f[1])
		}
		q.Time = time.Unix(int64(sec), 0).UTC()
	}
	if len(f) > 2 {
		q.Agent = f[2]
	}
	if len(f) > 3 {
		q.EventID = strings.ToUpper(strings.TrimSpace(f[3]))
	}
	return q, nil
}
