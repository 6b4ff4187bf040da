// Command senclaw-landlock is the Landlock helper on its own, which starts sooner than the engine.
//
// The engine starts it for every Landlock run and every confined host
// exec, where its own executable (every package of the engine, all
// their init) would take about three times as long to start.
// It is started as the engine's executable would be, with
// landlock.HelperCommand as its one argument and the setup on fd 3;
// with --protocol it prints the setup protocol it reads, which the
// engine compares with its own before it uses this executable.
package main

import (
	"fmt"
	"os"

	"github.com/senclaw/sandbox/backends/landlock"
)

func main() {
	switch {
	case len(os.Args) == 2 && os.Args[1] == landlock.HelperCommand:
		os.Exit(landlock.RunHelper())
	case len(os.Args) == 2 && os.Args[1] == "--protocol":
		fmt.Println(landlock.Protocol())
	default:
		fmt.Fprintln(os.Stderr, "senclaw-landlock is the engine's Landlock helper, which the engine starts for each Landlock run; it is not run by hand")
		os.Exit(2)
	}
}
