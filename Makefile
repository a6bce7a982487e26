# MIO — the two commands: `make run` and `make test`.
GO      ?= go
BIN     ?= bin/mio
BENCH   ?= bin/mio-bench
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# Developer tools (sqlc, staticcheck) are pinned in their own module, tools/go.mod,
# so they stay out of the server's dependency graph.
TOOL    := $(GO) tool -modfile=tools/go.mod

# Packages with concurrency run under the race detector (and only there: the race run
# is the same tests with more checks); the rest run once without it.
RACE_PKGS := ./accounts/... ./db/... ./httpapi/... ./workers/... ./ingest/... ./consume/... ./notify/... ./client/... ./blob/... ./fetch/... ./outbox/... ./jobs/... ./reply/... ./typing/... ./groupcommit/... ./console/... ./top/...

.PHONY: browser tmux sdk-tools run test test-bench test-deploy test-pgbouncer lint generate check-generated build build-bench image bench bench-ingest bench-produce bench-consume bench-horizon bench-sdk bench-mcp bench-scale bench-admin postgres fmt

## run: start MIO locally (mio dev: private PostgreSQL, demo install)
run: postgres build
	./$(BIN) dev

## test: lint, check generated code, run every test (real PostgreSQL; the SDK suites need python3 and node)
test: postgres sdk-tools browser tmux lint check-generated
	$(GO) test -count=1 -timeout 15m $$($(GO) list ./... | grep -vxF "$$($(GO) list $(RACE_PKGS))")
	$(GO) test -count=1 -timeout 15m -race $$($(GO) list $(RACE_PKGS) 2>/dev/null)
	$(MAKE) test-deploy
	$(MAKE) test-bench
	@deploy/scripts/ensure-pgbouncer.sh
	@if command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ]; then $(MAKE) test-pgbouncer; \
	  else echo "pgbouncer not installed: skipping test-pgbouncer (apt-get install pgbouncer)"; fi

## test-pgbouncer: the database, notification and consumer tests, and mio serve, through
## PgBouncer in transaction pooling mode (docs/deploy.md, "Connection poolers")
test-pgbouncer:
	MIO_TEST_PGBOUNCER=1 $(GO) test -count=1 -timeout 15m ./db/ ./notify/ ./consume/
	MIO_TEST_PGBOUNCER=1 $(GO) test -count=1 -timeout 10m -run 'TestServeWithListenURL|TestChaosThroughPgBouncer' ./cmd/mio/

## test-bench: the benchmark command's own tests (its own module, cmd/mio-bench)
test-bench:
	$(GO) -C cmd/mio-bench test -count=1 ./...

## test-deploy: parse the Dockerfile, render the Helm chart, load the compose file
## (its own module, deploy/deploytest, so Helm and k8s.io stay out of go.mod)
test-deploy:
	$(GO) -C deploy/deploytest test -count=1 ./...

## build: build bin/mio
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/mio

## build-bench: build bin/mio-bench, the benchmarks (a module of its own: the server links none of it)
build-bench:
	$(GO) -C cmd/mio-bench build -o ../../$(BENCH) .

## image: build the container image mio:$(VERSION) (needs Docker with BuildKit)
image:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t mio:$(VERSION) .

## lint: gofmt, go mod tidy (all modules), go vet, staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) -C tools mod tidy -diff
	$(GO) -C deploy/deploytest mod tidy -diff
	$(GO) -C cmd/mio-bench mod tidy -diff
	$(GO) vet ./...
	$(GO) -C deploy/deploytest vet ./...
	$(GO) -C cmd/mio-bench vet ./...
	$(TOOL) staticcheck ./...
	cd deploy/deploytest && $(GO) tool -modfile=../../tools/go.mod staticcheck ./...
	cd cmd/mio-bench && $(GO) tool -modfile=../../tools/go.mod staticcheck ./...

## generate: regenerate sqlc code from queries/*.sql and the schema in migrations/ (its function and view files too)
generate:
	$(TOOL) sqlc generate

## check-generated: fail when generated code is stale
check-generated:
	$(TOOL) sqlc diff

## bench: ingest, produce, consume and horizon (see docs/benchmarks.md; mio-bench runs each alone)
bench: bench-ingest bench-produce bench-consume bench-horizon

## bench-ingest: webhook ingestion vs the pgbench reference
bench-ingest: postgres build build-bench
	./$(BENCH) ingest

## bench-produce: POST /v1/outbound (32 clients) and the batch endpoint vs the pgbench reference
bench-produce: postgres build build-bench
	./$(BENCH) produce

## bench-admin: admin API and console latency with 1M inbox rows, 100 consumers, 10k dead letters
bench-admin: postgres build build-bench
	./$(BENCH) admin

## bench-horizon: delivery and latency while a transaction is held open elsewhere (2 min)
bench-horizon: postgres build build-bench
	./$(BENCH) horizon --duration 30s

## bench-sdk: Python and TypeScript consume loops vs the Go client; reply-with-ack vs send+ack
bench-sdk: postgres sdk-tools build build-bench
	cd sdk/typescript && npm ci --no-audit --no-fund && npm run build
	./$(BENCH) sdk

## bench-mcp: pull+ack over the MCP tools at /mcp vs the HTTP pull API; pull->reply round trip
bench-mcp: postgres build build-bench
	./$(BENCH) mcp

## bench-consume: pull+ack throughput and end-to-end latency vs the pgbench queue reference
bench-consume: postgres build build-bench
	./$(BENCH) consume

## bench-scale: ingest and pull+ack with 10 M inbox rows of history vs empty; drop vs DELETE of a day
bench-scale: postgres build build-bench
	./$(BENCH) scale

postgres:
	@deploy/scripts/ensure-postgres.sh

## browser: headless Chromium for the web console's browser test (Debian package when missing)
browser:
	@deploy/scripts/ensure-browser.sh

## tmux: tmux for the terminal test of mio top (Debian package when missing)
tmux:
	@deploy/scripts/ensure-tmux.sh

## sdk-tools: python3 and Node.js for the SDK suites (Debian packages when missing), and the
## OpenTelemetry SDK for Python for its tracing tests (Debian's, unpacked into .cache/python-otel)
sdk-tools:
	@deploy/scripts/ensure-sdk-tools.sh
	@deploy/scripts/ensure-python-otel.sh

fmt:
	gofmt -w $$(git ls-files '*.go')
