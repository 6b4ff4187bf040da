package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

func secretsCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "secrets add|ls|rotate|rm ...", Short: "the credentials the engine holds for sandboxes, which never see them",
		Long: "A sandbox that asks for secret gh (senclaw run --secret gh, create --secret gh, secrets: [\"gh\"] over MCP) finds a placeholder in GH, " +
			"which the engine's proxy replaces with the value on requests to the secret's hosts only, over HTTPS; sent anywhere else it is refused. " +
			"The value is read from stdin, never from the command line, and kept in the desktop keyring (Secret Service) or sealed in the engine's store; no command shows it again.",
		Example: examples(
			"printf '%s' \"$GITHUB_TOKEN\" | senclaw secrets add gh --host api.github.com --header Authorization --format 'Bearer {}'",
			"senclaw secrets ls",
			"senclaw secrets rotate gh < new-token.txt",
			"senclaw secrets rm gh",
		),
		RunE: verbs,
	}
	add := &cobra.Command{
		Use: "add NAME --host HOST[:PORT][,HOST...] [--header NAME] [--format 'Bearer {}']", Short: "add a secret; its value comes on stdin",
		Long: "--host names the only hosts the value is sent to (443 without a port; *.name for a name and its subdomains; repeatable or comma-separated). " +
			"With --header the placeholder is replaced in that header only (an HTTP Basic credential holding it too), with --format the header's whole value becomes the format with {} as the value; " +
			"without --header it is replaced anywhere in the request head. On a terminal the value is read without echo.",
		Example: examples("printf '%s' \"$GITHUB_TOKEN\" | senclaw secrets add gh --host api.github.com,uploads.github.com --header Authorization --format 'Bearer {}'",
			"senclaw secrets add npm --host registry.npmjs.org --header Authorization --format 'Bearer {}' < npm-token.txt",
			"senclaw secrets add llm --host api.example.com:8443   # typed without echo on a terminal; replaced anywhere in the request head"),
	}
	var spec apitype.SecretSpec
	add.Flags().Var((*stringList)(&spec.Hosts), "host", "a `HOST[:PORT]` the value may be sent to (repeatable or comma-separated)")
	add.Flags().StringVar(&spec.Header, "header", "", "replace the placeholder only in header `NAME` (Authorization)")
	add.Flags().StringVar(&spec.Format, "format", "", "with --header: the header's whole `VALUE`, {} for the secret ('Bearer {}')")
	add.RunE = x.action(func(args []string) int {
		if len(args) != 1 {
			say(x.io.Err, "senclaw secrets add: give the secret's name, and its value on stdin; usage: senclaw secrets add NAME --host HOST")
			return ExitUsage
		}
		spec.Name = args[0]
		return x.withClient(func(c *client.Client) int { return secretAdd(x.ctx, c, spec, x.env.Stdin, x.io) })
	})
	ls := &cobra.Command{
		Use: "ls [--json]", Aliases: []string{"list"}, Short: "the secrets: names, hosts, where each is kept, which sandboxes ask for it; never a value",
		Example: examples("senclaw secrets ls", "senclaw secrets ls --json"),
	}
	jsonOut := tableFlags(ls, x)
	ls.RunE = x.noArgs("secrets ls", func(c *client.Client) int { return secretList(x.ctx, c, *jsonOut, x.io) })
	rotate := &cobra.Command{
		Use: "rotate NAME", Short: "give a secret a new value, read from stdin; runs going now send it with their next request",
		Example: examples("senclaw secrets rotate gh < new-token.txt", "printf '%s' \"$NEW_TOKEN\" | senclaw secrets rotate gh"),
		RunE: x.action(func(args []string) int {
			if len(args) != 1 {
				say(x.io.Err, "senclaw secrets rotate: give the secret's name, and its new value on stdin")
				return ExitUsage
			}
			return x.withClient(func(c *client.Client) int { return secretRotate(x.ctx, c, args[0], x.env.Stdin, x.io) })
		}),
	}
	rm := &cobra.Command{
		Use: "rm NAME...", Aliases: []string{"remove"}, Short: "remove secrets; the runs of sandboxes that ask for one are refused until it is back",
		Example: examples("senclaw secrets rm gh", "senclaw secrets rm gh npm"),
		RunE: x.action(func(args []string) int {
			return x.withClient(func(c *client.Client) int { return secretRemove(x.ctx, c, args, x.io) })
		}),
	}
	cmd.AddCommand(add, ls, rotate, rm)
	return cmd
}

