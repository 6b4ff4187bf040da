package guard

import (
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// The guard does not parse Python, Perl, Ruby, PHP, Node or awk. For
// their one-liners (python -c, perl -e, php -r, node -e, ruby -e, awk
// programs, and a program fed on stdin) it looks for the words the
// well-known abuses cannot do without, always two together: a socket
// and a shell, an eval and a decoder, an eval and a download. A program
// that needs neither word of a pair passes; one written to avoid them
// (a file, a variable the guard cannot read) is beyond any static check
// and is the kernel boundary's to confine.

// pair is a conjunction of words: one of any and one of with.
type pair struct {
	any, with []string
}

func (p pair) in(code string) bool {
	return hasAny(code, p.any) && (p.with == nil || hasAny(code, p.with))
}

func hasAny(code string, words []string) bool {
	for _, w := range words {
		if strings.Contains(code, w) {
			return true
		}
	}
	return false
}

var shellWords = []string{"/bin/sh", "/bin/bash", "/bin/zsh", "'sh'", `"sh"`, "'bash'", `"bash"`, "sh -i", "bash -i", "cmd.exe"}

// reverseShells: a socket opened and a shell or a process on it.
var reverseShells = sync.OnceValue(func() map[string]pair {
	return map[string]pair{
		famPython: {any: []string{"socket"}, with: append([]string{"subprocess", "pty.spawn", "pty", "os.dup2", "os.system", "os.popen", "os.exec"}, shellWords...)},
		famPerl:   {any: []string{"Socket", "socket("}, with: append([]string{"exec", "system", "open(STDIN", "open(STDOUT", "qx", "`"}, shellWords...)},
		famPHP:    {any: []string{"fsockopen", "pfsockopen", "socket_create", "stream_socket_client"}, with: append([]string{"exec", "shell_exec", "system", "passthru", "proc_open", "popen", "`"}, shellWords...)},
		famRuby:   {any: []string{"socket", "Socket"}, with: append([]string{"exec", "spawn", "system", "popen", "%x", "`", "IO.", "fork"}, shellWords...)},
		famNode:   {any: []string{"net.Socket", "net.connect", "createConnection", "require('net')", `require("net")`, "node:net", "dgram"}, with: []string{"child_process", "spawn", "exec"}},
		famLua:    {any: []string{"socket"}, with: append([]string{"os.execute", "io.popen"}, shellWords...)},
		famAwk:    {any: []string{"/inet/tcp/", "/inet/udp/", "/inet4/", "/inet6/"}},
	}
})

// decodeRuns: a decoder's output evaluated.
var decodeRuns = sync.OnceValue(func() map[string]pair {
	return map[string]pair{
		famPython: {any: []string{"exec(", "eval(", "compile("}, with: []string{"b64decode", "b32decode", "b16decode", "a85decode", "decodebytes", "fromhex", "codecs.decode", "zlib.decompress", "marshal.loads", "rot13", "rot_13"}},
		famPerl:   {any: []string{"eval"}, with: []string{"decode_base64", "unpack", "pack(", "MIME::Base64", "uncompress"}},
		famPHP:    {any: []string{"eval(", "assert(", "create_function", "preg_replace"}, with: []string{"base64_decode", "gzinflate", "gzuncompress", "gzdecode", "str_rot13", "hex2bin", "convert_uudecode"}},
		famRuby:   {any: []string{"eval", "instance_eval", "class_eval"}, with: []string{"decode64", "unpack", "Base64", "Zlib::Inflate"}},
		famNode:   {any: []string{"eval(", "Function(", "vm.run", "runInThisContext", "runInNewContext"}, with: []string{"'base64'", `"base64"`, "atob(", "'hex'", `"hex"`, "zlib", "Buffer.from"}},
		famLua:    {any: []string{"load(", "loadstring(", "dofile("}, with: []string{"b64", "base64", "dec("}},
	}
})

// downloadRuns: a download evaluated.
var downloadRuns = sync.OnceValue(func() map[string]pair {
	return map[string]pair{
		famPython: {any: []string{"exec(", "eval(", "compile("}, with: []string{"urlopen", "urllib", "requests.", "http.client", "httpx", "urlretrieve", "socket"}},
		famPerl:   {any: []string{"eval"}, with: []string{"LWP", "HTTP::Tiny", "IO::Socket", "get(", "getstore", "Net::"}},
		famPHP:    {any: []string{"eval(", "include", "require"}, with: []string{"file_get_contents('http", `file_get_contents("http`, "curl_exec", "fopen('http", `fopen("http`, "http://", "https://", "ftp://", "data://", "php://input"}},
		famRuby:   {any: []string{"eval", "instance_eval", "load"}, with: []string{"open-uri", "Net::HTTP", "URI.open", "URI.parse", "http://", "https://"}},
		famNode:   {any: []string{"eval(", "Function(", "vm.run", "runInThisContext", "runInNewContext", "require(", "import("}, with: []string{"http.get", "https.get", "fetch(", "axios", "request(", "http://", "https://", "data:"}},
		famLua:    {any: []string{"load(", "loadstring(", "dofile("}, with: []string{"http", "socket"}},
	}
})

// forkLoops: fork in a loop.
var forkLoops = sync.OnceValue(func() map[string]pair {
	return map[string]pair{
		famPython: {any: []string{"os.fork()", "fork()"}, with: []string{"while", "for "}},
		famPerl:   {any: []string{"fork"}, with: []string{"while", "for", "until", "loop"}},
		famRuby:   {any: []string{"fork"}, with: []string{"loop", "while", "until", "times"}},
		famPHP:    {any: []string{"pcntl_fork"}, with: []string{"while", "for"}},
		famNode:   {any: []string{"child_process"}, with: []string{"while(true)", "while (true)", "for(;;)", "for (;;)", "setInterval"}},
	}
})

// wholeEnv are the names of a language's whole environment, printed
// when followed by nothing that picks one variable.
var wholeEnv = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		famPython: {"os.environ", "os.environb"},
		famNode:   {"process.env"},
		famPerl:   {"%ENV"},
		famRuby:   {"ENV"},
		famPHP:    {"getenv()", "$_ENV", "$_SERVER"},
		famAwk:    {"ENVIRON"},
	}
})

