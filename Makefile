# Catchbox: make run starts the service on SQLite in ./data; make test runs every
# test (PostgreSQL ones too when CATCHBOX_TEST_POSTGRES_URL is set).

GO        ?= go
BIN       := bin/catchbox
GOFILES   := $(shell git ls-files '*.go' 2>/dev/null)
# What catchbox version prints: the git description of the tree, "dev" outside git.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: build build-static image test-image test-image-if-possible run test prerequisites node-deps test-go test-e2e lint bench fuzz clean

build:
	$(GO) build -ldflags "-X github.com/catchbox/catchbox/internal/version.Version=$(VERSION)" -o $(BIN) ./cmd/catchbox

# A static binary (no libc: the SQLite driver is pure Go), for the container image.
build-static:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X github.com/catchbox/catchbox/internal/version.Version=$(VERSION)" -o bin/catchbox-static ./cmd/catchbox

# The container image (Containerfile), with Debian's podman (or IMAGE_TOOL=docker).
IMAGE_TOOL ?= podman
IMAGE      ?= catchbox:$(VERSION)
image: build-static
	cp /etc/ssl/certs/ca-certificates.crt deploy/rootfs/ca-certificates.crt
	$(IMAGE_TOOL) build -f Containerfile -t $(IMAGE) .

# Builds the image and checks it without running a container (this sandbox
# cannot): its configuration, and the binary started from its exported filesystem.
test-image: image
	./scripts/test-image.sh $(IMAGE)

run: build
	./$(BIN) serve

# Recipes use bash for pipefail: a go test that fails fails the target even
# when its output goes through testsummary.
SHELL := /bin/bash

# The prerequisites are checked first, one line per missing tool; the steps
# then run in this order (also under make -j).
test: prerequisites
	$(MAKE) lint
	$(MAKE) test-go
	$(MAKE) test-e2e
	$(MAKE) test-image-if-possible

prerequisites:
	@./scripts/prerequisites.sh

# The Node dependencies of the end-to-end suite, installed before any test
# that needs them: the README's JavaScript examples run in test-go. npm ci
# runs on a fresh clone, and again when the lock file is newer than them.
node-deps:
	@cd e2e && if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then \
	  npm ci --no-audit --no-fund; fi

# The Go client (client/) is a module of its own: its tests run from its directory.
# testsummary prints the results as go test does and ends with every skipped
# test and the reason it gave (CATCHBOX_TEST_POSTGRES_URL not set, ...).
test-go: node-deps
	$(GO) build -o bin/testsummary ./internal/testsummary
	set -o pipefail; $(GO) test -race -timeout 20m -json ./... | bin/testsummary
	set -o pipefail; cd client && $(GO) test -race -timeout 10m -json ./... | ../bin/testsummary

# The container image is built and checked when podman (or IMAGE_TOOL) is here.
test-image-if-possible:
	@if command -v $(IMAGE_TOOL) >/dev/null 2>&1; then $(MAKE) test-image; \
	 else echo "Skipped: the container image test ($(IMAGE_TOOL) is not installed; apt-get install podman)"; fi

# The end-to-end suite drives the built binary with the official npm client;
# catchbox-bench relay is the SMTP relay its outbound steps deliver to.
test-e2e: build node-deps
	$(GO) build -o bin/catchbox-bench ./cmd/catchbox-bench
	cd e2e && node --test --test-reporter=spec

# staticcheck at a pinned version, fetched through the Go module proxy like
# every other dependency, so that lint means the same everywhere.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	$(GO) vet ./...
	cd client && $(GO) vet ./...
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(STATICCHECK) ./...
	cd client && $(STATICCHECK) ./...
	$(GO) mod tidy -diff
	cd client && $(GO) mod tidy -diff

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
