package mcp

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/backends"
)

type createArgs struct {
	Name          string            `json:"name,omitempty" jsonschema:"a name people will recognise in the dashboard"`
	Backend       string            `json:"backend,omitempty" jsonschema:"bwrap, landlock or docker; omit to get the best isolating backend available. Never ask for direct: it runs with no isolation and is refused unless a person allowed it"`
	Engine        string            `json:"engine,omitempty" jsonschema:"a named Docker engine of the settings, on another machine, to make the sandbox on (sbx_capabilities lists the engines); its files live there and its network still goes through this machine's proxy; default: local, this machine's"`
	Image         string            `json:"image,omitempty" jsonschema:"container image, docker backend only; default: the settings' defaultImage"`
	Network       *bool             `json:"network,omitempty" jsonschema:"allow network access (needed by sbx_install); default: the settings' defaultNetwork (off unless a person changed it)"`
	FsMode        string            `json:"fsMode,omitempty" jsonschema:"what code may read: strict (its own folder and system folders), allowlist (strict plus folders a person listed) or open (the whole disk read-only, except secrets); default: the settings' defaultFsMode. Writes stay inside its folder in every mode"`
	CPUs          *float64          `json:"cpus,omitempty" jsonschema:"CPU limit in cores, 0.1 to 32; default: the settings' defaultCpus"`
	MemoryMB      *int              `json:"memoryMb,omitempty" jsonschema:"memory limit in MB, 64 to 65536; default: the settings' defaultMemoryMb"`
	Pids          *int              `json:"pids,omitempty" jsonschema:"process count limit, 16 to 8192; default: the settings' defaultPids"`
	DiskMB        *int              `json:"diskMb,omitempty" jsonschema:"quota of its folder in MB, 16 to 1048576; default: the settings' defaultDiskMb"`
	TimeoutMs     *int              `json:"timeoutMs,omitempty" jsonschema:"default timeout of its runs in milliseconds, 1000 to 86400000 (24 h); default: the settings' defaultTimeoutMs"`
	ListenPorts   []int             `json:"listenPorts,omitempty" jsonschema:"ports (1024 to 65535) its servers may listen on, reachable from this machine at 127.0.0.1:PORT; at most 16"`
	ConnectPorts  []int             `json:"connectPorts,omitempty" jsonschema:"remote ports (1 to 65535) it may connect to, e.g. 443; at most 16"`
	LoopbackPorts []int             `json:"loopbackPorts,omitempty" jsonschema:"ports of this machine's own services it may call at localhost; empty = none; at most 16"`
	Env           map[string]string `json:"env,omitempty" jsonschema:"environment variables of every run, NAME: value"`
	Mounts        []mountArg        `json:"mounts,omitempty" jsonschema:"host folders to show inside its folder: source (absolute host path), target (relative path inside the sandbox; default: the folder's name), readOnly, copy (on a remote engine: copied in once, as a folder of this machine cannot be bound there)"`
	Secrets       []string          `json:"secrets,omitempty" jsonschema:"names of the engine's secrets its runs may use (sbx_capabilities lists them): each run gets a placeholder in the variable NAME in upper case, which the proxy replaces with the value on requests to the secret's hosts only; the value itself never enters the sandbox"`
	AllowHTTP     []httpRuleArg     `json:"allowHttp,omitempty" jsonschema:"HTTP rules: for each rule's host, only the requests whose method and path a rule of that host allows get through (403 with X-Senclaw-Refused otherwise)"`
}

// httpRuleArg is an HTTP rule as an agent gives it.
type httpRuleArg struct {
	Host    string   `json:"host" jsonschema:"HOST[:PORT], *.name for the name and its subdomains; without a port 443 and 80"`
	Methods []string `json:"methods,omitempty" jsonschema:"methods allowed, e.g. GET, HEAD; omitted: any"`
	Paths   []string `json:"paths,omitempty" jsonschema:"paths allowed: a prefix such as /repos/, or a glob over the whole path with * (within a segment), ** (across segments), ? (one character); omitted: any"`
}

func httpRulesOf(args []httpRuleArg) []backends.HTTPRule {
	if args == nil {
		return nil
	}
	out := make([]backends.HTTPRule, len(args))
	for i, r := range args {
		out[i] = backends.HTTPRule{Host: r.Host, Methods: r.Methods, Paths: r.Paths}
	}
	return out
}

