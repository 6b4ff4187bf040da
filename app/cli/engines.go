package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

func enginesCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "engines ls|add|rm ...", Short: "the Docker engines sandboxes are made on, this machine's and others'",
		Long: "The local engine is the Docker daemon of this machine's environment (DOCKER_HOST or a Docker context). Others are named in the settings, " +
			"each a Docker engine on another machine, by a Docker context or by its host and TLS material: a sandbox made there (senclaw create --engine NAME) keeps its " +
			"files in a volume there, while its policy, its egress proxy and its records stay here and its listen ports answer here at 127.0.0.1. " +
			"TLS is always verified; ssh:// is refused (forward the socket with ssh -L and give unix://).",
		Example: examples(
			"senclaw engines ls",
			"senclaw engines add big --host tcp://build-box:2376 --ca ~/.docker/big/ca.pem --cert ~/.docker/big/cert.pem --key ~/.docker/big/key.pem",
			"senclaw engines add desk --context desk",
			"senclaw engines rm big",
		),
		RunE: verbs,
	}
	ls := &cobra.Command{
		Use: "ls [--json]", Aliases: []string{"list"}, Short: "list the engines with their state, version, CPUs and memory",
		Example: examples("senclaw engines ls", "senclaw engines ls --json"),
	}
	jsonOut := tableFlags(ls, x)
	ls.RunE = x.noArgs("engines ls", func(c *client.Client) int { return enginesList(x.ctx, c, *jsonOut, x.io) })
	var en apitype.EngineSettings
	add := &cobra.Command{
		Use: "add NAME (--host URL [--ca FILE --cert FILE --key FILE] | --context NAME)", Short: "name a Docker engine on another machine",
		Example: examples(
			"senclaw engines add big --host tcp://build-box:2376 --ca ca.pem --cert cert.pem --key key.pem",
			"senclaw engines add fwd --host unix:///run/user/1000/big.sock",
		),
		RunE: x.action(func(args []string) int {
			return x.withClient(func(c *client.Client) int { return enginesAdd(x.ctx, c, args, en, x.io) })
		}),
	}
	fs := add.Flags()
	fs.StringVar(&en.Host, "host", "", "the daemon's `URL`: tcp://HOST:2376 (with TLS) or unix:///PATH (a socket forwarded from it)")
	fs.StringVar(&en.Context, "context", "", "a Docker context's `NAME`, with its host and TLS material")
	fs.StringVar(&en.CACert, "ca", "", "the CA that signed the daemon's certificate, a `FILE` (needed for tcp://)")
	fs.StringVar(&en.Cert, "cert", "", "the client's certificate, a `FILE`")
	fs.StringVar(&en.Key, "key", "", "the client's key, a `FILE`")
	rm := &cobra.Command{
		Use: "rm NAME", Aliases: []string{"remove"}, Short: "forget an engine no sandbox lives on",
		Example: examples(
			"senclaw engines rm big",
			"senclaw rm build && senclaw engines rm big   # its last sandbox first",
		),
		RunE: x.action(func(args []string) int {
			return x.withClient(func(c *client.Client) int { return enginesRemove(x.ctx, c, args, x.io) })
		}),
	}
	cmd.AddCommand(ls, add, rm)
	return cmd
}

// enginesList executes `senclaw engines ls`.
func enginesList(ctx context.Context, c *client.Client, jsonOut bool, io streams) int {
	caps, err := c.Caps(ctx, true)
	if err != nil {
		say(io.Err, "senclaw engines ls: %v", err)
		return exitFor(err)
	}
	engines := caps.Engines
	if engines == nil {
		engines = []apitype.EngineInfo{}
	}
	if jsonOut {
		writeJSON(io.Out, engines)
		return 0
	}
	enginesTable(io, engines)
	return 0
}

// enginesTable prints engines, as senclaw caps and senclaw engines ls do.
func enginesTable(io streams, engines []apitype.EngineInfo) {
	tw := table(io)
	row(tw, "ENGINE", "WHERE", "STATE", "VERSION", "CPUS", "MEMORY", "SANDBOXES", "REASON")
	for _, en := range engines {
		where := "this machine"
		if en.Remote {
			where = "another machine"
		}
		cpus, memory := "-", "-"
		if en.CPUs > 0 {
			cpus = fmt.Sprint(en.CPUs)
		}
		if en.MemoryBytes > 0 {
			memory = sizeText(en.MemoryBytes)
		}
		row(tw, en.Name, where, string(en.State), dash(en.Version), cpus, memory, fmt.Sprint(en.Sandboxes), en.Reason)
	}
	tw.Flush()
}

// enginesAdd executes `senclaw engines add NAME ...`: the engine is added
// to the settings, which check it (and refuse ssh, and TLS nothing
// verifies) before anything is saved.
func enginesAdd(ctx context.Context, c *client.Client, args []string, en apitype.EngineSettings, io streams) int {
	if len(args) != 1 {
		say(io.Err, "senclaw engines add: give the engine's name; usage: senclaw engines add NAME (--host URL [--ca FILE --cert FILE --key FILE] | --context NAME)")
		return ExitUsage
	}
	en.Name = args[0]
	// Paths are this machine's, from where the caller is.
	for _, p := range []*string{&en.CACert, &en.Cert, &en.Key} {
		if *p != "" && !filepath.IsAbs(*p) {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
	s, err := c.Settings(ctx)
	if err != nil {
		say(io.Err, "senclaw engines add: %v", err)
		return exitFor(err)
	}
	list := slices.DeleteFunc(slices.Clone(s.Engines), func(o apitype.EngineSettings) bool { return o.Name == en.Name })
	replaced := len(list) < len(s.Engines)
	list = append(list, en)
	if _, err := c.SetSettings(ctx, map[string]any{"engines": list}); err != nil {
		say(io.Err, "senclaw engines add: %v", err)
		return exitFor(err)
	}
	if replaced {
		say(io.Out, "engine %s changed", en.Name)
	} else {
		say(io.Out, "engine %s added; make sandboxes there with senclaw create --engine %s (senclaw engines ls shows whether it answers)", en.Name, en.Name)
	}
	return 0
}

// enginesRemove executes `senclaw engines rm NAME`.
func enginesRemove(ctx context.Context, c *client.Client, args []string, io streams) int {
	if len(args) != 1 {
		say(io.Err, "senclaw engines rm: give one engine's name (senclaw engines ls lists them)")
		return ExitUsage
	}
	s, err := c.Settings(ctx)
	if err != nil {
		say(io.Err, "senclaw engines rm: %v", err)
		return exitFor(err)
	}
	list := slices.DeleteFunc(slices.Clone(s.Engines), func(o apitype.EngineSettings) bool { return o.Name == args[0] })
	if len(list) == len(s.Engines) {
		say(io.Err, "senclaw engines rm: no engine is named %q in the settings (senclaw engines ls lists them)", args[0])
		return ExitUsage
	}
	if _, err := c.SetSettings(ctx, map[string]any{"engines": list}); err != nil {
		say(io.Err, "senclaw engines rm: %v", err)
		return exitFor(err)
	}
	say(io.Out, "engine %s removed", args[0])
	return 0
}
