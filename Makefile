# SenClaw Sandbox. `make start` installs what is needed and starts the app;
# `make test` runs every test. See README.md.

GO      ?= go
BINARY  ?= senclaw
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build build-desktop netfwd dashboard deps test-deps start test test-go test-fuzz test-browser test-desktop vet bench clean

all: build

# Runtime dependencies (bubblewrap, python3, node) and what the desktop
# build needs (a C compiler, GTK and WebKitGTK headers).
deps:
	./scripts/install-deps.sh desktop

# Test dependencies: the sandbox tools, and a running Docker daemon with the
# offline test image (Debian's docker.io; no registry is needed).
test-deps:
	./scripts/install-deps.sh test
	./scripts/docker-test-image.sh

# The dashboard (Vite + Svelte), embedded into the binary from frontend/dist.
dashboard:
	cd frontend && npm ci --no-audit --no-fund && npm run build

# The headless binary: every subcommand but the window and tray, no cgo;
# next to it senclaw-netfwd, the static forwarder bound into sandboxes with
# network (the engine finds it there; without it such runs are refused).
build: dashboard netfwd
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BINARY) .

netfwd:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o senclaw-netfwd ./backends/netfwd/cmd/senclaw-netfwd

# The desktop app: the same binary plus the Wails window and the tray.
build-desktop: dashboard netfwd
	$(GO) build -tags desktop,production,webkit2_41 -ldflags "$(LDFLAGS)" -o $(BINARY) .

# Installs what is needed and starts the desktop app: the engine, its API
# and dashboard, the window and the tray. Without a display it says so and
# serves the dashboard over HTTP (http://127.0.0.1:7878; `./senclaw url`).
start: deps build-desktop
	./$(BINARY)

# go vet, gofmt, and the engine still building for macOS and Windows (only
# backends/bwrap, backends/landlock and OS-suffixed files assume Linux).
vet:
	$(GO) vet ./...
	GOOS=darwin $(GO) build $$($(GO) list ./app/... ./backends/... ./monitor/... | grep -v /desktop)
	GOOS=windows $(GO) build $$($(GO) list ./app/... ./backends/... ./monitor/... | grep -v /desktop)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

test-go:
	$(GO) test -count=1 ./...

# The fuzz targets, briefly: request decoders, path resolution, settings.
test-fuzz:
	$(GO) test -run '^$$' -fuzz FuzzResolve -fuzztime 15s ./app
	$(GO) test -run '^$$' -fuzz FuzzDecodeBodies -fuzztime 15s ./app/api
	$(GO) test -run '^$$' -fuzz FuzzParseSettingsPatch -fuzztime 15s ./app/mcp

# The dashboard in Debian's Chromium, driven by playwright-core, against a
# real `senclaw serve`.
test-browser:
	./scripts/test-browser.sh

# The desktop binary under Xvfb in a private D-Bus session: window, tray,
# clean quit, the fallbacks, and its memory next to the headless daemon.
test-desktop:
	./scripts/test-desktop.sh

test: test-deps vet test-go test-fuzz test-browser test-desktop

# Benchmarks print ratios against the raw tools measured in the same run.
bench: deps
	SENCLAW_BENCH=1 $(GO) test -p 1 -count=1 -run 'TestBench' -v . ./app/ ./backends/diskquota/

clean:
	rm -f $(BINARY) senclaw-netfwd