// mountArg is a mount as an agent gives it: only the source is required.
type mountArg struct {
	Source   string `json:"source" jsonschema:"absolute path of a folder on this machine"`
	Target   string `json:"target,omitempty" jsonschema:"relative path inside the sandbox's folder; default: the folder's name"`
	ReadOnly bool   `json:"readOnly,omitempty" jsonschema:"read-only inside the sandbox; default false"`
	Copy     bool   `json:"copy,omitempty" jsonschema:"on a remote engine, copy the folder in once instead of binding it (a folder of this machine cannot be bound on another machine); default false"`
}

func mountsOf(args []mountArg) []backends.Mount {
	if args == nil {
		return nil
	}
	out := make([]backends.Mount, len(args))
	for i, m := range args {
		out[i] = backends.Mount{Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly, Copy: m.Copy}
	}
	return out
}

type createResult struct {
	SandboxID string          `json:"sandboxId"`
	Name      string          `json:"name"`
	Backend   string          `json:"backend" jsonschema:"the backend its runs use; empty means the best available at each run"`
	Engine    string          `json:"engine,omitempty" jsonschema:"the named Docker engine it lives on, on another machine; absent: this machine's"`
	Image     string          `json:"image,omitempty"`
	Network   bool            `json:"network"`
	FsMode    backends.FsMode `json:"fsMode"`
	Workspace string          `json:"workspace" jsonschema:"the folder it may write (on a remote engine, /work in its container); paths of sbx_file_* are relative to it"`
	notes
}

type listResult struct {
	Sandboxes []app.Sandbox `json:"sandboxes"`
}

type updateArgs struct {
	SandboxID string            `json:"sandboxId" jsonschema:"id of the sandbox to change"`
	Name      *string           `json:"name,omitempty" jsonschema:"new name"`
	Network   *bool             `json:"network,omitempty" jsonschema:"allow or forbid network access"`
	CPUs      *float64          `json:"cpus,omitempty" jsonschema:"CPU limit in cores, 0.1 to 32"`
	MemoryMB  *int              `json:"memoryMb,omitempty" jsonschema:"memory limit in MB, 64 to 65536"`
	Pids      *int              `json:"pids,omitempty" jsonschema:"process count limit, 16 to 8192"`
	DiskMB    *int              `json:"diskMb,omitempty" jsonschema:"quota of its folder in MB, 16 to 1048576"`
	TimeoutMs *int              `json:"timeoutMs,omitempty" jsonschema:"default timeout of its runs in milliseconds, 1000 to 86400000 (24 h)"`
	Env       map[string]string `json:"env,omitempty" jsonschema:"replaces the environment variables of every run, NAME: value"`
	Secrets   []string          `json:"secrets,omitempty" jsonschema:"replaces the secrets its runs may use, by name (sbx_capabilities lists them; [] for none)"`
	AllowHTTP []httpRuleArg     `json:"allowHttp,omitempty" jsonschema:"replaces its HTTP rules ([] for none): for each rule's host, only the requests whose method and path a rule allows get through"`
}

type updateResult struct {
	Sandbox *app.Sandbox `json:"sandbox"`
	notes
}

type deleteArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of the sandbox to delete; its processes are stopped"`
	Purge     bool   `json:"purge,omitempty" jsonschema:"also delete its folder and files (only ever a folder senclaw created); false keeps them on disk"`
}

type capsArgs struct {
	Refresh bool `json:"refresh,omitempty" jsonschema:"probe the backends again instead of using results up to 20 s old"`
}

type capsResult struct {
	app.Capabilities
	Languages  []string         `json:"languages" jsonschema:"the languages sbx_run and sbx_run_in accept"`
	FsModes    []app.FsModeInfo `json:"fsModes"`
	ExecPolicy *app.ExecPolicy  `json:"execPolicy" jsonschema:"the enforcement switches a person set (runPython/runNode off refuse code runs)"`
	Secrets    []secretName     `json:"secrets" jsonschema:"the secrets a person gave the engine, by name: ask for one with secrets on sbx_create or sbx_run; its value never enters the sandbox"`
}

