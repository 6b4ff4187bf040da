package mcp

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/backends"
)

type fsModeArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
	FsMode    string `json:"fsMode" jsonschema:"strict (its own folder, mounts and system folders), allowlist (strict plus the folders in the settings' allowlist) or open (the whole disk read-only, except secret folders and senclaw's data)"`
}

type fsModeResult struct {
	OK      bool            `json:"ok"`
	Sandbox string          `json:"sandbox" jsonschema:"the sandbox's id"`
	FsMode  backends.FsMode `json:"fsMode"`
	Label   string          `json:"label"`
	notes
}

type portsArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
	Listen    []int  `json:"listen,omitempty" jsonschema:"ports (1024 to 65535) its servers may listen on, reachable from this machine at 127.0.0.1:PORT; replaces the list, omitted = none"`
	Connect   []int  `json:"connect,omitempty" jsonschema:"remote ports (1 to 65535) it may connect to, e.g. 443; replaces the list, omitted = none"`
	Loopback  []int  `json:"loopback,omitempty" jsonschema:"ports of this machine's own services it may call at localhost; replaces the list, omitted = none"`
	// Domains and DenyDomains: the egress proxy enforces them.
	Domains     []string      `json:"domains,omitempty" jsonschema:"if not empty, the only names it may reach (exact, or *.example.com for the name and its subdomains); replaces the list, omitted = none (any name)"`
	DenyDomains []string      `json:"denyDomains,omitempty" jsonschema:"names it may never reach; deny wins over allow; replaces the list, omitted = none"`
	AllowHTTP   []httpRuleArg `json:"allowHttp,omitempty" jsonschema:"HTTP rules: for each rule's host, only the requests whose method (e.g. GET) and path (a prefix such as /repos/, or a glob) a rule of that host allows get through; others are answered 403 with X-Senclaw-Refused naming the rule; replaces the list, omitted = none"`
}

type portsResult struct {
	Listen      []int               `json:"listen"`
	Connect     []int               `json:"connect"`
	Loopback    []int               `json:"loopback"`
	Domains     []string            `json:"domains"`
	DenyDomains []string            `json:"denyDomains"`
	AllowHTTP   []backends.HTTPRule `json:"allowHttp"`
	ReachableAt []string            `json:"reachableAt" jsonschema:"addresses on this machine where its listen ports answer"`
	notes
}

type settingsResult struct {
	app.Settings
	Note string `json:"note" jsonschema:"what sbx_settings cannot change"`
}

type traceArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
	Enabled   bool   `json:"enabled" jsonschema:"true records what its next runs do (files, processes, network); false stops recording"`
}

type traceResult struct {
	OK      bool   `json:"ok"`
	Sandbox string `json:"sandbox" jsonschema:"the sandbox's id"`
	Tracing string `json:"tracing" jsonschema:"ON or OFF"`
	Note    string `json:"note"`
}

