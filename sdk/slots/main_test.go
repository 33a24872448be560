package slots

import (
	"os"
	"sync/atomic"
	"testing"
)

// fsyncs counts fsync calls. The tests simulate crashes by abandoning open
// files, which the page cache survives, so real fsyncs would only make them
// slow (they are thousands on a busy CI disk); TestEnqueueIsDurable checks
// that the calls are made.
var fsyncs atomic.Int64

func TestMain(m *testing.M) {
	fsync = func(*os.File) error { fsyncs.Add(1); return nil }
	os.Exit(m.Run())
}
