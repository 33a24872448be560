package main

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// guardConfig is the per-process guard (docs/operations.md, "The process
// guard"): the memory limit the server sets for itself, how many requests
// may send a body at once, and the read deadlines of slow clients.
type guardConfig struct {
	// MemoryLimit is the Go runtime's soft memory limit in bytes
	// (debug.SetMemoryLimit); memoryLimitAuto, or memoryLimitOff.
	MemoryLimit       int64
	BodyReaders       int           // httpapi.Config.BodyReaders
	ReadTimeout       time.Duration // http.Server.ReadTimeout: a request's headers and body
	ReadHeaderTimeout time.Duration // http.Server.ReadHeaderTimeout
}

const (
	memoryLimitAuto = 0  // GOMEMLIMIT when set, else 3/4 of the memory available
	memoryLimitOff  = -1 // no limit: the runtime's default
)

// defaultGuard is guardConfig with no setting given.
var defaultGuard = guardConfig{MemoryLimit: memoryLimitAuto, BodyReaders: 256, ReadTimeout: 30 * time.Second, ReadHeaderTimeout: 10 * time.Second}

// maxBodyReaders bounds --body-readers: each may hold a 1 MiB body.
const maxBodyReaders = 65536

func parseGuard(cfg *config, get func(string) string, source map[string]string) error {
	g := &cfg.Guard
	limit, err := parseMemoryLimit(get("memory-limit"))
	if err != nil {
		return usagef("%s: %v", source["memory-limit"], err)
	}
	g.MemoryLimit = limit
	if g.BodyReaders, err = strconv.Atoi(get("body-readers")); err != nil || g.BodyReaders < 1 || g.BodyReaders > maxBodyReaders {
		return usagef("%s: %q is not a number of requests from 1 to %d", source["body-readers"], get("body-readers"), maxBodyReaders)
	}
	for name, dst := range map[string]*time.Duration{"read-timeout": &g.ReadTimeout, "read-header-timeout": &g.ReadHeaderTimeout} {
		d, err := time.ParseDuration(get(name))
		if err != nil || d <= 0 {
			return usagef("%s: %q is not a positive Go duration (e.g. 30s)", source[name], get(name))
		}
		*dst = d
	}
	if g.ReadHeaderTimeout > g.ReadTimeout {
		return usagef("%s: %s is longer than %s (%s), which covers the headers too", source["read-header-timeout"], g.ReadHeaderTimeout, source["read-timeout"], g.ReadTimeout)
	}
	return nil
}

// parseMemoryLimit reads auto, off, a number of bytes, or one with a unit
// (KiB, MiB, GiB, TiB; or KB, MB, GB, TB in powers of ten), as GOMEMLIMIT
// is written.
func parseMemoryLimit(v string) (int64, error) {
	switch strings.ToLower(v) {
	case "auto":
		return memoryLimitAuto, nil
	case "off":
		return memoryLimitOff, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, mult := v, 1.0
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(num, 64)
	bytes := n * mult
	if err != nil || math.IsNaN(n) || bytes < 64<<20 || bytes > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not auto, off, nor a size of at least 64MiB (e.g. 2GiB)", v)
	}
	return int64(bytes), nil
}

// applyMemoryLimit sets the runtime's memory limit as g says, and logs it.
// auto keeps a GOMEMLIMIT the environment set (the runtime read it at
// start); without one it takes 3/4 of the memory available to the process
// (its cgroup's memory.max, else the machine's), leaving the rest to the
// runtime's own overhead and to SQLite's page cache. The limit is soft: the
// collector works harder near it; the hard bounds are the input limits and
// the body slots (docs/limits.md).
func applyMemoryLimit(g guardConfig, env func(string) string, log *slog.Logger) {
	limit, from := g.MemoryLimit, "--memory-limit"
	switch {
	case limit == memoryLimitOff:
		debug.SetMemoryLimit(math.MaxInt64)
		log.Info("no memory limit (--memory-limit off)")
		return
	case limit == memoryLimitAuto && env("GOMEMLIMIT") != "":
		limit, from = debug.SetMemoryLimit(-1), "GOMEMLIMIT"
	case limit == memoryLimitAuto:
		avail, source := availableMemory()
		if avail <= 0 {
			log.Warn("no memory limit: the memory available could not be read; set --memory-limit")
			return
		}
		limit, from = avail/4*3, "3/4 of "+source
	}
	if from != "GOMEMLIMIT" {
		debug.SetMemoryLimit(limit)
	}
	log.Info("memory limit", slog.Int64("bytes", limit), slog.String("from", from))
}

// availableMemory is the process's cgroup v2 memory.max when it has one, else
// the machine's MemTotal; 0 when neither can be read.
func availableMemory() (int64, string) {
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && n > 0 {
			return n, "the cgroup's memory.max"
		}
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil && kb > 0 {
				return kb << 10, "the machine's memory"
			}
		}
	}
	return 0, ""
}
