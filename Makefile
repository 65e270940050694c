# tablejournal — see README.md.
SHELL := /bin/bash
AZURITE_VERSION := 3.37.0
TOOLS := $(CURDIR)/.tools
AZURITE_BIN := $(TOOLS)/azurite/node_modules/.bin/azurite-table
export TABLEJOURNAL_AZURITE := $(AZURITE_BIN)

.PHONY: test bench demo azurite build vet fuzz

build:
	go build ./...

# Azurite (the Azure Tables emulator) from npm, pinned, into a folder git ignores.
azurite: $(AZURITE_BIN)
$(AZURITE_BIN):
	mkdir -p $(TOOLS)/azurite
	cd $(TOOLS)/azurite && npm install --no-audit --no-fund --loglevel=error azurite@$(AZURITE_VERSION)

vet:
	go vet ./...

test: azurite vet
	go test -race -timeout 20m ./...

# Short fuzz runs of both decoders; run longer by hand with FUZZTIME=5m.
FUZZTIME ?= 20s
fuzz:
	go test ./events -run '^$$' -fuzz FuzzDecodeJSON -fuzztime $(FUZZTIME)
	go test ./events -run '^$$' -fuzz FuzzDecodeMsgpack -fuzztime $(FUZZTIME)

# Every benchmark suite, as one table of medians over 3 runs with the ratios
# against their targets (internal/benchreport; about 10 minutes on 2 cores).
# TABLEJOURNAL_BENCH_COMMANDS sizes the projector memory benchmark;
# BENCHFLAGS go to benchreport, e.g. BENCHFLAGS='-count 1 -suites projector'.
TABLEJOURNAL_BENCH_COMMANDS ?= 1000000
bench: azurite
	TABLEJOURNAL_BENCH_COMMANDS=$(TABLEJOURNAL_BENCH_COMMANDS) go run ./internal/benchreport $(BENCHFLAGS)

# The walkthrough: projector on embedded defaults, writer, replay.
demo:
	bash scripts/demo.sh
