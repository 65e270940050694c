# tablejournal — see README.md.
SHELL := /bin/bash
AZURITE_VERSION := 3.37.0
TOOLS := $(CURDIR)/.tools
AZURITE_BIN := $(TOOLS)/azurite/node_modules/.bin/azurite-table
export TABLEJOURNAL_AZURITE := $(AZURITE_BIN)

.PHONY: test lint docscheck tidy-check no-binaries bench profile demo azurite node-example build vet fuzz flaky image

build:
	go build ./...

# The container image of the three commands, without a container engine
# (scripts/image, deploy/ociimage): static binaries in one layer FROM
# scratch, user 65532, entrypoint /projector, for each of IMAGE_ARCHES, as
# one OCI image index in the layout IMAGE_DIR/oci (tagged IMAGE_VERSION)
# and, for the first architecture, a docker-archive
# IMAGE_DIR/tablejournal.tar (tagged IMAGE_VERSION and latest). The
# commands' --version prints IMAGE_VERSION (stamped with -ldflags -X
# by scripts/image), with or without VCS information in the build.
# docs/operating.md, "Deploying on Kubernetes".
IMAGE_DIR ?= $(CURDIR)/bin/image
IMAGE_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE_ARCHES ?= amd64,arm64
image:
	go run ./scripts/image -out $(IMAGE_DIR) -version $(IMAGE_VERSION) -arch $(IMAGE_ARCHES) \
		-revision "$$(git rev-parse HEAD 2>/dev/null)" -created "$$(git log -1 --format=%cI 2>/dev/null)"

# Azurite (the Azure Tables emulator) from npm, pinned, into a folder git ignores.
azurite: $(AZURITE_BIN)
$(AZURITE_BIN):
	mkdir -p $(TOOLS)/azurite
	cd $(TOOLS)/azurite && npm install --no-audit --no-fund --loglevel=error azurite@$(AZURITE_VERSION)

# The Node packages examples/node uses (nats.js, @azure/data-tables),
# pinned, into a folder git ignores; its test finds them there.
NODE_EXAMPLE_PKGS := nats@2.29.3 @azure/data-tables@13.3.2
NODE_EXAMPLE := $(TOOLS)/node-example/node_modules/.installed
node-example: $(NODE_EXAMPLE)
$(NODE_EXAMPLE):
	mkdir -p $(TOOLS)/node-example
	cd $(TOOLS)/node-example && npm install --no-audit --no-fund --loglevel=error $(NODE_EXAMPLE_PKGS)
	touch $@

vet:
	go vet ./...

# go.mod and go.sum must be what `go mod tidy` makes of them.
tidy-check:
	@go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy" >&2; exit 1; }

# The linters alone: tidy modules, go vet, the docs check and staticcheck, pinned by the
# tool directive in go.mod (zero findings; silence a false positive with a
# //lint:ignore CHECK reason comment on the line). errcheck is not run: on
# this tree it reports only idiomatic unchecked calls (fmt.Fprint to the
# output, Close of read-only files, deferred Rollback), and silencing them
# takes an exclude list larger than what it finds.
lint: tidy-check vet no-binaries docscheck
	go tool staticcheck ./...

# Every Go name README.md and docs/*.md quote in backticks (`store.Entity`,
# `Outcomes.Await`) must still be declared in the module, and every path
# (`replay/history/cost_test.go`) must still exist (scripts/docscheck;
# docs/history/ is not checked). Prints file:line and what is missing.
docscheck:
	go run ./scripts/docscheck

# No tracked file may be a compiled binary (ELF) or larger than 1 MiB: build
# outputs belong in .gitignore, not in the history.
no-binaries:
	@bad=$$(git ls-files -z 2>/dev/null | xargs -0 -r sh -c 'for f; do [ -f "$$f" ] || continue; if [ "$$(head -c 4 "$$f" | od -An -c | tr -d " ")" = "177ELF" ] || [ $$(stat -c %s "$$f") -gt 1048576 ]; then echo "$$f"; fi; done' sh); \
	if [ -n "$$bad" ]; then echo "tracked binaries or files over 1 MiB: $$bad" >&2; exit 1; fi

