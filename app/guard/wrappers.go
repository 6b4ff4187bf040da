package guard

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wrapper follows a program that runs another: its own options, then
// the command it starts.
func (w *walker) wrapper(n string, args []value, fl *flow, at syntax.Node, r result) result {
	rest := args[1:]
	sub := *fl
	var inner []value
	switch n {
	case "env":
		i, split := envOperand(rest)
		for _, a := range rest[:i] {
			if k, v, ok := strings.Cut(a.s, "="); ok && !strings.HasPrefix(a.s, "-") {
				w.vars[k] = value{s: v, t: a.t}
			}
		}
		inner = append(split, rest[i:]...)
		if len(inner) == 0 {
			r.out |= tEnv
			w.find(EnvDump, at, "env with no command prints the whole environment, secrets included")
			return r
		}
	case "xargs":
		inner = rest[skipOptions(rest, "adEILnPs", "eil", []string{"--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}):]
		if len(inner) == 0 {
			inner = []value{{s: "echo"}}
		}
		// xargs turns what it reads into the command's arguments; the
		// command's own stdin is not the pipe.
		sub.xargs, sub.stdin, sub.stdinText = fl.stdin|fl.xargs, 0, nil
	case "sudo", "doas":
		i := skipOptions(rest, "uUgCDhpRrtTa", "", []string{"--user", "--group", "--chdir", "--host", "--prompt", "--role", "--type", "--other-user", "--close-from", "--chroot", "--command-timeout"})
		for i < len(rest) && strings.Contains(rest[i].s, "=") && !strings.HasPrefix(rest[i].s, "-") {
			k, v, _ := strings.Cut(rest[i].s, "=")
			w.vars[k] = value{s: v, t: rest[i].t}
			i++
		}
		inner = rest[i:]
		if len(inner) == 0 && (hasShort(rest, 's') || hasShort(rest, 'i')) {
			inner = []value{{s: "sh"}} // sudo -s: a shell reading stdin
		}
	case "nice":
		inner = rest[skipOptions(rest, "n", "", []string{"--adjustment"}):]
	case "ionice":
		inner = rest[skipOptions(rest, "cnpPu", "", []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}):]
	case "timeout":
		i := skipOptions(rest, "sk", "", []string{"--signal", "--kill-after"})
		inner = rest[min(i+1, len(rest)):] // the duration
	case "exec":
		inner = rest[skipOptions(rest, "a", "", nil):]
	case "command":
		i := skipOptions(rest, "", "", nil)
		if hasShort(rest[:i], 'v') || hasShort(rest[:i], 'V') {
			return r // command -v looks a name up, it runs nothing
		}
		inner = rest[i:]
	case "builtin", "nohup", "unbuffer", "setsid", "catchsegv", "caffeinate", "proxychains", "proxychains4", "torsocks":
		inner = rest[skipOptions(rest, "fq", "", nil):]
	case "time":
		inner = rest[skipOptions(rest, "fo", "", []string{"--format", "--output"}):]
	case "stdbuf":
		inner = rest[skipOptions(rest, "ioe", "ioe", []string{"--input", "--output", "--error"}):]
	case "chrt":
		i := skipOptions(rest, "T", "", nil)
		inner = rest[min(i+1, len(rest)):] // the priority
	case "taskset":
		i := skipOptions(rest, "", "", nil)
		inner = rest[min(i+1, len(rest)):] // the mask
	case "chroot":
		i := skipOptions(rest, "", "", []string{"--userspec", "--groups"})
		inner = rest[min(i+1, len(rest)):] // the new root
	case "nsenter":
		inner = rest[skipOptions(rest, "tSGw", "mutnipUCrw", []string{"--target", "--setuid", "--setgid", "--wd"}):]
	case "strace", "ltrace":
		inner = rest[skipOptions(rest, "eoOpPsuabEXIS", "", nil):]
	case "busybox":
		inner = rest
	case "flock":
		i := skipOptions(rest, "wEc", "", []string{"--timeout", "--conflict-exit-code", "--command"})
		for j := 0; j < i; j++ {
			if (rest[j].s == "-c" || rest[j].s == "--command") && j+1 < len(rest) {
				return w.shellString(rest[j+1], "flock -c", fl, at, r)
			}
		}
		inner = rest[min(i+1, len(rest)):] // the lock file
		if len(inner) > 1 && (inner[0].s == "-c" || inner[0].s == "--command") {
			return w.shellString(inner[1], "flock -c", fl, at, r)
		}
	case "su", "runuser":
		for j, a := range rest {
			if a.s == "--" {
				break // runuser -u user -- command: the command's own -c
			}
			if (a.s == "-c" || a.s == "--command") && j+1 < len(rest) {
				return w.shellString(rest[j+1], n+" -c", fl, at, r)
			}
			if strings.HasPrefix(a.s, "--command=") {
				return w.shellString(value{s: strings.TrimPrefix(a.s, "--command="), t: a.t}, n+" -c", fl, at, r)
			}
		}
		i := skipOptions(rest, "ugsw", "", []string{"--user", "--group", "--shell", "--whitelist-environment"})
		if n == "runuser" && i < len(rest) && rest[i].s != "-" {
			inner = rest[i:]
		} else {
			inner = []value{{s: "sh"}} // su [user]: a shell reading stdin
		}
	case "watch":
		i := skipOptions(rest, "ndgqs", "", []string{"--interval", "--differences"})
		if hasShort(rest[:i], 'x') || hasArg(rest[:i], "--exec") {
			inner = rest[i:]
		} else if i < len(rest) {
			return w.shellString(joinValues(rest[i:]), "watch", fl, at, r)
		}
	case "find":
		return w.findExec(rest, fl, at, r)
	}
	if len(inner) == 0 {
		return r
	}
	if len(w.via) >= maxWrappers {
		w.find(Unreadable, at, fmt.Sprintf("it nests wrappers (sudo, env, nohup...) deeper than %d", maxWrappers))
		return r
	}
	w.via = append(w.via, n)
	rr := w.run(inner, &sub, at)
	w.via = w.via[:len(w.via)-1]
	r.out |= rr.out
	r.text = rr.text
	return r
}

// shellString reads code a wrapper hands a shell (su -c, watch).
func (w *walker) shellString(code value, via string, fl *flow, at syntax.Node, r result) result {
	w.fedCode(code.t|fl.xargs, at, "it runs as shell code what ")
	if code.t&(tNet|tDecode) == 0 {
		r.out |= w.nested(code.s, via, nil, fl).out
	}
	return r
}

// findExec follows find's -exec, -execdir, -ok and -okdir.
func (w *walker) findExec(args []value, fl *flow, at syntax.Node, r result) result {
	for i := 0; i < len(args); i++ {
		switch args[i].s {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(args) && args[j].s != ";" && args[j].s != "+" {
			j++
		}
		if j > i+1 && len(w.via) < maxWrappers {
			cmd := make([]value, j-i-1)
			for k, a := range args[i+1 : j] {
				if strings.Contains(a.s, "{}") {
					a.s = strings.ReplaceAll(a.s, "{}", unknownStr)
				}
				cmd[k] = a
			}
			w.via = append(w.via, "find "+args[i].s)
			r.out |= w.run(cmd, &flow{}, at).out
			w.via = w.via[:len(w.via)-1]
		}
		i = j
	}
	return r
}

// envOperand is where env's command begins (after its options and
// NAME=VALUE words) and the words -S splits off.
func envOperand(args []value) (int, []value) {
	var split []value
	i := 0
	for i < len(args) {
		s := args[i].s
		switch {
		case s == "--":
			i++
			for i < len(args) && strings.Contains(args[i].s, "=") {
				i++
			}
			return i, split
		case s == "-S" || s == "--split-string":
			if i+1 < len(args) {
				split = append(split, splitWords(args[i+1])...)
			}
			i += 2
			continue
		case strings.HasPrefix(s, "--split-string="):
			split = append(split, splitWords(value{s: strings.TrimPrefix(s, "--split-string="), t: args[i].t})...)
		case strings.HasPrefix(s, "-S") && len(s) > 2:
			split = append(split, splitWords(value{s: s[2:], t: args[i].t})...)
		case s == "-u" || s == "-C" || s == "--unset" || s == "--chdir" || s == "-P":
			i += 2
			continue
		case strings.HasPrefix(s, "-"):
		case strings.Contains(s, "="):
		default:
			return i, split
		}
		i++
	}
	return min(i, len(args)), split // -u or -C last on the line
}

func splitWords(v value) []value {
	var out []value
	for _, f := range strings.Fields(v.s) {
		out = append(out, value{s: f, t: v.t})
	}
	return out
}

// skipOptions returns the index of the first operand of args: past
// options (short letters in withArg take the next word unless attached,
// attachedOnly letters never take one), long options in long take the
// next word unless given with =, and -- ends the options.
func skipOptions(args []value, withArg, attachedOnly string, long []string) int {
	i := 0
	for i < len(args) {
		s := args[i].s
		switch {
		case s == "--":
			return i + 1
		case strings.HasPrefix(s, "--"):
			name, _, hasValue := strings.Cut(s, "=")
			i++
			if !hasValue {
				for _, l := range long {
					if l == name {
						i++
						break
					}
				}
			}
			continue
		case len(s) > 1 && s[0] == '-':
			i++
			for k := 1; k < len(s); k++ {
				if strings.IndexByte(attachedOnly, s[k]) >= 0 {
					break
				}
				if strings.IndexByte(withArg, s[k]) >= 0 {
					if k == len(s)-1 {
						i++ // the next word is its argument
					}
					break
				}
			}
			continue
		case len(s) > 1 && s[0] == '+' && withArg == "n":
			i++ // nice +N (old form)
			continue
		}
		return i
	}
	return min(i, len(args)) // an option that wants a word at the end
}