// readValue reads a secret's value from in: on a terminal one line
// without echo (with a prompt on stderr), else all of it. The line ending
// it ends with is the engine's to drop.
func readValue(in *os.File, name string, out streams) ([]byte, error) {
	if in == nil {
		in = os.Stdin
	}
	if isTerminal(in) {
		fmt.Fprintf(out.Err, "value of secret %s (not shown): ", name)
		defer fmt.Fprintln(out.Err)
		return readHidden(in)
	}
	return readAllBounded(in)
}

// maxValueRead bounds what is read for a value (the engine takes 16 KiB).
const maxValueRead = 64 << 10

func readAllBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(bufio.NewReader(r), maxValueRead+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxValueRead {
		return nil, errors.New("the value on stdin is longer than 64 KiB")
	}
	return b, nil
}

// secretAdd executes `senclaw secrets add`.
func secretAdd(ctx context.Context, c *client.Client, spec apitype.SecretSpec, in *os.File, io streams) int {
	var hosts []string
	for _, h := range spec.Hosts {
		for _, part := range strings.Split(h, ",") {
			if part = strings.TrimSpace(part); part != "" {
				hosts = append(hosts, part)
			}
		}
	}
	spec.Hosts = hosts
	if len(spec.Hosts) == 0 {
		say(io.Err, "senclaw secrets add: --host: give the hosts the value may be sent to (--host api.github.com)")
		return ExitUsage
	}
	value, err := readValue(in, spec.Name, io)
	if err != nil {
		say(io.Err, "senclaw secrets add: reading the value from stdin: %v", err)
		return ExitFailure
	}
	s, err := c.AddSecret(ctx, spec, string(value))
	if err != nil {
		say(io.Err, "senclaw secrets add: %v", err)
		return exitFor(err)
	}
	say(io.Out, "added secret %s for %s, kept in %s; a sandbox that asks for it finds its placeholder in %s", s.Name, strings.Join(s.Hosts, ", "), whereText(s.Where), s.Env)
	return 0
}

// secretRotate executes `senclaw secrets rotate`.
func secretRotate(ctx context.Context, c *client.Client, name string, in *os.File, io streams) int {
	value, err := readValue(in, name, io)
	if err != nil {
		say(io.Err, "senclaw secrets rotate: reading the value from stdin: %v", err)
		return ExitFailure
	}
	if _, err := c.RotateSecret(ctx, name, string(value)); err != nil {
		say(io.Err, "senclaw secrets rotate: %v", err)
		return exitFor(err)
	}
	say(io.Out, "rotated secret %s", name)
	return 0
}

// secretRemove executes `senclaw secrets rm`.
func secretRemove(ctx context.Context, c *client.Client, names []string, io streams) int {
	if len(names) == 0 {
		say(io.Err, "senclaw secrets rm: give the names of the secrets to remove (senclaw secrets ls)")
		return ExitUsage
	}
	code := 0
	for _, n := range names {
		if err := c.RemoveSecret(ctx, n); err != nil {
			say(io.Err, "senclaw secrets rm: %v", err)
			code = exitFor(err)
			continue
		}
		say(io.Out, "removed secret %s", n)
	}
	return code
}

// secretList executes `senclaw secrets ls`.
func secretList(ctx context.Context, c *client.Client, jsonOut bool, io streams) int {
	list, err := c.Secrets(ctx)
	if err != nil {
		say(io.Err, "senclaw secrets ls: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, list)
		return 0
	}
	tw := table(io)
	row(tw, "NAME", "ENV", "HOSTS", "GOES INTO", "KEPT IN", "USED BY")
	for _, s := range list {
		into := "the request head"
		if s.Header != "" {
			into = s.Header
			if s.Format != "" {
				into += ": " + s.Format
			}
		}
		var used []string
		for _, u := range s.UsedBy {
			used = append(used, u.Name)
		}
		row(tw, s.Name, s.Env, strings.Join(s.Hosts, ","), into, whereText(s.Where), dash(strings.Join(used, ",")))
	}
	tw.Flush()
	return 0
}

func whereText(where string) string {
	if where == "keyring" {
		return "the desktop keyring"
	}
	return "the engine's store (sealed)"
}
