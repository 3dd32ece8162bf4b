# Catchbox: make run starts the service on SQLite in ./data; make test runs every
# test (PostgreSQL ones too when CATCHBOX_TEST_POSTGRES_URL is set).

GO        ?= go
BIN       := bin/catchbox
GOFILES   := $(shell git ls-files '*.go' 2>/dev/null)
# What catchbox version prints: the git description of the tree, "dev" outside git.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: build run test test-go test-e2e lint bench fuzz clean

build:
	$(GO) build -ldflags "-X github.com/catchbox/catchbox/internal/version.Version=$(VERSION)" -o $(BIN) ./cmd/catchbox

run: build
	./$(BIN) serve

test: lint test-go test-e2e

# The Go client (client/) is a module of its own: its tests run from its directory.
test-go:
	$(GO) test -race -timeout 20m ./...
	cd client && $(GO) test -race -timeout 10m ./...

# The end-to-end suite drives the built binary with the official npm client;
# catchbox-bench relay is the SMTP relay its outbound steps deliver to.
test-e2e: build
	$(GO) build -o bin/catchbox-bench ./cmd/catchbox-bench
	cd e2e && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && node --test --test-reporter=spec

lint:
	$(GO) vet ./...
	cd client && $(GO) vet ./...
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck ./... && (cd client && staticcheck ./...); fi

# Short fuzzing runs of every fuzz target (longer: FUZZTIME=10m make fuzz).
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# Benchmarks: Go micro-benchmarks, then the load runs of docs/benchmarks.md.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	./scripts/bench.sh

clean:
	rm -rf bin
