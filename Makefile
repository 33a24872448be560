# xpromo: build, test and run the whole Go workspace (go.work) from its root.
# GNU make. Run `make help` for the targets.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO ?= go

# PostgreSQL suites always run: they create and drop their own databases on
# this server. Override to point them elsewhere.
XPROMO_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
export XPROMO_TEST_DATABASE_URL
# Redis, for the suites of the shared rate limiter.
XPROMO_TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
export XPROMO_TEST_REDIS_URL

TEST_TIMEOUT ?= 20m
TESTFLAGS ?=

# Benchmarks: `make bench BENCH=Ledger BENCHTIME=5s BENCH_PKGS=./server/ledger/...`
BENCH ?= .
BENCHTIME ?= 2s
BENCH_PKGS ?= ./server/...

# Arguments for `make run`, e.g. `make run ARGS='--log-format json'`.
ARGS ?=

# The lists below ask the go command, so they are computed on first use and
# then kept (`X = $(eval X := ...)$(X)`): `make help` or `make run` pay nothing.

# The workspace's module directories, relative (./sdk, ./server, ...).
MODULES = $(eval MODULES := $(patsubst $(CURDIR)/%,./%,$(shell $(GO) list -m -f '{{.Dir}}')))$(MODULES)
# `./<module>/...` for each module that contains packages yet: a pattern that
# matches nothing would make `go vet` fail and `go test` warn.
PKGS = $(eval PKGS := $(strip $(foreach m,$(MODULES),$(if $(shell $(GO) list $(m)/... 2>/dev/null),$(m)/...))))$(PKGS)
# The commands to build into ./bin: main packages under a cmd/ directory.
# examples/ holds sample programs, not product binaries.
MAIN_PKGS = $(shell $(GO) list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' $(filter-out ./examples/...,$(PKGS)) 2>/dev/null | grep /cmd/ || true)

.PHONY: help run test test-soak ceilings bench lint build conformance clean guide demo loadgen loadgen-split history crashtest capi capi-test capi-windows mcp-conformance fuzz failovertest screenshots

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# Built, then exec'd (not `go run`): Ctrl-C reaches the server itself, which
# shuts down and exits 0, so make ends cleanly instead of "Error 1".
run: ## run xpromo-server on 127.0.0.1:8080 with embedded SQLite in ./data
	@mkdir -p bin
	$(GO) build -o bin/xpromo-server ./server/cmd/xpromo-server
	exec ./bin/xpromo-server $(ARGS)

test: ## every test of every module, with -race, on SQLite and PostgreSQL, the ledger soak, the C ABI's tests and its Windows DLL
	@if [ -z "$(PKGS)" ]; then echo "no packages to test"; exit 0; fi
	@bash scripts/test-deps.sh
	XPROMO_TEST_REQUIRE_TOOLS=1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)
	@$(MAKE) --no-print-directory test-soak
	@$(MAKE) --no-print-directory capi-test capi-windows

# Fuzzing: `make fuzz FUZZ=CheckJSON FUZZTIME=1m`. `go test` runs each
# target's seeds; this runs the fuzzer itself, on every FuzzXxx of the
# workspace whose name matches FUZZ, for FUZZTIME each (a duration, or a
# count of executions such as 20000x), and fails when any target failed.
# CI gives counts: with a duration, Go 1.26's fuzzing coordinator can report
# a spurious "context deadline exceeded" as the time runs out on a loaded
# machine (golang/go#75804, fixed in Go 1.27); a count has no deadline.
FUZZ ?= .
FUZZTIME ?= 10s
fuzz: ## a short run of every fuzz target (FuzzXxx) of the workspace, FUZZTIME each (10s; FUZZ=regexp to pick)
	@grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' $(MODULES) | sort | { fail=0; while read -r f; do \
	  for name in $$(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$$f" | sed 's/^func //'); do \
	    if [[ ! "$$name" =~ $(FUZZ) ]]; then continue; fi; \
	    echo "== $$(dirname "$$f") $$name"; \
	    $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "./$$(dirname "$$f")" || fail=1; \
	  done; \
	done; exit $$fail; }

# The race detector slows the embedded SQLite ~12x, so under -race the ledger's
# random concurrent test runs 32 x 100 operations; this runs it again at
# 32 goroutines x 1,000 random operations per store, without -race.
SOAK_OPS ?= 1000
test-soak: ## the ledger's concurrent property test at 32 x SOAK_OPS operations per store
	XPROMO_LEDGER_OPS=$(SOAK_OPS) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run 'TestStore/ConcurrentRandomOperations' -v ./server/sqlite ./server/postgres | grep -E '^(ok|FAIL|---|panic)|workers|Error' 

