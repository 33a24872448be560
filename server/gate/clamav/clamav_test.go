package clamav_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/gate/clamav"
	"github.com/xpromo/xpromo/server/internal/testtool"
)

// eicar is the EICAR anti-virus test file: harmless, and detected by
// every scanner by agreement (https://www.eicar.org/download-anti-malware-testfile/).
const eicar = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

// clamd is a clamd started for the tests, with a signature database of
// two signatures for EICAR (an MD5 hash signature of the whole file and a
// body signature), so it needs no download from ClamAV's mirrors.
type clamd struct {
	socket string // unix socket path
	tcp    string // 127.0.0.1:port
}

// streamMaxLength is the test clamd's StreamMaxLength.
const streamMaxLength = 1 << 20

func startClamd(t *testing.T) *clamd {
	t.Helper()
	// /usr/sbin/clamd: Debian's, often not on a user's PATH.
	bin := testtool.Command(t, "clamd", "Debian: apt-get install clamav-daemon", "/usr/sbin/clamd")
	dir := t.TempDir()
	db := filepath.Join(dir, "db")
	require.NoError(t, os.Mkdir(db, 0o755))
	sum := md5.Sum([]byte(eicar))
	require.NoError(t, os.WriteFile(filepath.Join(db, "test.hdb"),
		fmt.Appendf(nil, "%s:%d:Test.EICAR.MD5\n", hex.EncodeToString(sum[:]), len(eicar)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(db, "test.ndb"),
		fmt.Appendf(nil, "Test.EICAR.Body:0:*:%s\n", hex.EncodeToString([]byte("EICAR-STANDARD-ANTIVIRUS-TEST-FILE"))), 0o644))

	c := &clamd{socket: filepath.Join(dir, "clamd.sock"), tcp: freeLoopbackAddr(t)}
	host, port, _ := net.SplitHostPort(c.tcp)
	conf := filepath.Join(dir, "clamd.conf")
	require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, `Foreground yes
DatabaseDirectory %s
LocalSocket %s
TCPAddr %s
TCPSocket %s
StreamMaxLength %d
PidFile %s
LogFile %s
`, db, c.socket, host, port, streamMaxLength, filepath.Join(dir, "clamd.pid"), filepath.Join(dir, "clamd.log")), 0o644))

	cmd := exec.Command(bin, "-c", conf)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	// Wait until it answers PING on both addresses (loading databases takes
	// a second or two), or give up when it exits.
	for _, addr := range []string{"unix://" + c.socket, "tcp://" + c.tcp} {
		client := newClient(t, addr)
		for deadline := time.Now().Add(60 * time.Second); ; {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := client.Ping(ctx)
			cancel()
			if err == nil {
				break
			}
			select {
			case werr := <-exited:
				t.Fatalf("clamd exited (%v):\n%s", werr, out.String())
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("clamd did not answer PING on %s: %v\n%s", addr, err, out.String())
			}
		}
	}
	return c
}

func freeLoopbackAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func newClient(t *testing.T, addr string, opts ...func(*clamav.Config)) *clamav.Client {
	t.Helper()
	cfg := clamav.Config{Address: addr, Timeout: 30 * time.Second, ChunkSize: 4096}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := clamav.New(cfg)
	require.NoError(t, err)
	return c
}

