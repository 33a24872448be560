// Package clamav is the vetting gate's malware check: a client of ClamAV's
// daemon, clamd, that streams a download to it with the INSTREAM command
// and reads the verdict.
//
// What it checks: whatever clamd's loaded signature databases detect in the
// bytes sent (clamd unpacks archives, installers and documents itself, up
// to its own limits). The client speaks the documented protocol of clamd(8)
// with the "z" prefix (NUL-terminated commands and replies): PING, VERSION
// and INSTREAM, whose data goes in chunks of a 4-byte big-endian length
// then the bytes, ended by a zero-length chunk. clamd is reached over TCP
// or a unix socket at a configurable address.
//
// What it does not check: anything clamd's databases do not know. Keeping
// them fresh (freshclam) is the operator's job; a clamd with stale or
// missing databases answers "OK" to everything, which is why Version
// reports the database version and date for the evidence.
//
// Limits: a stream longer than Config.MaxStreamBytes is not sent, and one
// longer than clamd's StreamMaxLength is cut off by clamd; both are
// ErrTooLarge (gate_too_large_to_scan), never a pass. Keep MaxStreamBytes
// at or below StreamMaxLength. clamd's own scan limits (MaxScanSize,
// MaxFileSize, recursion) can leave parts of a large archive unscanned
// without saying so unless clamd runs with AlertExceedsMax.
package clamav

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
	"unicode"
)

// Reason codes of the malware check, as they appear in an app's `reasons`.
const (
	// ReasonMalwareFound: clamd found a signature in the download.
	ReasonMalwareFound = "gate_malware_found"
	// ReasonTooLargeToScan: the download is larger than the scanner takes.
	ReasonTooLargeToScan = "gate_too_large_to_scan"
	// ReasonScannerUnavailable: clamd could not be reached, timed out or
	// failed; transient.
	ReasonScannerUnavailable = "gate_scanner_unavailable"
)

var (
	// ErrUnavailable: clamd could not be reached or the connection failed.
	ErrUnavailable = errors.New("clamav: clamd unavailable")
	// ErrTooLarge: the stream is longer than MaxStreamBytes or than clamd's
	// StreamMaxLength.
	ErrTooLarge = errors.New("clamav: stream too large to scan")
	// ErrScanFailed: clamd answered with an error of its own.
	ErrScanFailed = errors.New("clamav: clamd could not scan the stream")
	// ErrProtocol: clamd's reply is not one this client understands.
	ErrProtocol = errors.New("clamav: unexpected reply from clamd")
)

// Defaults used when the corresponding Config field is zero.
const (
	DefaultTimeout        = 2 * time.Minute
	DefaultMaxStreamBytes = 100 << 20 // 100 MiB
	DefaultChunkSize      = 64 << 10
	maxReplyBytes         = 4 << 10
)

// Config configures a Client.
type Config struct {
	// Address of clamd: "tcp://127.0.0.1:3310", "unix:///run/clamav/clamd.ctl",
	// a bare "host:port" or an absolute socket path.
	Address string
	// Timeout bounds each command, from dialling to the reply, unless the
	// context's deadline is sooner. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxStreamBytes is the most Scan sends; zero means
	// DefaultMaxStreamBytes.
	MaxStreamBytes int64
	// ChunkSize is the size of INSTREAM chunks; zero means
	// DefaultChunkSize.
	ChunkSize int
}

// Client talks to one clamd. It is safe for concurrent use: each command
// opens its own connection.
type Client struct {
	network, address string
	cfg              Config
}

// New parses cfg.Address and returns a Client. It does not connect.
func New(cfg Config) (*Client, error) {
	network, address, err := parseAddress(cfg.Address)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxStreamBytes <= 0 {
		cfg.MaxStreamBytes = DefaultMaxStreamBytes
	}
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = DefaultChunkSize
	}
	return &Client{network: network, address: address, cfg: cfg}, nil
}

func parseAddress(a string) (network, address string, err error) {
	switch {
	case strings.HasPrefix(a, "unix://"):
		network, address = "unix", strings.TrimPrefix(a, "unix://")
	case strings.HasPrefix(a, "tcp://"):
		network, address = "tcp", strings.TrimPrefix(a, "tcp://")
	case strings.HasPrefix(a, "/"):
		network, address = "unix", a
	default:
		network, address = "tcp", a
	}
	if network == "tcp" {
		if _, _, err := net.SplitHostPort(address); err != nil {
			return "", "", fmt.Errorf("clamav: address %q: %w", a, err)
		}
	} else if address == "" {
		return "", "", fmt.Errorf("clamav: address %q has no socket path", a)
	}
	return network, address, nil
}

// Ping checks that clamd answers.
func (c *Client) Ping(ctx context.Context) error {
	reply, err := c.command(ctx, "PING", nil)
	if err != nil {
		return err
	}
	if string(reply) != "PONG" {
		return fmt.Errorf("%w: PING answered %q", ErrProtocol, reply)
	}
	return nil
}