# This machine's own limits, measured in the same run as the figures set
# beside them (BENCHMARKS.md): pgbench's single-row INSERT transactions/s
# (8 clients) and 100-row batch rows/s on a scratch database of
# XPROMO_TEST_DATABASE_URL's server, Go's hello-world HTTP rps under the lean
# generator, the load average. Written to bin/ceilings.json as well.
CEILINGS_TIME ?= 5s
ceilings: ## this machine's ceilings: raw PostgreSQL INSERT rates (pgbench), hello-world HTTP rps, load average (CEILINGS_TIME)
	@mkdir -p bin
	@$(GO) build -o bin/ ./server/cmd/xpromo-ceilings
	./bin/xpromo-ceilings -duration $(CEILINGS_TIME) -o bin/ceilings.json

bench: ceilings ## benchmarks of the server (BENCH, BENCHTIME, BENCH_PKGS), each throughput beside its ceiling of the same run
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime=$(BENCHTIME) -benchmem -count=1 -timeout $(TEST_TIMEOUT) $(BENCH_PKGS) \
		| ./bin/xpromo-ceilings -annotate bin/ceilings.json
	@echo "ceilings of this run (measured before the benchmarks): $$(tr -d ' \n' <bin/ceilings.json)"
	@echo "load average after the benchmarks: $$(cut -d' ' -f1-3 /proc/loadavg)"

lint: ## gofmt must have nothing to say; go vet over every module
	@unformatted="$$(gofmt -l $(MODULES))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt -l: these files need gofmt -w:"; echo "$$unformatted"; exit 1; fi
	@echo "gofmt: ok"
	@if [ -z "$(PKGS)" ]; then echo "no packages to vet"; exit 0; fi
	$(GO) vet $(PKGS)

build: ## binaries (xpromo-server, xpromo, xpromo-mcp, xpromo-loadgen) into ./bin
	@mkdir -p bin
	@if [ -z "$(MAIN_PKGS)" ]; then echo "no commands to build yet"; exit 0; fi
	$(GO) build -o ./bin/ $(MAIN_PKGS)
	@ls -1 bin

# The conformance suite (docs/conformance.md) against the reference server in
# this process, then against its container image (server/Dockerfile, on this
# machine's PostgreSQL) when a Docker engine answers; without one it says so
# loudly. Run from the module's directory so that the table of areas prints.
# XPROMO_CONFORMANCE_URL (and _ADMIN_TOKEN) test another implementation instead.
conformance: ## the conformance suite: in-process reference server, and its container image when Docker answers
	cd conformance && XPROMO_CONFORMANCE_CONTAINER=1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS)

# The whole attribution story, end to end: examples/desktop-app/demo.sh builds
# xpromo-server and the example, starts a fresh test-mode server (SQLite in a
# temporary directory, a random admin token, a free loopback port), plays a
# publisher and an advertiser app through the SDK with the test clock, prints
# both ledgers and stops the server. Needs only Go.
demo: ## one paid install end to end (examples/desktop-app) against a fresh test-mode server
	GO=$(GO) ./examples/desktop-app/demo.sh

# The HTTP load generator (server/cmd/xpromo-loadgen, method in
# BENCHMARKS.md): server/cmd/xpromo-loadgen/run.sh builds both binaries,
# starts a fresh test-mode server with rate limits far above the load and
# X-Forwarded-For trusted from loopback, runs the scenarios (LOADGEN_ARGS,
# default every scenario for 10 s at concurrency 8) and stops the server.
# SQLite in a temporary directory; LOADGEN_DATABASE_URL=postgres://… runs
# on a fresh PostgreSQL database created (and dropped) on that server.
loadgen: ceilings ## load test of fills, install claims and ledger reads over HTTP (LOADGEN_ARGS, LOADGEN_DATABASE_URL), beside the ceilings of the same run
	LOADGEN_CEILINGS=bin/ceilings.json GO=$(GO) ./server/cmd/xpromo-loadgen/run.sh

loadgen-split: ## PostgreSQL (LOADGEN_DATABASE_URL): open-loop fills while claims run, on one shared instance, then on an instance of their own (--background=none) pinned apart from the claims' (split.sh)
	GO=$(GO) ./server/cmd/xpromo-loadgen/split.sh