type eventsArgs struct {
	SandboxID string `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
	RunID     string `json:"runId,omitempty" jsonschema:"only this run's events"`
	Kind      string `json:"kind,omitempty" jsonschema:"only kinds starting with this: file, proc, net (or a full kind such as file.write)"`
	Limit     int    `json:"limit,omitempty" jsonschema:"how many of the newest events, 1 to 5000"`
}

type eventsResult struct {
	TraceEnabled bool                `json:"traceEnabled"`
	Events       []client.TraceEvent `json:"events" jsonschema:"newest first: tsMs, pid, kind (file.read, file.write, proc.spawn, net.connect, net.listen, net.dns, denied), target, detail, source (who observed it)"`
	Note         string              `json:"note"`
}

// settingsNote says what an agent cannot change, in every answer.
const settingsNote = "allowDirect, landlockListen, sandboxUidRange, sandboxUid, sandboxGid and guard are shown but only a person can change them: allowDirect and landlockListen in the dashboard's Defaults card or with senclaw settings set allowDirect=true, sandboxUidRange with senclaw settings set sandboxUidRange=auto (sandboxUid and sandboxGid are deprecated), guard (the shell guard: a command matching a group it has on is refused on the host and noted in a sandbox) on the Security enforcement card or with senclaw settings set guard.GROUP=false"

func (s *server) addRuleTools(srv *sdk.Server) {
	addTool(srv, "sbx_fs_mode", "Change what a sandbox may read",
		"Change what a persistent sandbox's code may read: strict, allowlist or open. Writes stay inside its folder and read-write mounts in every mode. Takes effect on its next run.",
		changes, inputSchema[fsModeArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in fsModeArgs) (*sdk.CallToolResult, fsModeResult, error) {
			rep, err := call(ctx, s, func(c *client.Client) (*client.FsModeReply, error) {
				return c.ChangeFsMode(ctx, in.SandboxID, in.FsMode)
			})
			if err != nil {
				return nil, fsModeResult{}, err
			}
			return nil, fsModeResult{OK: rep.OK, Sandbox: in.SandboxID, FsMode: rep.FsMode, Label: rep.Label, notes: mcpNotes(rep.Notes)}, nil
		})

	addTool(srv, "sbx_ports", "Set a sandbox's port rules",
		"Replace a persistent sandbox's port rules: listen (its servers, reachable from this machine at 127.0.0.1:PORT), connect (remote ports it may dial) and loopback (this machine's services it may call), its domain lists and its HTTP rules (allowHttp: methods and paths per host). "+
			"Each list replaces the old one and an omitted list means none. Read the note: it says what the backend enforces.",
		changes, inputSchema[portsArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in portsArgs) (*sdk.CallToolResult, portsResult, error) {
			res, err := call(ctx, s, func(c *client.Client) (*app.PortsResult, error) {
				return c.SetPortRules(ctx, in.SandboxID, backends.PortRules{Listen: in.Listen, Connect: in.Connect, Loopback: in.Loopback, Domains: in.Domains, DenyDomains: in.DenyDomains, AllowHTTP: httpRulesOf(in.AllowHTTP)})
			})
			if err != nil {
				return nil, portsResult{}, err
			}
			reach := res.ReachableAt
			if reach == nil {
				reach = []string{}
			}
			return nil, portsResult{Listen: orEmpty(res.Ports.Listen), Connect: orEmpty(res.Ports.Connect), Loopback: orEmpty(res.Ports.Loopback),
				Domains: names(res.Ports.Domains), DenyDomains: names(res.Ports.DenyDomains), AllowHTTP: orNoRules(res.Ports.AllowHTTP), ReachableAt: reach, notes: mcpNotes(res.Notes)}, nil
		})

	settingsSchema := inputSchema[settingsArgs]()
	// Other names are let through the schema so that parseSettingsPatch can
	// refuse them with a message that says why.
	settingsSchema.AdditionalProperties = nil
	addTool(srv, "sbx_settings", "Read or change the sandbox defaults",
		"With no arguments, read the settings: the defaults of new sandboxes and one-shot runs (fs mode, allowlist, network, CPUs, memory, pids, timeout, disk, image). "+
			"With arguments, change only those settings (the allowlist is replaced as a whole); values are checked as on create. "+
			"allowDirect, landlockListen, mountAllow, allowedSockets, nestedProjectDepth, nestedProjectLimit, engines, sandboxUidRange, sandboxUid, sandboxGid and guard (the shell guard) cannot be changed here: an agent must not switch off its own isolation.",
		changes, settingsSchema,
		func(ctx context.Context, req *sdk.CallToolRequest, raw json.RawMessage) (*sdk.CallToolResult, settingsResult, error) {
			patch, err := parseSettingsPatch(raw)
			if err != nil {
				return nil, settingsResult{}, err
			}
			st, err := call(ctx, s, func(c *client.Client) (*app.Settings, error) {
				if patch == nil {
					return c.Settings(ctx)
				}
				return c.SetSettings(ctx, patch)
			})
			if err != nil {
				return nil, settingsResult{}, err
			}
			if st.Allowlist == nil {
				st.Allowlist = []string{}
			}
			return nil, settingsResult{Settings: *st, Note: settingsNote}, nil
		})

	addTool(srv, "sbx_trace", "Record what a sandbox's runs do",
		"Switch tracing of a persistent sandbox on or off. When on, its next runs record the files they read and write, the processes they start and the network they use; read them with sbx_events. "+
			"Tracing is for understanding what code did, not security evidence.",
		changes, inputSchema[traceArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in traceArgs) (*sdk.CallToolResult, traceResult, error) {
			rep, err := call(ctx, s, func(c *client.Client) (*client.TraceReply, error) { return c.SetTracing(ctx, in.SandboxID, in.Enabled) })
			if err != nil {
				return nil, traceResult{}, err
			}
			return nil, traceResult{OK: rep.OK, Sandbox: in.SandboxID, Tracing: rep.Tracing, Note: rep.Note}, nil
		})

	addTool(srv, "sbx_events", "Read what a traced sandbox's runs did",
		"Read the events recorded while tracing was on (sbx_trace): files read and written, processes started, network connections and lookups, denials. Newest first; narrow by runId and kind.",
		readOnly, inputSchema[eventsArgs](withDefault("limit", 200), withRange("limit", 1, 5000)),
		func(ctx context.Context, _ *sdk.CallToolRequest, in eventsArgs) (*sdk.CallToolResult, eventsResult, error) {
			rep, err := call(ctx, s, func(c *client.Client) (*client.EventsReply, error) {
				return c.TraceEvents(ctx, in.SandboxID, client.EventsQuery{RunID: in.RunID, Kind: in.Kind, Limit: in.Limit})
			})
			if err != nil {
				return nil, eventsResult{}, err
			}
			events := rep.Events
			if events == nil {
				events = []client.TraceEvent{}
			}
			return nil, eventsResult{TraceEnabled: rep.TraceEnabled, Events: events, Note: rep.Note}, nil
		})
}

func orNoRules(l []backends.HTTPRule) []backends.HTTPRule {
	if l == nil {
		return []backends.HTTPRule{}
	}
	return l
}

func orEmpty(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// names is l, or an empty list rather than null.
func names(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