func zipWith(t *testing.T, name, content string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create(name)
	require.NoError(t, err)
	_, err = io.WriteString(w, content)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func TestScanWithClamd(t *testing.T) {
	d := startClamd(t)
	ctx := context.Background()
	clean := bytes.Repeat([]byte("a perfectly ordinary download. "), 10_000) // ~300 KiB, many chunks

	for _, addr := range []string{"unix://" + d.socket, d.socket, "tcp://" + d.tcp, d.tcp} {
		t.Run(addr, func(t *testing.T) {
			c := newClient(t, addr)
			require.NoError(t, c.Ping(ctx))
			v, err := c.Version(ctx)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(v, "ClamAV 1."), v)

			res, err := c.Scan(ctx, bytes.NewReader(clean))
			require.NoError(t, err)
			assert.False(t, res.Infected)
			assert.EqualValues(t, len(clean), res.Bytes)
			assert.Empty(t, clamav.ReasonFor(res, err))

			res, err = c.Scan(ctx, strings.NewReader(eicar))
			require.NoError(t, err)
			assert.True(t, res.Infected)
			assert.True(t, strings.HasPrefix(res.Signature, "Test.EICAR."), res.Signature)
			assert.Equal(t, clamav.ReasonMalwareFound, clamav.ReasonFor(res, err))
		})
	}

	c := newClient(t, "unix://"+d.socket)
	t.Run("inside a zip, as downloads come", func(t *testing.T) {
		res, err := c.Scan(ctx, bytes.NewReader(zipWith(t, "Evil.app/Contents/Resources/payload", eicar)))
		require.NoError(t, err)
		assert.True(t, res.Infected)
		assert.Equal(t, "Test.EICAR.Body.UNOFFICIAL", res.Signature, "the body signature matches inside the archive")

		res, err = c.Scan(ctx, bytes.NewReader(zipWith(t, "Good.app/Contents/Info.plist", "<plist/>")))
		require.NoError(t, err)
		assert.False(t, res.Infected)
	})
	t.Run("empty stream", func(t *testing.T) {
		res, err := c.Scan(ctx, bytes.NewReader(nil))
		require.NoError(t, err)
		assert.False(t, res.Infected)
	})
	t.Run("larger than clamd's StreamMaxLength", func(t *testing.T) {
		// clamd answers and hangs up while the client is still sending: the
		// client reads the answer after its broken pipe.
		for _, addr := range []string{"unix://" + d.socket, "tcp://" + d.tcp} {
			c := newClient(t, addr)
			res, err := c.Scan(ctx, bytes.NewReader(make([]byte, 2*streamMaxLength)))
			assert.ErrorIs(t, err, clamav.ErrTooLarge, addr)
			assert.Equal(t, clamav.ReasonTooLargeToScan, clamav.ReasonFor(res, err))
			// and the next scan is not hurt
			res, err = c.Scan(ctx, strings.NewReader(eicar))
			require.NoError(t, err)
			assert.True(t, res.Infected)
		}
	})
	t.Run("larger than the client's MaxStreamBytes: not even sent", func(t *testing.T) {
		small := newClient(t, "unix://"+d.socket, func(c *clamav.Config) { c.MaxStreamBytes = 100 })
		_, err := small.Scan(ctx, bytes.NewReader(make([]byte, 101)))
		assert.ErrorIs(t, err, clamav.ErrTooLarge)
		res, err := small.Scan(ctx, bytes.NewReader(make([]byte, 100)))
		require.NoError(t, err)
		assert.False(t, res.Infected)
	})
	t.Run("a stream that fails to read is the reader's error", func(t *testing.T) {
		boom := errors.New("disk on fire")
		_, err := c.Scan(ctx, io.MultiReader(strings.NewReader("abc"), iotestErrReader{boom}))
		assert.ErrorIs(t, err, boom)
		assert.NotErrorIs(t, err, clamav.ErrUnavailable)
	})
}

type iotestErrReader struct{ err error }

func (r iotestErrReader) Read([]byte) (int, error) { return 0, r.err }

func TestNobodyListening(t *testing.T) {
	ctx := context.Background()
	for _, addr := range []string{"tcp://" + freeLoopbackAddr(t), filepath.Join(t.TempDir(), "none.sock")} {
		c := newClient(t, addr)
		assert.ErrorIs(t, c.Ping(ctx), clamav.ErrUnavailable)
		res, err := c.Scan(ctx, strings.NewReader(eicar))
		assert.ErrorIs(t, err, clamav.ErrUnavailable)
		assert.Equal(t, clamav.ReasonScannerUnavailable, clamav.ReasonFor(res, err))
	}
}

// fakeClamd accepts one connection at a time, reads what is sent until
// the end of an INSTREAM, then does what answer says.
func fakeClamd(t *testing.T, answer func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 64<<10)
				var got []byte
				for !bytes.HasSuffix(got, []byte{0, 0, 0, 0}) && !bytes.Equal(got, []byte("zPING\x00")) {
					n, err := conn.Read(buf)
					if err != nil {
						return
					}
					got = append(got, buf[:n]...)
				}
				answer(conn)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestMisbehavingServers(t *testing.T) {
	for name, tc := range map[string]struct {
		answer func(net.Conn)
		want   error
	}{
		"hangs up":               {func(c net.Conn) {}, clamav.ErrUnavailable},
		"garbage":                {func(c net.Conn) { c.Write([]byte("hello\x00")) }, clamav.ErrProtocol},
		"no NUL, then EOF":       {func(c net.Conn) { c.Write([]byte("stream: OK")) }, nil},
		"endless reply":          {func(c net.Conn) { c.Write(bytes.Repeat([]byte("x"), 10<<10)) }, clamav.ErrProtocol},
		"its own error":          {func(c net.Conn) { c.Write([]byte("Can't allocate memory ERROR\x00")) }, clamav.ErrScanFailed},
		"a FOUND without a name": {func(c net.Conn) { c.Write([]byte("stream:  FOUND\x00")) }, clamav.ErrProtocol},
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, fakeClamd(t, tc.answer))
			_, err := c.Scan(context.Background(), strings.NewReader("payload"))
			if tc.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tc.want)
			}
		})
	}

	t.Run("never answers: the context ends the wait", func(t *testing.T) {
		block := make(chan struct{})
		t.Cleanup(func() { close(block) })
		c := newClient(t, fakeClamd(t, func(net.Conn) { <-block }))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := c.Scan(ctx, strings.NewReader("payload"))
		assert.ErrorIs(t, err, clamav.ErrUnavailable)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestAddresses(t *testing.T) {
	for _, bad := range []string{"", "unix://", "localhost", "tcp://nohost"} {
		_, err := clamav.New(clamav.Config{Address: bad})
		assert.Error(t, err, bad)
	}
}