# A year of a busy network (server/loadgen/history.go) written into a fresh
# store of each kind, with the person-facing GETs timed over HTTP before and
# after (server/httpapi/history_test.go; BENCHMARKS.md, "A year of
# history"). HISTORY_SCALE 1 is full size (10 million chains: hours);
# HISTORY_STORES=sqlite or postgres runs one. Not part of make test or CI.
# HISTORY_WRITE_PAIRS: the write paths on an empty and on the full store,
# alternated (empty, full, full, empty, …). XPROMO_HISTORY_KEEP=dir keeps
# the full store, XPROMO_HISTORY_REUSE=dir measures a kept one again;
# XPROMO_HISTORY_SKIP_RAW=1 skips comparing the rollups with the raw facts
# (hours at full scale). From HISTORY_SCALE 0.01 on, the reads are also
# timed on a small store of the same generator (scale 0.001: 4 apps of
# 2,500 chains, full pages; XPROMO_HISTORY_SMALL_SCALE sets it, 0 skips
# it), so that a ratio shows what the store's size costs.
HISTORY_SCALE ?= 0.002
HISTORY_READS ?= 200
HISTORY_WRITE_PAIRS ?= 2
history: ceilings ## a year of history in each store (HISTORY_SCALE, HISTORY_STORES), then the person-facing GETs over HTTP on the empty and the full store and the write paths alternated on both (HISTORY_WRITE_PAIRS), beside the ceilings of the same run
	XPROMO_HISTORY_SCALE=$(HISTORY_SCALE) XPROMO_HISTORY_READS=$(HISTORY_READS) XPROMO_HISTORY_WRITE_PAIRS=$(HISTORY_WRITE_PAIRS) XPROMO_HISTORY_STORES=$(HISTORY_STORES) XPROMO_HISTORY_OUT=$(CURDIR)/bin/history.md \
		$(GO) test -count=1 -run '^TestHistoryReads$$' -timeout 12h -v ./server/httpapi
	@cat bin/history.md bin/ceilings.json

# The crash test of the money paths (server/crashtest; docs/operations.md,
# "Crash test"): builds xpromo-server and xpromo-crashtest into a temporary
# directory, then on each store of CRASH_STORES runs the server under
# concurrent money operations sent through the SDK, kills it with SIGKILL at
# a random moment of each of CRASH_CYCLES cycles, restarts it, retries every
# unanswered operation with its Idempotency-Key, and fails on any effect lost,
# applied twice or unexplained, any failed `ledger verify` and any payout
# left pending; a second kill per cycle falls during a webhook delivery, and
# the run fails on any event the events API lists that its receiver did not
# get, correctly signed, or any it got that the API does not list. PostgreSQL: a fresh database on the server of
# XPROMO_TEST_DATABASE_URL, dropped after. CRASH_ARGS adds flags, e.g.
# CRASH_ARGS='-crash-ops adjustment,payout -v'.
CRASH_CYCLES ?= 20
CRASH_STORES ?= sqlite,postgres
CRASH_ARGS ?=
crashtest: ## kill -9 the server under money load and webhook deliveries on each store; exactly-once and every-event checks (CRASH_CYCLES, CRASH_STORES, CRASH_ARGS)
	@bin=$$(mktemp -d "$${TMPDIR:-/tmp}/xpromo-crashtest-bin.XXXXXX"); trap 'rm -rf "$$bin"' EXIT; \
	echo "building xpromo-server and xpromo-crashtest..."; \
	$(GO) build -o "$$bin/" ./server/cmd/xpromo-server ./server/cmd/xpromo-crashtest; \
	"$$bin/xpromo-crashtest" -server "$$bin/xpromo-server" -cycles $(CRASH_CYCLES) -stores $(CRASH_STORES) \
		-database-url "$(XPROMO_TEST_DATABASE_URL)" $(CRASH_ARGS)