// decodesOutput: the program prints what it decodes (python -c
// 'print(base64.b64decode(...))' | sh).
var decodesOutput = []string{"b64decode", "decode_base64", "base64_decode", "decode64", "atob(", "'base64'", `"base64"`, "fromhex", "unhexlify"}

// foreign checks a program of another language and returns the taint
// of what it prints.
func (w *walker) foreign(fam, code, libs string, at syntax.Node) taint {
	code = normalise(code)
	withLibs := code + " " + libs
	if p, ok := reverseShells()[fam]; ok && p.in(withLibs) {
		w.find(ReverseShell, at, "its "+fam+" code opens a socket and runs a shell or a program on it")
	}
	if p, ok := decodeRuns()[fam]; ok && p.in(code) {
		w.find(DecodeAndRun, at, "its "+fam+" code evaluates what it decodes")
	}
	if p, ok := downloadRuns()[fam]; ok && p.in(withLibs) {
		w.find(PipeToInterpreter, at, "its "+fam+" code evaluates what it downloads")
	}
	if p, ok := forkLoops()[fam]; ok && p.in(code) {
		w.find(ForkBomb, at, "its "+fam+" code forks in a loop")
	}
	for _, name := range wholeEnv()[fam] {
		if dumpsWhole(code, name) {
			w.find(EnvDump, at, "its "+fam+" code reads the whole environment ("+name+")")
			break
		}
	}
	if strings.Contains(code, "/proc/") && strings.Contains(code, "/environ") {
		w.find(EnvDump, at, "its "+fam+" code reads a process's environment (/proc/…/environ)")
	}
	w.checkText(code, at)
	var t taint
	if hasAny(code, decodesOutput) {
		t |= tDecode
	}
	if p := downloadRuns()[fam]; p.with != nil && hasAny(code, p.with) {
		t |= tNet
	}
	return t
}

// dumpsWhole reports whether name occurs in code not followed by what
// picks one entry of it ([, ., ( or a name character).
func dumpsWhole(code, name string) bool {
	for i := 0; ; {
		j := strings.Index(code[i:], name)
		if j < 0 {
			return false
		}
		end := i + j + len(name)
		before := byte(' ')
		if i+j > 0 {
			before = code[i+j-1]
		}
		after := byte(' ')
		if end < len(code) {
			after = code[end]
		}
		nameChar := func(c byte) bool {
			return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		}
		if !nameChar(before) && before != '.' && !nameChar(after) && strings.IndexByte("[.(:", after) < 0 && !strings.HasSuffix(name, ")") {
			return true
		}
		if strings.HasSuffix(name, ")") && !nameChar(before) {
			return true
		}
		i = end
	}
}
