// Package reexec is the table of helpers the engine runs as its own executable.
//
// The engine starts some of its helpers (envexec, the direct backend's
// subreaper, the idmap launcher, the Landlock helper) by running its own
// executable again with the helper's name as the first argument: Go
// cannot fork without exec, and a second binary would have to be found
// and trusted. Each helper's package registers it here once, in an init
// function, under a name no person types; every program and test binary
// that may be started as a helper calls Init first, in main or TestMain,
// and so knows exactly the helpers its code can start.
package reexec

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// helpers maps a helper's name to its main, which gets the arguments
// after the name and returns the exit code.
var helpers = map[string]func(args []string) int{}

// Register names a helper. It is called from init functions only, so it
// needs no lock; a name registered twice is a bug, and panics.
func Register(name string, main func(args []string) int) {
	if !strings.HasPrefix(name, "__") {
		panic(fmt.Sprintf("reexec: helper name %q does not start with __, so a person could type it", name))
	}
	if _, ok := helpers[name]; ok {
		panic(fmt.Sprintf("reexec: helper %q registered twice", name))
	}
	helpers[name] = main
}

// Init runs the helper this process was started as, if it was (its first
// argument names one), and exits with the helper's code; otherwise it
// returns at once.
func Init() {
	if len(os.Args) < 2 {
		return
	}
	if main, ok := helpers[os.Args[1]]; ok {
		os.Exit(main(os.Args[2:]))
	}
}

// Names lists the registered helpers, sorted.
func Names() []string {
	names := make([]string, 0, len(helpers))
	for n := range helpers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
