package main

import (
	"bytes"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The process guard's settings: read from flags and the environment, and
// checked.
func TestGuardConfig(t *testing.T) {
	cfg, err := parseConfig("serve", []string{"--memory-limit", "2GiB", "--read-timeout", "1m"},
		envMap(map[string]string{"XPROMO_BODY_READERS": "32", "XPROMO_READ_HEADER_TIMEOUT": "5s"}), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, guardConfig{MemoryLimit: 2 << 30, BodyReaders: 32, ReadTimeout: time.Minute, ReadHeaderTimeout: 5 * time.Second}, cfg.Guard)

	for v, want := range map[string]int64{"off": memoryLimitOff, "AUTO": memoryLimitAuto, "512MiB": 512 << 20, "1.5GB": 1.5e9, "134217728": 128 << 20} {
		got, err := parseMemoryLimit(v)
		require.NoError(t, err, v)
		assert.Equal(t, want, got, v)
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"--memory-limit", "1MiB"}},
		{[]string{"--memory-limit", "lots"}},
		{[]string{"--body-readers", "0"}},
		{[]string{"--read-timeout", "0s"}},
		{[]string{"--read-timeout", "5s", "--read-header-timeout", "10s"}},
	} {
		_, err := parseConfig("serve", tc.args, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
		var ue *usageError
		assert.ErrorAs(t, err, &ue, "%v", tc.args)
	}
}

// --memory-limit sets the runtime's limit; auto keeps GOMEMLIMIT's.
func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	log := slog.New(slog.DiscardHandler)

	applyMemoryLimit(guardConfig{MemoryLimit: 3 << 30}, envMap(nil), log)
	assert.Equal(t, int64(3<<30), debug.SetMemoryLimit(-1))
	applyMemoryLimit(guardConfig{MemoryLimit: memoryLimitAuto}, envMap(map[string]string{"GOMEMLIMIT": "3GiB"}), log)
	assert.Equal(t, int64(3<<30), debug.SetMemoryLimit(-1), "auto keeps the limit GOMEMLIMIT set")
	applyMemoryLimit(guardConfig{MemoryLimit: memoryLimitAuto}, envMap(nil), log)
	if avail, _ := availableMemory(); avail > 0 {
		assert.Equal(t, avail/4*3, debug.SetMemoryLimit(-1))
	}
	applyMemoryLimit(guardConfig{MemoryLimit: memoryLimitOff}, envMap(nil), log)
	assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}
