//go:build !desktop

// Command senclaw-window is the desktop app's dashboard window. This
// build has none: it needs cgo and -tags desktop,production,webkit2_41
// (make build-desktop).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "senclaw-window: this binary was built without the window; build it with make build-desktop (cgo, -tags desktop,production,webkit2_41)")
	os.Exit(2)
}
