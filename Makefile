# code-runner — build, test and set-up targets. A fresh clone needs only
# `make build` (or `make test`): both run `make deps` first.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

VERSION      := $(shell cat VERSION)
GO           ?= go
BIN          := bin/code-runner
LDFLAGS      := -X github.com/code-runner-go/code-runner/internal/buildinfo.Version=$(VERSION)
WASM_DIR     := engines/python/pywasm/assets
WASM_DST     := $(WASM_DIR)/python.wasm
PKGS_DST     := $(WASM_DIR)/pkgs.zip
GO_TEST_FLAGS ?= -race -count=1 -timeout 20m

.PHONY: all deps go-deps v8headers npm-deps wasm jsenv chromium build ui ui-test test go-test e2e vet bench soak clean

all: build

## deps: everything external — Go modules, python.wasm, its standard library and
## the pure-Python package bundle
## (CPython built for WASI from pinned, sha256-checked Debian sources; cached),
## npm packages (from lock files), and Debian's Chromium for the browser test.
deps: go-deps npm-deps wasm jsenv chromium

go-deps: v8headers

# V8's headers for the binding (engines/node/v8): the ones the
# github.com/tommie/v8go module ships under deps/include, linked (never
# copied) into the package's include directory, which cgo reads.
V8_INCLUDE := engines/node/v8/include
v8headers:
	$(GO) mod download
	@dir="$$($(GO) list -m -f '{{.Dir}}' github.com/tommie/v8go)"; \
	if [ ! -f "$$dir/deps/include/v8.h" ]; then echo "V8's headers are missing from $$dir/deps/include"; exit 1; fi; \
	if [ "$$(readlink $(V8_INCLUDE) 2>/dev/null)" != "$$dir/deps/include" ]; then ln -sfn "$$dir/deps/include" $(V8_INCLUDE); fi

# npm packages are installed from the lock files with `npm ci`; a stamp file
# skips the install while the lock file is unchanged.
npm-deps: e2e/node_modules/.stamp ui/node_modules/.stamp

e2e/node_modules/.stamp: e2e/package-lock.json
	cd e2e && npm ci --no-audit --no-fund
	touch $@

# The peers `make bench` measures against (isolated-vm compiles its addon
# with node-gyp against the headers of the machine's Node.js).
bench/peers/node_modules/.stamp: bench/peers/package-lock.json
	cd bench/peers && npm ci --no-audit --no-fund
	touch $@

ui/node_modules/.stamp: ui/package-lock.json
	cd ui && npm ci --no-audit --no-fund
	touch $@

# The UI browser test drives Debian's Chromium (a test tool's own browser
# download cannot work here).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing Debian's chromium for the UI browser test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

wasm: $(WASM_DST) $(PKGS_DST)

# CPython 3.11.2 for wasm32-wasi at -O3 with pymalloc, with zlib, bzip2 and SQLite, built
# by deps/cpython/build.sh from Debian's sources (sha256-pinned) with
# Debian's clang-16 and wasi-libc (installed with apt-get when missing). A
# cold build takes about 5 minutes on 2 cores; the script caches the result
# under ~/.cache/code-runner, so later runs only copy it.
$(WASM_DST): deps/cpython/build.sh
	deps/cpython/build.sh $(WASM_DIR)

# The pure-Python packages every interpreter can import (sympy, networkx,
# yaml, jinja2, ...): Debian 12's .debs, each pinned by sha256, unpacked and
# compiled to .pyc by deps/pypkgs/build.sh (~30 s once, then cached).
$(PKGS_DST): deps/pypkgs/build.sh
	deps/pypkgs/build.sh $(WASM_DIR)

# The JavaScript environment (contract §25): the npm packages pinned in
# deps/jsenv/package-lock.json, installed with `npm ci` and bundled by
# deps/jsenv/build.mjs (esbuild) into engines/node/jsenv/assets, which the
# binary embeds. Rebuilt when the lock file, the script or the glue changes.
JSENV_DST := engines/node/jsenv/assets/units.txt
jsenv: $(JSENV_DST)

$(JSENV_DST): deps/jsenv/package-lock.json deps/jsenv/build.mjs $(wildcard deps/jsenv/src/*/*.js)
	cd deps/jsenv && npm ci --no-audit --no-fund
	cd deps/jsenv && node build.mjs ../../engines/node/jsenv/assets

## build: ./bin/code-runner with the release version stamped in. It installs
## only what building needs (Go modules and the python.wasm build); the test
## tools (Chromium, the UI and e2e npm packages) come with `make test`.
build: go-deps wasm jsenv
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/code-runner

## vet: fails on any Go file gofmt would change, then go vet.
vet: go-deps wasm jsenv
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path '*/node_modules/*'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt would change these files (run gofmt -w on them):"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

## test: vet, every Go test under the race detector, the UI tests (vitest and a
## real browser), then the Node e2e suite.
test: go-test ui-test e2e

## ui: rebuild ui/dist from ui/src (commit the result; `go build` embeds it).
ui: npm-deps
	cd ui && node build.mjs

ui-test: deps
	cd ui && node build.mjs --check
	cd ui && npx vitest run
	cd ui && node --test --test-reporter=spec browser/

go-test: deps vet
	@# Compile python.wasm into the tests' shared cache without -race first:
	@# wazero's compiler is ~15x slower under the race detector.
	$(GO) test -count=1 -run '^TestSharedCacheHoldsPythonWasm$$' ./engines/python/
	$(GO) test $(GO_TEST_FLAGS) ./...

## e2e: the Node suite (real iii-sdk workers) against the test engine and code-runner.
e2e: build e2e/node_modules/.stamp
	$(GO) build -o bin/iiitest-engine ./iii/iiitest/cmd/iiitest-engine
	cd e2e && OTEL_ENABLED=false npm test

## bench: benchmarks (speed only; tests never assert timings), each beside a
## baseline measured in the same run: first code-runner against the peers a
## user would pick instead (an isolated-vm / Pyodide iii-sdk worker and
## /usr/bin/python3, ./bench), then the per-package figures (node -e,
## /usr/bin/python3 -c, a raw WebSocket).
bench: go-deps wasm jsenv bench/peers/node_modules/.stamp
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./bench/
	$(GO) test -run '^$$' -bench . -benchtime 20x -timeout 30m ./engines/node/ ./engines/python/ ./worker/ ./iii/ ./internal/spinread/ ./engines/node/isolatehost/ ./telemetry/

## soak: the bounded soak (about 15 minutes here; build tag soak, not part of
## `make test`): 10,000 node and 10,000 python one-shots, 1,000 kept-runtime
## cycles per language and 1,000 register_function cycles from 8 concurrent
## callers through the test engine, one engine disconnect in the middle. It
## prints RSS, goroutines, descriptors, child processes and temp entries at
## start, middle and end, and fails on any wrong answer or on growth of more
## than 10 % from the middle to the end. Then its group variant, once on a
## 0.22 engine and once on a 0.23 one (about 5 minutes each): two workers, 8
## callers of mixed work, the second worker (the real binary) SIGKILLed and
## started again every 60 s for 4 minutes; no wrong answer, every failure
## explained by a kill, the survivor flat.
soak: go-deps wasm jsenv
	$(GO) test -tags soak -run '^TestSoak(Group)?$$' -v -count=1 -timeout 35m ./worker/

clean:
	rm -rf bin e2e/node_modules ui/node_modules bench/peers/node_modules ui/browser/out $(WASM_DST) $(WASM_DIR)/stdlib.zip $(WASM_DIR)/SHA256SUMS $(PKGS_DST) $(WASM_DIR)/SHA256SUMS.pkgs
