# LLM gateway — `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin/gateway
# Release build: no symbol table or DWARF (panics and pprof still symbolise
# from the runtime's own tables), and gin without its msgpack codec, which
# the gateway never uses. Both shrink the binary, whose pages are most of an
# idle gateway's RSS.
BUILD_FLAGS ?= -trimpath -tags nomsgpack -ldflags "-s -w"
CONFIG ?= config.yaml
TEST_TIMEOUT ?= 10m
# PostgreSQL the tests use; they skip its variant when it is not reachable.
GATEWAY_TEST_POSTGRES_DSN ?= host=127.0.0.1 user=postgres dbname=test sslmode=disable
export GATEWAY_TEST_POSTGRES_DSN
# Fuzz targets as "package:FuzzName"; every engineer adds theirs here.
FUZZ_TARGETS ?= ./services/sse:FuzzSSEReader ./services/chat:FuzzChatDecodeRequest ./services/messages:FuzzMessagesDecodeRequest ./services/messages:FuzzChatStreamToMessages ./services/messages:FuzzMessagesStreamToChat ./services/items:FuzzParseCreate ./handlers:FuzzDecodeAdminInputs
FUZZ_TIME ?= 10s
BENCH ?= .

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}'

.PHONY: build
build: ## build bin/gateway
	$(GO) build $(BUILD_FLAGS) -o $(BIN) .

.PHONY: run
run: build ## build and start on :8080 with SQLite (gateway.db) from config.yaml
	./$(BIN) --config $(CONFIG)

.PHONY: test
test: ## run every test with -race, on SQLite and (when reachable) PostgreSQL
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

.PHONY: test-sqlite
test-sqlite: ## run every test on SQLite only (skip the PostgreSQL variants)
	GATEWAY_TEST_POSTGRES_DSN=off $(GO) test -race -timeout $(TEST_TIMEOUT) ./...

.PHONY: lint
lint: ## go vet and gofmt
	$(GO) vet ./...
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: fuzz
fuzz: ## run each FUZZ_TARGETS entry (pkg:FuzzName) for FUZZ_TIME
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$pkg $$name"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZ_TIME) $$pkg; \
	done

.PHONY: bench
bench: bench-e2e ## end-to-end benchmark table: gateway vs direct vs bare proxy (docs/BENCHMARKS.md)

.PHONY: bench-go
bench-go: ## Go micro-benchmarks with allocations (BENCH=regexp)
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem ./...

include bench/Makefile.inc

.PHONY: cover
cover: ## test coverage report (coverage.html)
	$(GO) test -timeout $(TEST_TIMEOUT) -coverpkg=./... -coverprofile=coverage.out ./...
	$(GO) tool cover -func=coverage.out | tail -1
	$(GO) tool cover -html=coverage.out -o coverage.html

.PHONY: clean
clean: ## remove build output and coverage files
	rm -rf bin coverage.out coverage.html

.PHONY: soak
soak: ## 2-minute mixed-traffic soak on loopback
	GATEWAY_SOAK=1 $(GO) test -race -run TestSoak -timeout 5m ./tests/soak/
