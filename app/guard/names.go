package guard

import (
	"path"
	"strings"
	"sync"
)

// The tables below name programs by their base name, as a shell finds
// them on PATH; versioned names (python3.12, php8.2) are folded by family.

// fetchers print what they download or read from a socket.
var fetchers = &table{names: []string{"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "xhs",
	"lwp-request", "lwp-download", "GET", "nc", "ncat", "netcat", "nc.traditional",
	"nc.openbsd", "socat", "telnet", "ftp", "tftp", "ssh", "lynx", "w3m", "links", "elinks"}}

// connectors hold a two-way connection to another machine: with a shell
// on the other end of a pipe they make a reverse shell.
var connectors = &table{names: []string{"nc", "ncat", "netcat", "nc.traditional", "nc.openbsd", "socat",
	"telnet", "openssl", "ssh", "cryptcat"}}

// networkSinks send what they read, or their arguments, to another
// machine.
var networkSinks = &table{names: []string{"curl", "wget", "nc", "ncat", "netcat", "nc.traditional",
	"nc.openbsd", "socat", "telnet", "ssh", "scp", "sftp", "ftp", "tftp", "rsync",
	"openssl", "http", "https", "xh", "xhs", "mail", "mailx", "sendmail", "mutt",
	"aws", "gsutil", "rclone", "cryptcat"}}

// netcats take -e/-c to run a program on the connection.
var netcats = &table{names: []string{"nc", "ncat", "netcat", "nc.traditional", "nc.openbsd", "cryptcat", "pwncat"}}

// shells read shell code: from -c, a script file or stdin.
var shells = &table{names: []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh",
	"lksh", "pdksh", "rbash", "fish", "csh", "tcsh"}}

// Interpreter families of other languages, by the base name folded
// (family).
const (
	famShell  = "sh"
	famPython = "python"
	famNode   = "node"
	famPerl   = "perl"
	famRuby   = "ruby"
	famPHP    = "php"
	famAwk    = "awk"
	famLua    = "lua"
	// famOther are interpreters read only for where their program comes
	// from (stdin, a URL).
	famOther = "other"
)

// others are the interpreters of famOther.
var others = &table{names: []string{"tclsh", "wish", "expect", "pwsh", "powershell", "osascript", "Rscript", "julia",
	"deno", "bun", "irb", "jshell", "groovy", "guile", "racket", "elixir", "escript"}}

// family folds an interpreter's name to its family, "" when it is none:
// python3.12 and pypy3 are python, nodejs is node, gawk is awk.
func family(name string) string {
	if shells.has(name) {
		return famShell
	}
	base := strings.TrimRight(name, "0123456789.")
	switch base {
	case "python", "pypy", "ipython":
		return famPython
	case "node", "nodejs":
		return famNode
	case "perl":
		return famPerl
	case "ruby", "jruby":
		return famRuby
	case "php", "php-cli":
		return famPHP
	case "awk", "gawk", "mawk", "nawk":
		return famAwk
	case "lua", "luajit":
		return famLua
	}
	if others.has(name) {
		return famOther
	}
	return ""
}

// envListers print the shell's or the process's variables when given no
// operand (set, export -p, declare -p, env, printenv).
var envListers = &table{names: []string{"set", "export", "declare", "typeset", "readonly", "env", "printenv", "compgen"}}

// wrappers run their operand as a command; wrapper.go knows each one's
// options.
var wrappers = &table{names: []string{"env", "nohup", "timeout", "xargs", "sudo", "doas", "nice", "ionice",
	"exec", "command", "builtin", "time", "stdbuf", "setsid", "chrt", "taskset", "flock",
	"unbuffer", "busybox", "su", "runuser", "watch", "find", "chroot", "nsenter", "strace",
	"ltrace", "proxychains", "proxychains4", "torsocks", "catchsegv", "caffeinate"}}

// table is a set of names, made into a map the first time it is asked:
// no work at package init.
type table struct {
	names []string
	once  sync.Once
	m     map[string]bool
}

func (t *table) has(name string) bool {
	t.once.Do(func() {
		t.m = make(map[string]bool, len(t.names))
		for _, n := range t.names {
			t.m[n] = true
		}
	})
	return t.m[name]
}

// baseName is the name a shell looks a command up by: the last element
// of a path (/usr/bin/curl is curl).
func baseName(word string) string {
	if i := strings.LastIndexByte(word, '/'); i >= 0 {
		return word[i+1:]
	}
	return word
}

// globMatches returns the names (in order) that the pattern name
// matches; unknown parts match anything.
func globMatches(names []string, name string) []string {
	pat := strings.ReplaceAll(name, unknownStr, "*")
	var out []string
	for _, n := range names {
		if ok, _ := path.Match(pat, n); ok {
			out = append(out, n)
		}
	}
	return out
}
