// Command senclaw-netfwd is the tiny forwarder that runs inside a SenClaw
// sandbox's network namespace in front of the sandboxed command. See
// package netfwd. Build it static: CGO_ENABLED=0 go build.
package main

import (
	"os"

	"github.com/senclaw/sandbox/backends/netfwd"
)

func main() { os.Exit(netfwd.Run(os.Args[1:], os.Stderr)) }