# The three slowest packages first (about 3 minutes each under -race): go
# test runs two packages at once on 2 cores, in the order given, so these
# start at once instead of one of them running alone at the end.
SLOW_TEST_PKGS := ./tests/system ./projection ./replay
test: azurite node-example lint
	go test -race -timeout 20m $(SLOW_TEST_PKGS) $$(go list ./... | grep -v -e '/tests/system$$' -e '/projection$$' -e '/replay$$')

# Short fuzz runs of the decoders; run longer by hand with FUZZTIME=5m.
FUZZTIME ?= 20s
fuzz:
	go test ./events -run '^$$' -fuzz FuzzDecodeJSON -fuzztime $(FUZZTIME)
	go test ./events -run '^$$' -fuzz FuzzDecodeMsgpack -fuzztime $(FUZZTIME)
	go test ./events/edm -run '^$$' -fuzz FuzzReadBinary -fuzztime $(FUZZTIME)

# Every benchmark suite, as one table of medians over 3 runs with the ratios
# against their targets (cmd/benchreport; about 10 minutes on 2 cores).
# TABLEJOURNAL_BENCH_COMMANDS sizes the projector memory benchmark and
# TABLEJOURNAL_BENCH_CONSOLE_ROWS the console's (rows and commands, default 20000);
# BENCHFLAGS go to benchreport, e.g. BENCHFLAGS='-count 1 -suites projector'.
TABLEJOURNAL_BENCH_COMMANDS ?= 1000000
bench: azurite
	TABLEJOURNAL_BENCH_COMMANDS=$(TABLEJOURNAL_BENCH_COMMANDS) go run ./cmd/benchreport $(BENCHFLAGS)

# CPU and allocation profiles of the projector's timed projection (not the
# publishing before it) under the spread and hot workloads, on the embedded
# store and on the simulated Azure account (1 instance), written to
# PROFILE_DIR as <benchmark>.cpu.pprof and <benchmark>.allocs.pprof
# (allocations during the projection: read with -base <benchmark>.allocs-base.pprof);
# prints the top consumers of each. docs/performance.md says how to read them.
PROFILE_DIR ?= $(CURDIR)/.tools/profiles
profile: azurite
	rm -rf $(PROFILE_DIR) && mkdir -p $(PROFILE_DIR)
	TABLEJOURNAL_BENCH_PROFILE=$(PROFILE_DIR) go test -run '^$$' -bench '^BenchmarkProject(Spread|Hot)$$/^sqlite$$' -benchtime 1x -count 1 -timeout 30m ./projection
	TABLEJOURNAL_BENCH_PROFILE=$(PROFILE_DIR) go test -run '^$$' -bench '^BenchmarkSimAzure$$/^(spread|hot)$$/^instances=1$$' -benchtime 1x -count 1 -timeout 30m ./projection
	@for p in $(PROFILE_DIR)/*.cpu.pprof; do \
		n=$${p%.cpu.pprof}; \
		echo "== $$n: CPU, cumulative"; go tool pprof -top -cum -nodecount 40 $$p 2>/dev/null | sed -n '1,50p'; \
		echo "== $$n: CPU, flat"; go tool pprof -top -nodecount 25 $$p 2>/dev/null | sed -n '1,35p'; \
		echo "== $$n: allocations (objects) during the projection"; \
		go tool pprof -top -sample_index=alloc_objects -nodecount 25 -base $$n.allocs-base.pprof $$n.allocs.pprof 2>/dev/null | sed -n '1,35p'; \
	done

# The flakiness census (scripts/flaky.sh, docs/testing.md): every package's
# tests COUNT times under -race, two packages at once and at -cpu 1,2; prints
# each test that failed with its failure rate and first error. Narrow it with
# PKGS (go list patterns), SKIP (regexp of import paths) and COUNT, e.g.
# `make flaky PKGS=./journal COUNT=50`.
flaky: azurite node-example
	bash scripts/flaky.sh

# The walkthrough: projector on embedded defaults, writer, replay.
demo:
	bash scripts/demo.sh
