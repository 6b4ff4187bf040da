// Command senclaw-netfwd is the tiny forwarder that runs inside a sandbox,
// in front of its command.
//
// It runs in the sandbox's network namespace; see package netfwd. Build it
// static: CGO_ENABLED=0 go build.
package main

import (
	"os"

	"github.com/senclaw/sandbox/backends/netfwd"
)

func main() { os.Exit(netfwd.Run(os.Args[1:], os.Stderr)) }