// secretName is what an agent sees of a secret: never its value.
type secretName struct {
	Name  string   `json:"name"`
	Hosts []string `json:"hosts" jsonschema:"the only hosts the proxy sends its value to"`
	Env   string   `json:"env" jsonschema:"the variable its placeholder is in inside a sandbox"`
}

type sandboxArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
}

// statsResult is the engine's Stats without the CPU history, which is for
// the dashboard's chart.
type statsResult struct {
	Source        string            `json:"source" jsonschema:"host (process sampling) or container"`
	Running       bool              `json:"running"`
	Processes     []app.ProcessInfo `json:"processes" jsonschema:"its processes: pid, ppid, pgid, command, cpuPercent (percent of one core), rssMb, rssBytes, elapsedSec"`
	CPUPercent    float64           `json:"cpuPercent" jsonschema:"total CPU, percent of one core"`
	RSSMB         float64           `json:"rssMb" jsonschema:"total resident memory in MB"`
	MemoryLimitMB int               `json:"memoryLimitMb"`
	SampledAtMs   int64             `json:"sampledAtMs"`
	Note          string            `json:"note,omitempty"`
}

type killArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of the sandbox whose processes to kill"`
	Pid       int    `json:"pid,omitempty" jsonschema:"host pid of one of its processes (from sbx_stats); omit to kill all its processes. A pid that is not the sandbox's is refused"`
}

type killResult struct {
	OK     bool `json:"ok"`
	Killed *int `json:"killed,omitempty" jsonschema:"the pid killed"`
	Groups *int `json:"groups,omitempty" jsonschema:"how many runs were stopped, when no pid was given"`
	// Processes are what ran (and was killed), as sbx_stats saw it.
	Processes []killedProcess `json:"processes" jsonschema:"the processes that were running and were killed: pid and command"`
	Message   string          `json:"message" jsonschema:"what was killed, in words"`
}

type killedProcess struct {
	Pid     int    `json:"pid"`
	Command string `json:"command"`
}

type runsArgs struct {
	SandboxID string `json:"sandboxId,omitempty" jsonschema:"only this sandbox's runs; omit for all runs, one-shot runs included"`
	Limit     int    `json:"limit,omitempty" jsonschema:"how many of the newest runs, 1 to 500"`
}

type runsResult struct {
	Runs []app.RunRecord `json:"runs" jsonschema:"newest first; stdout and stderr are cut to their last 2000 bytes"`
}

// runsOutputTail is how much of each output stream sbx_runs shows.
const runsOutputTail = 2000