// Version returns clamd's version line: "ClamAV 1.4.6/27467/Fri Nov 20
// 09:35:01 2026" (engine/database version/database date), or "ClamAV
// 1.4.6" alone when no official database is loaded.
func (c *Client) Version(ctx context.Context) (string, error) {
	reply, err := c.command(ctx, "VERSION", nil)
	if err != nil {
		return "", err
	}
	if !bytes.HasPrefix(reply, []byte("ClamAV ")) {
		return "", fmt.Errorf("%w: VERSION answered %q", ErrProtocol, reply)
	}
	return string(reply), nil
}

// Result is clamd's verdict on a stream.
type Result struct {
	Infected  bool
	Signature string // the signature found, when Infected
	Bytes     int64  // how many bytes were scanned
}

// Scan streams r to clamd and returns its verdict. Errors wrap ErrTooLarge,
// ErrScanFailed, ErrProtocol or ErrUnavailable (ReasonFor maps them), or
// are r's own read error.
func (c *Client) Scan(ctx context.Context, r io.Reader) (Result, error) {
	var sent int64
	reply, err := c.command(ctx, "INSTREAM", func(w io.Writer) error {
		// Each chunk goes out in one write: its 4-byte length, then the data
		// read straight after it in the same buffer.
		buf := make([]byte, 4+c.cfg.ChunkSize)
		for {
			n, rerr := r.Read(buf[4:])
			if n > 0 {
				if sent+int64(n) > c.cfg.MaxStreamBytes {
					return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, c.cfg.MaxStreamBytes)
				}
				binary.BigEndian.PutUint32(buf, uint32(n))
				if _, err := w.Write(buf[:4+n]); err != nil {
					return err
				}
				sent += int64(n)
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				return &readError{rerr}
			}
		}
		_, err := w.Write([]byte{0, 0, 0, 0})
		return err
	})
	if err != nil {
		return Result{}, err
	}
	res, err := parseScanReply(reply)
	res.Bytes = sent
	return res, err
}

// readError marks a failure to read the caller's stream, which is not
// clamd's.
type readError struct{ err error }

func (e *readError) Error() string { return "clamav: reading the stream to scan: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// command sends "z<name>\0", lets send write what follows, and returns the
// NUL-terminated reply without its NUL.
func (c *Client) command(ctx context.Context, name string, send func(io.Writer) error) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, c.network, c.address)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer conn.Close()
	// The context's end interrupts any read or write in progress.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	_, err = conn.Write([]byte("z" + name + "\x00"))
	if err == nil && send != nil {
		err = send(conn)
	}
	if err != nil {
		var re *readError
		if errors.As(err, &re) || errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		// clamd may have answered and hung up (its size limit): its reply
		// says more than our broken pipe.
		if reply, rerr := readReply(conn); rerr == nil && len(reply) > 0 {
			return reply, nil
		}
		return nil, c.failure(ctx, name, err)
	}
	reply, err := readReply(conn)
	if err != nil {
		return nil, c.failure(ctx, name, err)
	}
	return reply, nil
}

func (c *Client) failure(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return fmt.Errorf("%w: %s on %s %s: %w", ErrUnavailable, name, c.network, c.address, err)
}

// readReply reads up to the NUL that ends a z-command's reply (or the end
// of the connection), at most maxReplyBytes.
func readReply(r io.Reader) ([]byte, error) {
	var reply []byte
	buf := make([]byte, 512)
	for {
		n, err := r.Read(buf)
		reply = append(reply, buf[:n]...)
		if i := bytes.IndexByte(reply, 0); i >= 0 {
			return reply[:i], nil
		}
		if len(reply) > maxReplyBytes {
			return nil, fmt.Errorf("%w: reply longer than %d bytes", ErrProtocol, maxReplyBytes)
		}
		if err == io.EOF {
			if len(reply) == 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return reply, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// parseScanReply reads clamd's answer to INSTREAM: "stream: OK",
// "stream: <signature> FOUND", "<message> ERROR" (such as "INSTREAM size
// limit exceeded. ERROR").
func parseScanReply(reply []byte) (Result, error) {
	s := strings.TrimRight(string(reply), "\n")
	if msg, ok := strings.CutSuffix(s, " ERROR"); ok {
		if strings.Contains(msg, "size limit exceeded") {
			return Result{}, fmt.Errorf("%w: clamd: %s", ErrTooLarge, msg)
		}
		return Result{}, fmt.Errorf("%w: %s", ErrScanFailed, printable(msg))
	}
	rest, ok := strings.CutPrefix(s, "stream: ")
	if !ok {
		return Result{}, fmt.Errorf("%w: %q", ErrProtocol, s)
	}
	if rest == "OK" {
		return Result{}, nil
	}
	sig, ok := strings.CutSuffix(rest, " FOUND")
	if !ok || sig == "" || sig != printable(sig) {
		return Result{}, fmt.Errorf("%w: %q", ErrProtocol, s)
	}
	return Result{Infected: true, Signature: sig}, nil
}

// printable drops what has no business in a signature name or a message
// that ends up in evidence and logs.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
}

// ReasonFor maps an outcome of Scan to its reason code: "" for a clean
// result.
func ReasonFor(res Result, err error) string {
	switch {
	case errors.Is(err, ErrTooLarge):
		return ReasonTooLargeToScan
	case err != nil:
		return ReasonScannerUnavailable
	case res.Infected:
		return ReasonMalwareFound
	}
	return ""
}
