// Command gen writes SenClaw Sandbox's icons (see package icons). Run it
// from the repo root: go generate ./assets
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/senclaw/sandbox/assets/internal/icons"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	for _, ic := range icons.All() {
		path := filepath.Join(root, ic.File)
		if err := os.WriteFile(path, icons.PNG(ic), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", path)
	}
}
