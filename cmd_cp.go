// `senclaw cp`: files and folders in and out of a sandbox.

package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
)

func cpCommand() *command {
	return &command{
		name: "cp", summary: "copy files and folders into or out of a sandbox",
		args:  "SRC SANDBOX:DST | SANDBOX:SRC DST",
		about: "Through the engine's file API: paths stay inside the sandbox, read-only mounts stay read-only, links are not followed. A file may be up to 32 MiB going in and 2 MiB coming out; mount a folder for larger ones.",
		examples: []string{
			"senclaw cp data.csv build:in/",
			"senclaw cp build:out/report.json .",
			"senclaw cp -- ./src web:app",
		},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			return func(args []string) int {
				if len(args) != 2 {
					fmt.Fprintln(x.io.Err, "senclaw cp: give a source and a destination, one of them SANDBOX:PATH")
					return cli.ExitUsage
				}
				wd, _ := os.Getwd()
				return x.withClient(func(c *client.Client) int { return cli.Copy(x.ctx, c, args[0], args[1], wd, x.io) })
			}
		},
	}
}
