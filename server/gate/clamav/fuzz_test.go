package clamav

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A reply is whatever the other end of the socket sends: the parser
// returns a verdict or one of its errors, never panics, and calls nothing
// infected without a printable signature name.
func FuzzParseScanReply(f *testing.F) {
	for _, s := range []string{
		"stream: OK", "stream: Test.EICAR.Body.UNOFFICIAL FOUND", "INSTREAM size limit exceeded. ERROR",
		"stream: Heuristics.Limits.Exceeded.MaxFileSize FOUND", "Can't allocate memory ERROR", "stream:  FOUND",
		"1: stream: OK", "stream: OK\n", "stream: Win.Trojan.\x1b[2J FOUND", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, reply []byte) {
		res, err := parseScanReply(reply)
		if err != nil {
			if res.Infected {
				t.Fatalf("infected and an error for %q", reply)
			}
			if !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrScanFailed) && !errors.Is(err, ErrProtocol) {
				t.Fatalf("unexpected error %v for %q", err, reply)
			}
			return
		}
		if res.Infected != (res.Signature != "") || strings.ContainsAny(res.Signature, "\x00\n\r\x1b") {
			t.Fatalf("parseScanReply(%q) = %+v", reply, res)
		}
		if !res.Infected && !bytes.HasPrefix(reply, []byte("stream: OK")) {
			t.Fatalf("clean from %q", reply)
		}
	})
}

func FuzzReadReply(f *testing.F) {
	f.Add([]byte("PONG\x00"))
	f.Add([]byte("stream: OK"))
	f.Add(bytes.Repeat([]byte("x"), 5000))
	f.Fuzz(func(t *testing.T, data []byte) {
		reply, err := readReply(bytes.NewReader(data))
		if err == nil && (len(reply) > maxReplyBytes+512 || bytes.IndexByte(reply, 0) >= 0) {
			t.Fatalf("readReply(%q) = %q", data, reply)
		}
	})
}
