package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func serveCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR] [--lan IP:PORT [--tls-cert FILE --tls-key FILE]]",
		Short: "run the engine and its API without a window (servers, CI)",
		Long: "The API listens on a Unix socket (mode 0600) in the runtime dir and, for the dashboard, on --listen (or SENCLAW_LISTEN; default 127.0.0.1:7878, loopback only) with a bearer token. " +
			"When another user's program holds that port, serve refuses to start (exit 2) and names it: it may be waiting for your token. " +
			"When a program of your own holds the default port, serve listens on another and says which. Open the dashboard with senclaw open. " +
			"--lan (or the lanListen setting) opens the daemon to other machines, off by default: the API and /mcp on IP:PORT over TLS only (a certificate the engine makes " +
			"and keeps, its SHA-256 fingerprint printed for clients to pin, or --tls-cert and --tls-key), to agent and tenant tokens only: never the owner's token, never the " +
			"dashboard or its login; each token rate-limited, an address that sends 10 tokens nobody has within 10 minutes locked out for 15. Sandboxes never reach it.",
		Example: examples(
			"senclaw serve",
			"SENCLAW_LISTEN=127.0.0.1:9000 senclaw serve   # or --listen 127.0.0.1:9000",
			"senclaw serve --listen ''   # the Unix socket only",
			"senclaw serve --lan 192.168.1.20:7879   # a teammate's agent: senclaw tenants add alice",
		),
	}
	o := &ServeOptions{}
	fs := cmd.Flags()
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:7878", "`ADDR` of the dashboard and REST API over HTTP (\"\" for the Unix socket only; default: SENCLAW_LISTEN, else 127.0.0.1:7878); a port another user holds is refused, never swapped for another")
	fs.StringVar(&o.LAN, "lan", "", "also serve the API and /mcp to other machines at `IP:PORT`, over TLS only, to agent and tenant tokens only (never the owner's token or the dashboard); default: the lanListen setting, else none")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "the LAN listener's TLS certificate `FILE` (default: one the engine makes and keeps in the config dir, its fingerprint printed)")
	fs.StringVar(&o.TLSKey, "tls-key", "", "the LAN listener's TLS key `FILE`, with --tls-cert")
	allowRemote := fs.Bool("allow-remote", false, "gone: use --lan")
	_ = fs.MarkHidden("allow-remote")
	cmd.RunE = x.action(func(args []string) int {
		if len(args) > 0 {
			fmt.Fprintf(x.io.Err, "senclaw serve: unexpected arguments %q\n", args)
			return ExitUsage
		}
		if *allowRemote {
			fmt.Fprintln(x.io.Err, "senclaw serve: --allow-remote is gone: it served the owner's token and the dashboard to the network. Use --lan IP:PORT, which serves the API and /mcp over TLS to agent and tenant tokens only (senclaw tokens add, senclaw tenants add)")
			return ExitUsage
		}
		if (o.TLSCert == "") != (o.TLSKey == "") {
			fmt.Fprintln(x.io.Err, "senclaw serve: give --tls-cert and --tls-key together")
			return ExitUsage
		}
		env, envGiven := x.env.LookupEnv("SENCLAW_LISTEN")
		if !fs.Changed("listen") && envGiven {
			o.Listen = env
		}
		o.ListenGiven = fs.Changed("listen") || envGiven
		return x.hostEngine("serve", func(e Hosting) int { return e.Serve(x.ctx, x.host(), *o) })
	})
	return cmd
}
