package app

import (
	"context"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// InstallRequest asks for packages in a persistent sandbox.
type InstallRequest struct {
	// Manager is pip (pip3, python), npm (node) or apt (apt-get).
	Manager   string   `json:"manager"`
	Packages  []string `json:"packages"`
	TimeoutMs int      `json:"timeoutMs,omitempty"`
	Source    string   `json:"source,omitempty"`
	// Stdout and Stderr, when set, also receive the installer's output as
	// it comes (streamed answers, MCP progress).
	Stdout io.Writer `json:"-"`
	Stderr io.Writer `json:"-"`
}

// packageRE is the strict character set of package names and version
// specifiers: no spaces, quotes or shell syntax, and no leading dash (an
// option smuggled in as a package).
var packageRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_.@][A-Za-z0-9_.+=<>!~/:@\[\],-]{0,199}$`)
})

// Install installs packages into the sandbox's workspace with pip or npm,
// through the same gate as every run. It needs network permission; apt is
// refused because the system folders are read-only in every sandbox.
func (e *Engine) Install(ctx context.Context, id string, req InstallRequest) (*RunResult, error) {
	// The owner's hand edit of its policy file holds from this run on.
	if _, err := e.ownerPolicyFresh(); err != nil {
		return nil, asRefusal(err)
	}
	sb, err := e.Get(id)
	if err != nil {
		return nil, err
	}
	var manager string
	switch strings.ToLower(strings.TrimSpace(req.Manager)) {
	case "pip", "pip3", "python", "python3":
		manager = "pip"
	case "npm", "node":
		manager = "npm"
	case "apt", "apt-get":
		return nil, badField("manager", req.Manager, "apt installs into the system folders, which are read-only inside every sandbox; use pip or npm (they install into the workspace), or a docker sandbox whose image already has the package")
	default:
		return nil, badField("manager", req.Manager, "unknown package manager: use pip or npm")
	}
	if len(req.Packages) == 0 {
		return nil, badField("packages", "", "is empty: name at least one package")
	}
	if len(req.Packages) > 64 {
		return nil, badField("packages", len(req.Packages), "at most 64 packages per install")
	}
	for i, p := range req.Packages {
		if !packageRE().MatchString(p) {
			return nil, badField("packages["+strconv.Itoa(i)+"]", p, "is not a package name: letters, digits and . _ - + = < > ! ~ / : @ [ ] , only, not starting with -")
		}
	}
	if !sb.Network && len(sb.Ports.Connect) == 0 {
		return nil, refused("installing packages needs the network, and this sandbox's network is off; turn it on (sbx_update network:true, or PATCH the sandbox), then install again")
	}
	timeout := req.TimeoutMs
	if timeout == 0 {
		timeout = DefaultInstallTimeoutMs
	}
	argv := []string{"python3", "-m", "pip", "install", "--user", "--no-input", "--disable-pip-version-check", "--break-system-packages", "--"}
	if manager == "npm" {
		argv = []string{"npm", "install", "--no-fund", "--no-audit", "--no-update-notifier", "--"}
		if sb.Tenant != "" {
			// Into the tenant's runtime/ (its prefix), which all of its
			// sandboxes have.
			argv = []string{"npm", "install", "--global", "--no-fund", "--no-audit", "--no-update-notifier", "--"}
		}
	}
	src := req.Source
	if src == "" {
		src = SourceREST
	}
	p, err := e.planFor(sb, RunRequest{Source: src, Argv: append(argv, req.Packages...), TimeoutMs: timeout, Stdout: req.Stdout, Stderr: req.Stderr})
	if err != nil {
		return nil, err
	}
	p.kind = "install"
	return e.run(ctx, p)
}
