// Package guard reads a shell command before it runs and names known abuse.
//
// The shell guard parses a command line with a real shell parser
// (mvdan.cc/sh/v3/syntax), undoes the usual evasions (quote splitting,
// ${IFS}, ANSI-C quoting, brace expansion, constant command substitution
// and variables, invisible Unicode, NFKC look-alikes) and checks what
// would run against deny groups: a download or a decoder piped into an
// interpreter, fork bombs, reverse shells, environment dumps, and paths
// the engine protects (its own data and config, other tenants' dirs).
// It is a pure function of the command and its Input: no file is read,
// nothing is run.
//
// The guard is advisory. It sits next to the kernel boundary (bwrap,
// Landlock, Docker), which is what confines a sandboxed run; it never
// widens a sandbox, and a command it passes is still confined. On the
// host (the documented off paths) it is the only thing between an agent
// and the user's files, so there its findings refuse the run; inside a
// sandbox the engine warns by default. Shell code can always be written
// in a way a static reader cannot follow (a script file it writes first,
// a variable read at run time): a pass is not a proof of harmlessness.
package guard
