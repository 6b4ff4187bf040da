package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// normalize rewrites the long flags written with one dash (-json,
// -data-dir X, -timeout=5s) to two, and the one-letter ones written with
// two (--v) to one. senclaw once parsed its flags with Go's flag package,
// which takes either spelling; scripts, shell aliases and agents'
// configuration files written then keep working. Only the flags of the
// command the words name are rewritten, up to the first argument that is
// no flag (or "--"): what follows it is the command's to run, untouched.
func normalize(root *cobra.Command, args []string) []string {
	out := make([]string, 0, len(args))
	cmd := root
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			if a != "--" {
				if sub := subcommand(cmd, a); sub != nil {
					cmd = sub
					out = append(out, a)
					continue
				}
			}
			return append(out, args[i:]...) // the arguments: nothing more to rewrite
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		dashes := len(a) - len(strings.TrimLeft(a, "-"))
		f := lookup(cmd, name, dashes)
		switch {
		case f == nil || dashes > 2:
			out = append(out, a) // not a flag of the command: its parser says so
			continue
		case len(name) == 1:
			a = "-" + name
		default:
			a = "--" + name
		}
		if hasValue {
			a += "=" + value
		}
		out = append(out, a)
		if !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			// The flag's value, whatever it looks like.
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// lookup finds the flag name of cmd (its own or a global one) as written
// with dashes: a name of one letter is a shorthand, and with two dashes
// also a long name (--h is -h); a longer one a long name.
func lookup(cmd *cobra.Command, name string, dashes int) *pflag.Flag {
	if name == "" {
		return nil
	}
	if name == "help" || (name == "h" && dashes == 2) {
		return &pflag.Flag{Name: "help", Shorthand: "h", NoOptDefVal: "true"}
	}
	sets := []*pflag.FlagSet{cmd.Flags(), cmd.InheritedFlags()}
	for _, fs := range sets {
		if len(name) == 1 {
			if f := fs.ShorthandLookup(name); f != nil {
				return f
			}
			continue
		}
		if f := fs.Lookup(name); f != nil {
			return f
		}
	}
	return nil
}

// subcommand is cmd's command or verb called name (or by an alias of it).
func subcommand(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}