func (s *server) addSandboxTools(srv *sdk.Server) {
	addTool(srv, "sbx_create", "Create a persistent sandbox",
		"Create a persistent sandbox: an isolated folder with its own limits, network and port rules, that keeps files and installed packages between calls. "+
			"Use it for multi-step work (sbx_file_write, then sbx_run_in/sbx_exec, sbx_install), and sbx_delete it when done. For a single calculation, sbx_run is simpler. "+
			"Read the answer's note: it says what the backend enforces.",
		changes, inputSchema[createArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in createArgs) (*sdk.CallToolResult, createResult, error) {
			cfg := app.SandboxConfig{Network: in.Network, CPUs: in.CPUs, MemoryMB: in.MemoryMB, Pids: in.Pids, DiskMB: in.DiskMB, TimeoutMs: in.TimeoutMs,
				Listen: in.ListenPorts, Connect: in.ConnectPorts, Loopback: in.LoopbackPorts, Env: in.Env, Mounts: mountsOf(in.Mounts),
				Secrets: in.Secrets, AllowHTTP: httpRulesOf(in.AllowHTTP)}
			for _, f := range []struct {
				v   string
				dst **string
			}{{in.Name, &cfg.Name}, {in.Backend, &cfg.Backend}, {in.Engine, &cfg.Engine}, {in.Image, &cfg.Image}, {in.FsMode, &cfg.FsMode}} {
				if f.v != "" {
					*f.dst = &f.v
				}
			}
			rep, err := call(ctx, s, func(c *client.Client) (*client.SandboxReply, error) { return c.Create(ctx, cfg) })
			if err != nil {
				return nil, createResult{}, err
			}
			sb := rep.Sandbox
			return nil, createResult{SandboxID: sb.ID, Name: sb.Name, Backend: sb.Backend, Engine: sb.Engine, Image: sb.Image, Network: sb.Network, FsMode: sb.FsMode, Workspace: sb.Workspace, notes: mcpNotes(rep.Notes)}, nil
		})

	addTool(srv, "sbx_list", "List sandboxes",
		"List every sandbox (persistent, agent-shell and running one-shot ones) with its configuration, state and last use.",
		readOnly, inputSchema[struct{}](),
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, listResult, error) {
			all, err := call(ctx, s, func(c *client.Client) ([]app.Sandbox, error) { return c.Sandboxes(ctx) })
			if all == nil {
				all = []app.Sandbox{}
			}
			return nil, listResult{Sandboxes: all}, err
		})

	addTool(srv, "sbx_update", "Change a sandbox's limits or network",
		"Change a persistent sandbox's name, network switch, limits, default timeout, environment, secrets or HTTP rules. Only the fields given change; limits are checked as on create. "+
			"For port rules use sbx_ports, for folders sbx_mount/sbx_unmount, for what it may read sbx_fs_mode.",
		changes, inputSchema[updateArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in updateArgs) (*sdk.CallToolResult, updateResult, error) {
			cfg := app.SandboxConfig{Name: in.Name, Network: in.Network, CPUs: in.CPUs, MemoryMB: in.MemoryMB, Pids: in.Pids, DiskMB: in.DiskMB, TimeoutMs: in.TimeoutMs, Env: in.Env,
				Secrets: in.Secrets, AllowHTTP: httpRulesOf(in.AllowHTTP)}
			rep, err := call(ctx, s, func(c *client.Client) (*client.SandboxReply, error) { return c.Update(ctx, in.SandboxID, cfg) })
			if err != nil {
				return nil, updateResult{}, err
			}
			return nil, updateResult{Sandbox: rep.Sandbox, notes: mcpNotes(rep.Notes)}, nil
		})

	addTool(srv, "sbx_delete", "Delete a sandbox",
		"Delete a persistent sandbox: stop its processes and forget it. With purge: true its folder and files are deleted too; otherwise they stay on disk. Its run records stay.",
		destroys, inputSchema[deleteArgs](withDefault("purge", false)),
		func(ctx context.Context, _ *sdk.CallToolRequest, in deleteArgs) (*sdk.CallToolResult, *client.DeleteReply, error) {
			rep, err := call(ctx, s, func(c *client.Client) (*client.DeleteReply, error) { return c.Delete(ctx, in.SandboxID, in.Purge) })
			return nil, rep, err
		})

	addTool(srv, "sbx_capabilities", "What this machine can isolate with",
		"Report which sandbox backends work on this machine (bwrap, landlock, docker, ...), what each enforces (fs, network, memory, pids, cpu, ...), the recommended one, "+
			"the Docker engines sandboxes may be made on (engines: local and the named ones on other machines, with state, version, CPUs and memory; sbx_create's engine), "+
			"the languages code runs accept, the fs modes, the enforcement switches and the names of the secrets a person gave the engine. Call it when a run is refused or to choose a backend or an engine.",
		readOnly, inputSchema[capsArgs](withDefault("refresh", false)),
		func(ctx context.Context, _ *sdk.CallToolRequest, in capsArgs) (*sdk.CallToolResult, capsResult, error) {
			var out capsResult
			_, err := call(ctx, s, func(c *client.Client) (struct{}, error) {
				caps, err := c.Caps(ctx, in.Refresh)
				if err != nil {
					return struct{}{}, err
				}
				out.Capabilities = *caps
				if out.Languages, err = c.CodeLanguages(ctx); err != nil {
					return struct{}{}, err
				}
				if out.FsModes, err = c.FsModeList(ctx); err != nil {
					return struct{}{}, err
				}
				if out.ExecPolicy, err = c.Policy(ctx); err != nil {
					return struct{}{}, err
				}
				list, err := c.Secrets(ctx)
				out.Secrets = []secretName{}
				for _, s := range list {
					out.Secrets = append(out.Secrets, secretName{Name: s.Name, Hosts: s.Hosts, Env: s.Env})
				}
				return struct{}{}, err
			})
			return nil, out, err
		})

	addTool(srv, "sbx_stats", "Processes, CPU and memory of a sandbox",
		"Show what runs in a sandbox now: its processes (host pids usable with sbx_kill), CPU and memory, and its memory limit. Use it to check a background server or a stuck run.",
		readOnly, inputSchema[sandboxArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in sandboxArgs) (*sdk.CallToolResult, statsResult, error) {
			st, err := call(ctx, s, func(c *client.Client) (*app.Stats, error) { return c.SandboxStats(ctx, in.SandboxID) })
			if err != nil {
				return nil, statsResult{}, err
			}
			if st.Processes == nil {
				st.Processes = []app.ProcessInfo{}
			}
			return nil, statsResult{Source: st.Source, Running: st.Running, Processes: st.Processes, CPUPercent: st.CPUPercent, RSSMB: st.RSSMB,
				MemoryLimitMB: st.MemoryLimitMB, SampledAtMs: st.SampledAtMs, Note: st.Note}, nil
		})

	addTool(srv, "sbx_kill", "Kill a sandbox's processes",
		"Kill one process of a sandbox (pid from sbx_stats), or every process it runs when pid is omitted (e.g. a background server). Only the sandbox's own processes can be killed.",
		killsProcs, inputSchema[killArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in killArgs) (*sdk.CallToolResult, killResult, error) {
			// What runs now, to say what the kill ended.
			before, _ := call(ctx, s, func(c *client.Client) (*app.Stats, error) { return c.SandboxStats(ctx, in.SandboxID) })
			rep, err := call(ctx, s, func(c *client.Client) (*client.KillReply, error) { return c.KillProcesses(ctx, in.SandboxID, in.Pid) })
			if err != nil {
				return nil, killResult{}, err
			}
			out := killResult{OK: rep.OK, Killed: rep.Killed, Groups: rep.Groups, Processes: []killedProcess{}}
			if before != nil {
				for _, p := range before.Processes {
					if in.Pid == 0 || p.Pid == in.Pid {
						out.Processes = append(out.Processes, killedProcess{Pid: p.Pid, Command: p.Command})
					}
				}
			}
			switch {
			case in.Pid != 0:
				out.Message = fmt.Sprintf("killed process %d", in.Pid)
			case rep.Groups != nil && *rep.Groups == 0:
				out.Message = "nothing was running"
			case rep.Groups != nil:
				out.Message = fmt.Sprintf("stopped %d run(s)", *rep.Groups)
			}
			if len(out.Processes) > 0 {
				var names []string
				for _, p := range out.Processes {
					names = append(names, fmt.Sprintf("%d %s", p.Pid, p.Command))
				}
				out.Message += ": " + strings.Join(names, ", ")
			}
			return textResult(out.Message), out, nil
		})

	addTool(srv, "sbx_runs", "Recent runs and the isolation each got",
		"List recent runs, newest first, of one sandbox or of all: who asked (source), what ran, exit code, duration and the isolation really applied. "+
			"Use it to find a background run's result or an earlier run's id.",
		readOnly, inputSchema[runsArgs](withDefault("limit", 20), withRange("limit", 1, 500)),
		func(ctx context.Context, _ *sdk.CallToolRequest, in runsArgs) (*sdk.CallToolResult, runsResult, error) {
			if in.Limit < 1 || in.Limit > 500 {
				return nil, runsResult{}, fmt.Errorf("limit %d: must be a whole number from 1 to 500", in.Limit)
			}
			runs, err := call(ctx, s, func(c *client.Client) ([]app.RunRecord, error) { return c.Runs(ctx, in.SandboxID, in.Limit) })
			if err != nil {
				return nil, runsResult{}, err
			}
			if runs == nil {
				runs = []app.RunRecord{}
			}
			for i := range runs {
				runs[i].Stdout, runs[i].Stderr = tail(runs[i].Stdout, runsOutputTail), tail(runs[i].Stderr, runsOutputTail)
			}
			return nil, runsResult{Runs: runs}, nil
		})
}

// tail is the last n bytes of s, starting at a rune boundary.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}