# The failover test (server/failovertest; docs/operations.md, "High
# availability"): a 3-node Patroni cluster on loopback ports 15400-15430
# (one etcd, synchronous_mode_strict, haproxy with Patroni's /primary
# check; data on /dev/shm), two xpromo-server instances under the crash
# test's money load, and FAILOVER_CYCLES faults of the primary (SIGKILL of
# Patroni and postgres, of the postmaster alone, SIGSTOP for 30 s, its
# network cut for 45 s: each node then runs in its own network namespace
# xpfo-pgN on 10.231.0.0/24) through haproxy and again through a libpq
# multi-host URL; then the negative control (asynchronous, standbys held
# back), which must report lost writes. Needs root or the postgres user's
# rights and Debian's patroni, etcd-server, haproxy, iproute2
# (scripts/test-deps.sh); skips without them unless CI=true; without root
# the partition is skipped with a warning and the other kinds run.
FAILOVER_CYCLES ?= 20
FAILOVER_ARGS ?=
failovertest: ## lose the PostgreSQL primary (Patroni, 3 nodes) under money load, FAILOVER_CYCLES times per route; nothing acknowledged lost (FAILOVER_ARGS)
	@bin=$$(mktemp -d "$${TMPDIR:-/tmp}/xpromo-failovertest-bin.XXXXXX"); trap 'rm -rf "$$bin"' EXIT; \
	echo "building xpromo-server and xpromo-failovertest..."; \
	$(GO) build -o "$$bin/" ./server/cmd/xpromo-server ./server/cmd/xpromo-failovertest; \
	"$$bin/xpromo-failovertest" -server "$$bin/xpromo-server" -cycles $(FAILOVER_CYCLES) $(FAILOVER_ARGS)

# The SDK's C ABI (sdk/capi, docs/capi.md), for apps in Swift, C#, C++, C.
# scripts/test-deps.sh installs the toolchains it needs when they are
# missing (Debian, as root; otherwise it says what to install).
CAPI_DIR ?= bin/capi
CAPI_SHLIB = $(if $(filter Darwin,$(shell uname -s)),libxpromo.dylib,libxpromo.so)
capi: ## the C ABI for this machine: libxpromo.so (.dylib), libxpromo.a and xpromo.h into bin/capi
	@mkdir -p $(CAPI_DIR)
	$(GO) build -buildmode=c-shared -o $(CAPI_DIR)/$(CAPI_SHLIB) ./sdk/capi
	$(GO) build -buildmode=c-archive -o $(CAPI_DIR)/libxpromo.a ./sdk/capi
	@bash sdk/capi/test/checkheader.sh sdk/capi/xpromo.h $(CAPI_DIR)/libxpromo.h
	@cp sdk/capi/xpromo.h $(CAPI_DIR)/xpromo.h && rm -f $(CAPI_DIR)/libxpromo.h
	@ls -1 $(CAPI_DIR)

# sdk/capi/test/run.sh: builds the library, checks the header (against the
# exports; -Wall -Werror in C and C++), and against a fresh test-mode server
# runs the C error-path tests under LeakSanitizer and the story of one paid
# install played by a C and a C# (Mono) program.
capi-test: ## the C ABI's tests: header checks, C error paths under LeakSanitizer, C and C# end-to-end against a real server
	@bash scripts/test-deps.sh
	GO=$(GO) bash sdk/capi/test/run.sh

capi-windows: ## cross-build xpromo.dll, its import library xpromo.lib and xpromo.h (mingw-w64) into bin/capi/windows-amd64
	@bash scripts/test-deps.sh
	GO=$(GO) bash sdk/capi/build-windows.sh $(CAPI_DIR)/windows-amd64

clean: ## remove ./bin (./data, the local database, is kept)
	rm -rf bin

guide: ## copy integration-guide.md, docs/protocol.md and the test vectors into the server, which embeds and serves them
	cp integration-guide.md server/guide/integration-guide.md
	cp docs/protocol.md server/guide/protocol.md
	cp sdk/attribution/testdata/vectors.json server/guide/vectors.json

mcp-conformance: ## the official MCP conformance suite and Inspector CLI against /mcp and xpromo-mcp (needs Node 22+ and npm; NODE=…)
	scripts/mcp-conformance.sh

# The dashboard's screenshots: the browser test (headless chromium) writes a
# 1280x800 PNG per screen into docs/dashboard, which docs/dashboard.md shows.
screenshots: ## the dashboard's browser test, keeping a PNG of each screen in docs/dashboard (needs chromium)
	@bash scripts/test-deps.sh
	@mkdir -p docs/dashboard
	cd server && XPROMO_SCREENSHOTS=$(CURDIR)/docs/dashboard XPROMO_TEST_REQUIRE_TOOLS=1 $(GO) test -count=1 -run 'TestBrowser$$' ./dashboard/
