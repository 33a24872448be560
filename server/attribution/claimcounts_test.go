package attribution_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
)

// BenchmarkClaimCounts makes BenchmarkClaim's claims on PostgreSQL, one at
// a time, through a pgtest relay, and reports per claim what does not
// depend on the load of the machine: statements and round trips (counted in
// the relay), commits, rows written per table (pg_stat_user_tables), WAL
// records and bytes of the claims' database (pg_walinspect), trigger calls
// and their time (pg_stat_user_functions), and the CPU time of the
// benchmark's process and of the database's backends (/proc/<pid>/stat,
// when the server runs on this machine). Its rate says little (the relay
// is in the way, one claim at a time): the rates are BenchmarkClaim's.
// BENCHMARKS.md, "Claims, round 3".
//
// For experiments, XPROMO_CLAIMCOUNTS_SQL runs statements on the database
// before the claims and XPROMO_CLAIMCOUNTS_AFTER after them, printing the
// rows of the last (statements separated by ";;"): e.g. EXPLAIN EXECUTE of
// a statement prepared with plan_cache_mode = force_generic_plan.
func BenchmarkClaimCounts(b *testing.B) {
	direct := pgtest.NewTestDatabase(b)
	ctx := context.Background()
	owner, err := pgx.Connect(ctx, direct)
	if err != nil {
		b.Fatal(err)
	}
	defer owner.Close(ctx)
	var dbname string
	var dboid uint32
	if err := owner.QueryRow(ctx, `SELECT current_database(), oid FROM pg_database WHERE datname = current_database()`).Scan(&dbname, &dboid); err != nil {
		b.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_walinspect; ALTER DATABASE "`+dbname+`" SET track_functions = 'all'`); err != nil {
		b.Skipf("the counts need pg_walinspect and a superuser: %v", err)
	}
	relay := pgtest.NewRelay(b, direct)
	db, err := postgres.Open(ctx, relay.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if q := os.Getenv("XPROMO_CLAIMCOUNTS_SQL"); q != "" { // experiments
		if _, err := owner.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	w := newWorld(b, db, benchRules)
	claims := benchClaims(b, w)

	// The pool's sessions start afresh (with track_functions) and flush
	// their statistics as they end.
	stats := func() map[string]int64 {
		db.Pool().Reset()
		time.Sleep(1500 * time.Millisecond)
		m := map[string]int64{}
		rows, err := owner.Query(ctx, `SELECT kind || ' ' || name, n FROM (
			SELECT relname AS name, 'inserted' AS kind, n_tup_ins AS n FROM pg_stat_user_tables
			UNION ALL SELECT relname, 'updated', n_tup_upd FROM pg_stat_user_tables
			UNION ALL SELECT relname, 'updated (HOT)', n_tup_hot_upd FROM pg_stat_user_tables
			UNION ALL SELECT relname, 'deleted', n_tup_del FROM pg_stat_user_tables
			UNION ALL SELECT funcname, 'calls of', calls FROM pg_stat_user_functions
			UNION ALL SELECT funcname, 'µs (self) in', (self_time * 1000)::bigint FROM pg_stat_user_functions
			UNION ALL SELECT funcname, 'µs (total) in', (total_time * 1000)::bigint FROM pg_stat_user_functions
			UNION ALL SELECT 'commits', 'database', xact_commit FROM pg_stat_database WHERE datname = current_database()
			UNION ALL SELECT 'rollbacks', 'database', xact_rollback FROM pg_stat_database WHERE datname = current_database()
			UNION ALL SELECT 'buffers hit+read', 'database', blks_hit + blks_read FROM pg_stat_database WHERE datname = current_database()
		) s WHERE n > 0`)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var k string
			var n int64
			if err := rows.Scan(&k, &n); err != nil {
				b.Fatal(err)
			}
			m[k] = n
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		return m
	}
	lsn := func() string {
		var l string
		if err := owner.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&l); err != nil {
			b.Fatal(err)
		}
		return l
	}
	// A temporary slot keeps the run's WAL until it is read (the session's
	// end drops it).
	if _, err := owner.Exec(ctx, `SELECT pg_create_physical_replication_slot('xpromo_claimcounts_' || pg_backend_pid(), true, true)`); err != nil {
		b.Fatal(err)
	}
	before := stats()
	startLSN := lsn()
	st0, rt0 := relay.Counts()
	cpu0 := processCPU()

	// One claim at a time: the CPU times are then the claims' own, not
	// inflated by a dozen backends sharing the machine's cores.
	b.ResetTimer()
	for _, c := range claims {
		if _, _, err := w.attr.Install(w.ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()

	cpu := processCPU() - cpu0
	st, rt := relay.Counts()
	endLSN := lsn()
	var pids []int
	rows, err := owner.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		b.Fatal(err)
	}
	pids, err = pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		b.Fatal(err)
	}
	var backendCPU time.Duration // the sessions opened after before's reset
	local := true
	for _, pid := range pids {
		d, ok := procCPU(pid)
		backendCPU, local = backendCPU+d, local && ok
	}
	after := stats()
	if q := os.Getenv("XPROMO_CLAIMCOUNTS_AFTER"); q != "" { // experiments
		qs := strings.Split(q, ";;")
		for _, q := range qs[:len(qs)-1] {
			if _, err := owner.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		rows, err := owner.Query(ctx, qs[len(qs)-1])
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				b.Fatal(err)
			}
			fmt.Println(line)
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
	}

	n := float64(b.N)
	per := func(v float64, unit string) { b.ReportMetric(v/n, unit) }
	per(float64(st-st0), "statements/claim")
	per(float64(rt-rt0), "roundtrips/claim")
	per(float64(cpu.Microseconds()), "bench-cpu-µs/claim")
	if local {
		per(float64(backendCPU.Microseconds()), "pg-cpu-µs/claim")
	}
	var keys []string
	for k := range after {
		if after[k] != before[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%-60s %8.2f a claim\n", k, float64(after[k]-before[k])/n)
	}

	// The WAL of this database's pages, and the commit records of the
	// transactions that wrote them.
	wal, err := owner.Query(ctx, `WITH r AS (SELECT * FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)),
		ours AS (SELECT DISTINCT xid FROM r WHERE block_ref LIKE $3 AND xid <> 0)
		SELECT resource_manager || ' ' || split_part(record_type, ' ', 1), count(*), sum(record_length), sum(fpi_length)
		FROM r WHERE block_ref LIKE $3 OR (resource_manager = 'Transaction' AND xid IN (SELECT xid FROM ours))
		GROUP BY 1 ORDER BY 3 DESC`, startLSN, endLSN, fmt.Sprintf("%%/%d/%%", dboid))
	if err != nil {
		b.Fatal(err)
	}
	var walBytes, walRecords int64
	for wal.Next() {
		var kind string
		var count, bytes, fpi int64
		if err := wal.Scan(&kind, &count, &bytes, &fpi); err != nil {
			b.Fatal(err)
		}
		walBytes += bytes
		walRecords += count
		fmt.Printf("WAL %-40s %6.2f records %8.1f bytes (%6.1f of page images) a claim\n", kind, float64(count)/n, float64(bytes)/n, float64(fpi)/n)
	}
	if err := wal.Err(); err != nil {
		b.Fatal(err)
	}
	idx, err := owner.Query(ctx, `SELECT c.relname, count(*), count(*) FILTER (WHERE i.indpred IS NOT NULL),
		string_agg(ic.relname, ' ' ORDER BY ic.relname)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid
		WHERE c.relname IN ('chains', 'outbox', 'ledger_lines', 'ledger_operations', 'escrow_holds')
		GROUP BY 1 ORDER BY 1`)
	if err != nil {
		b.Fatal(err)
	}
	for idx.Next() {
		var table, names string
		var count, partial int
		if err := idx.Scan(&table, &count, &partial, &names); err != nil {
			b.Fatal(err)
		}
		fmt.Printf("indexes of %s: %d (%d partial): %s\n", table, count, partial, names)
	}
	if err := idx.Err(); err != nil {
		b.Fatal(err)
	}
	per(float64(walBytes), "WAL-B/claim")
	per(float64(walRecords), "WAL-records/claim")
	w.verify()
}

// processCPU is the user and system CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the user and system CPU time of the process pid so far, from
// /proc/<pid>/stat (clock ticks of 10 ms); false when the process is not
// on this machine.
func procCPU(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64) // utime, field 14
	s, _ := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	return time.Duration(u+s) * 10 * time.Millisecond, true
}
