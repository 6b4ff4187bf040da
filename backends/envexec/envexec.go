// Package envexec launches a command with an environment that no command
// line shows.
//
// A host-side tool puts it in front of a command that needs an environment
// of its own. The tool (strace) starts with backends.HelperEnv, so that
// nothing of the run's environment (LD_PRELOAD, LD_LIBRARY_PATH, ...) loads
// into it on the host; the launcher, which is the engine's own executable
// started with Arg, reads the command's environment from a descriptor, drops
// to the sandbox user when asked, and execs the command. No value of the
// environment is ever on a command line, which every user of the machine can
// read.
package envexec

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/reexec"
)

// Arg is the first argument that makes the engine's executable the
// launcher (its name in the reexec table).
const Arg = "__senclaw-envexec"

func init() {
	reexec.Register(Arg, func(args []string) int { return Main(args, os.Stderr) })
}

// maxEnv bounds what the launcher reads from its descriptor.
const maxEnv = 64 << 20

// Argv is the launcher's command line: self (the engine's executable)
// runs argv (argv[0] an absolute path) with the environment it reads from
// descriptor envFD, as drop when drop is set. It is a pure function.
func Argv(self string, envFD int, drop *backends.Credential, argv []string) []string {
	a := []string{self, Arg, "--env-fd", strconv.Itoa(envFD)}
	if drop != nil {
		a = append(a, "--uid", strconv.FormatUint(uint64(drop.UID), 10), "--gid", strconv.FormatUint(uint64(drop.GID), 10))
	}
	return append(append(a, "--"), argv...)
}

// EnvData encodes env for the launcher's descriptor: each "K=V" ended by
// a NUL. An entry holding a NUL would split into two, so it is refused.
func EnvData(env []string) ([]byte, error) {
	var b []byte
	for _, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, errors.New("an environment entry holds a NUL byte")
		}
		b = append(append(b, kv...), 0)
	}
	return b, nil
}

// request is a parsed launcher command line.
type request struct {
	envFD int
	drop  *backends.Credential
	argv  []string
}

func parse(args []string) (request, error) {
	r := request{envFD: -1}
	var uid, gid *uint32
	for len(args) > 0 && args[0] != "--" {
		if len(args) < 2 {
			return r, fmt.Errorf("%s needs a value", args[0])
		}
		n, err := strconv.ParseUint(args[1], 10, 32)
		if err != nil {
			return r, fmt.Errorf("%s %q: %v", args[0], args[1], err)
		}
		v := uint32(n)
		switch args[0] {
		case "--env-fd":
			r.envFD = int(n)
		case "--uid":
			uid = &v
		case "--gid":
			gid = &v
		default:
			return r, fmt.Errorf("unknown option %q", args[0])
		}
		args = args[2:]
	}
	switch {
	case len(args) < 2:
		return r, errors.New("no command after --")
	case r.envFD < 3:
		return r, errors.New("no --env-fd above 2")
	case (uid == nil) != (gid == nil):
		return r, errors.New("--uid and --gid go together")
	case uid != nil && (*uid == 0 || *gid == 0):
		return r, errors.New("refusing to drop to root")
	case !strings.HasPrefix(args[1], "/"):
		return r, fmt.Errorf("the command %q is not an absolute path", args[1])
	}
	if uid != nil {
		r.drop = &backends.Credential{UID: *uid, GID: *gid}
	}
	r.argv = args[1:]
	return r, nil
}

// splitEnv decodes EnvData.
func splitEnv(data []byte) []string {
	s := strings.TrimSuffix(string(data), "\x00")
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\x00")
}
