package spaceapps

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// requirements checks a manifest's requires against this machine: the
// programs on the PATH sandboxed code gets, the Python and Node versions
// found there, and the variables the app's environment sets. Versions are
// asked of the interpreter once per binary (and again when it changes on
// disk), with a fixed environment.
type requirements struct {
	path string // the sandbox's PATH

	mu       sync.Mutex
	versions map[string]versionSeen
}

type versionSeen struct {
	mod     time.Time
	version string
	err     error
}

// check returns a *app.FieldError naming the first requirement that is
// not met, and what to do. inImage skips the programs and interpreters,
// which a container image provides (they are checked inside at launch).
func (r *requirements) check(ctx context.Context, q Requires, env map[string]string, inImage bool) error {
	for _, k := range q.Env {
		if _, ok := env[k]; !ok {
			return bad("requires.env", k, "is not set in the app's environment; register it again with it set (senclaw apps add DIR --env %s=VALUE)", k)
		}
	}
	if inImage {
		return nil
	}
	var missing []string
	for _, b := range q.Bin {
		if _, ok := backends.FindExecutable(b, r.path); !ok {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return bad("requires.bin", strings.Join(missing, ", "), "not found on the sandbox's PATH (%s); install %s", r.path, strings.Join(missing, ", "))
	}
	for _, v := range []struct{ field, bin, want, pkg string }{
		{"requires.python", "python3", q.Python, "python3"},
		{"requires.node", "node", q.Node, "nodejs"},
	} {
		if v.want == "" {
			continue
		}
		p, ok := backends.FindExecutable(v.bin, r.path)
		if !ok {
			return bad(v.field, v.want, "%s is not installed on the sandbox's PATH (%s); install it, for example apt-get install %s", v.bin, r.path, v.pkg)
		}
		if v.want == "*" {
			continue
		}
		have, err := r.version(ctx, p)
		if err != nil {
			return bad(v.field, v.want, "the version of %s could not be read: %v", p, err)
		}
		if !atLeast(have, strings.TrimSpace(strings.TrimPrefix(v.want, ">="))) {
			return bad(v.field, v.want, "%s is version %s; the app needs %s or later", p, have, strings.TrimPrefix(v.want, ">="))
		}
	}
	return nil
}

// version asks an interpreter for its version (x.y.z).
func (r *requirements) version(ctx context.Context, bin string) (string, error) {
	fi, err := os.Stat(bin)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	if seen, ok := r.versions[bin]; ok && seen.mod.Equal(fi.ModTime()) {
		r.mu.Unlock()
		return seen.version, seen.err
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if strings.Contains(bin, "node") {
		cmd = exec.CommandContext(ctx, bin, "-p", "process.versions.node")
	} else {
		cmd = exec.CommandContext(ctx, bin, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])")
	}
	// A host-side helper: a fixed environment, never the engine's.
	cmd.Env = []string{"PATH=" + r.path, "LANG=C.UTF-8"}
	cmd.Dir = "/"
	out, err := cmd.Output()
	v := strings.TrimSpace(string(out))
	if err == nil && v == "" {
		err = fmt.Errorf("no version printed")
	}
	if err != nil {
		err = fmt.Errorf("running %s: %w", bin, err)
	}
	r.mu.Lock()
	if r.versions == nil {
		r.versions = map[string]versionSeen{}
	}
	r.versions[bin] = versionSeen{fi.ModTime(), v, err}
	r.mu.Unlock()
	return v, err
}

// atLeast compares dotted versions numerically; missing parts are 0.
func atLeast(have, want string) bool {
	h, w := strings.Split(have, "."), strings.Split(want, ".")
	for i := 0; i < len(w); i++ {
		hv := 0
		if i < len(h) {
			hv, _ = strconv.Atoi(h[i])
		}
		wv, _ := strconv.Atoi(w[i])
		if hv != wv {
			return hv > wv
		}
	}
	return true
}

// imagePrelude is the start of an app's command under a container
// backend: the programs and interpreters it requires are looked for
// inside the image, where they run, and a missing one ends the launch
// with a message naming it.
func imagePrelude(q Requires) string {
	var names []string
	names = append(names, q.Bin...)
	if q.Python != "" {
		names = append(names, "python3")
	}
	if q.Node != "" {
		names = append(names, "node")
	}
	if len(names) == 0 {
		return ""
	}
	return "for senclaw_b in " + strings.Join(names, " ") + `; do command -v "$senclaw_b" >/dev/null 2>&1 || { echo "senclaw: the app requires $senclaw_b, which is not in the container image; use an image that has it (sandbox.image)" >&2; exit 127; }; done; unset senclaw_b` + "\n"
}
