package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/client"
)

func settingsCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "settings [--json] | set KEY=VALUE...", Short: "show or change the engine's settings",
		Long: "Every setting with its value and what it is. The dashboard's Defaults card changes the same ones; allowDirect and the sandbox user are only for people, never for an agent's MCP call.",
		Example: examples(
			"senclaw settings",
			"senclaw settings set defaultMemoryMb=1024 defaultNetwork=true",
			"senclaw settings set allowlist=/usr/share/dict,/opt/data",
		),
	}
	jsonOut := tableFlags(cmd, x)
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return verbs(c, args)
		}
		x.code = x.withClient(func(cl *client.Client) int { return settings(x.ctx, cl, nil, *jsonOut, x.io) })
		return nil
	}
	set := &cobra.Command{
		Use: "set KEY=VALUE...", Short: "change settings, KEY=VALUE each (lists comma-separated)",
		Example: examples("senclaw settings set defaultTimeoutMs=60000", "senclaw settings set allowDirect=false notifications=off"),
	}
	setJSON := jsonFlag(set)
	set.RunE = x.action(func(args []string) int {
		if len(args) == 0 {
			fmt.Fprintln(x.io.Err, "senclaw settings set: give KEY=VALUE (senclaw settings lists the keys)")
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return settings(x.ctx, c, args, *setJSON, x.io) })
	})
	cmd.AddCommand(set)
	return cmd
}

// settingHelp says what each setting is, in the words the dashboard uses.
// A setting the engine has and this table lacks is still shown and set.
var settingHelp = map[string]string{
	"defaultFsMode":             "what new sandboxes may read: strict, allowlist or open",
	"allowlist":                 "paths allowlist-mode sandboxes may read (comma-separated absolute paths)",
	"defaultNetwork":            "whether new sandboxes may use the network",
	"defaultCpus":               "CPU limit of new sandboxes, in cores (0.1 to 32)",
	"defaultMemoryMb":           "memory limit of new sandboxes, in MB (64 to 65536)",
	"defaultPids":               "process limit of new sandboxes (16 to 8192)",
	"defaultTimeoutMs":          "timeout of new sandboxes' runs, in ms (1000 to 86400000, 24 h)",
	"defaultDiskMb":             "workspace quota of new sandboxes, in MB",
	"sandboxUidRange":           "the host uids a root engine runs its sandboxes as, one each: auto (a free 65536-block above every account and subordinate range) or FIRST-LAST; applies at the engine's next start",
	"sandboxUid":                "deprecated: sandboxes now have uids of their own (sandboxUidRange); names who owned the workspaces before",
	"sandboxGid":                "deprecated, as sandboxUid",
	"allowDirect":               "allow runs that ask for the direct backend (no isolation at all for the owner's; others' are host exec, under exec.tenantHostPolicy)",
	"defaultImage":              "the container image of Docker sandboxes",
	"notifications":             "desktop notifications",
	"mcpSessionIdleMinutes":     "an MCP-over-HTTP session is closed after this many idle minutes",
	"mcpMaxSessions":            "how many MCP-over-HTTP sessions one token may hold at once",
	"lanListen":                 "IP:PORT of the LAN listener the desktop app and serve open at their start (TLS; agent and tenant tokens only); empty: none",
	"landlockListen":            "allow listen ports in landlock sandboxes (they bind in this machine's network)",
	"allowedSockets":            "host Unix sockets every sandbox may connect to (comma-separated absolute paths)",
	"mountAllow":                "host folders sandboxes may mount although the mount guard refuses them (comma-separated)",
	"readyIdleMinutes":          "a persistent sandbox stays ready (its next run started ahead) for this many minutes after its last run (0 to 1440; 0: none)",
	"dockerPoolSize":            "idle Docker containers kept ready per one-shot configuration (0 to 16; 0: none)",
	"engines":                   "the Docker engines on other machines sandboxes may be made on (senclaw engines add, rm)",
	"maxSandboxes":              "the most sandboxes the engine holds; more are refused",
	"concurrency":               "runs executing at once (default 4 per core); more wait in the queue",
	"queueLength":               "runs that may wait for a place (0: none wait); more are refused (429)",
	"maxBackgroundRuns":         "background runs and Space App servers at once (they never wait); more are refused",
	"maxRunsPerSandbox":         "runs of one sandbox at once, waiting and background ones included",
	"minFreeDiskMb":             "new runs are refused while the data dir has less free space than this, in MiB (0: never)",
	"nestedProjectDepth":        "levels below a folder a sandbox writes searched for projects whose agents' and git's files stay read-only (0 to 16; 0: the folder alone)",
	"nestedProjectLimit":        "projects kept so in one folder; past it a run is refused (1 to 4096)",
	"pinnedCAs":                 "CAs (PEM) the proxy verifies a looked-into host with instead of this machine's trust store, as JSON by HOST[:PORT]: a host with a private CA",
	"guard":                     "the shell guard: its groups (guard.GROUP) and what a match does in a sandbox (guard.sandbox)",
	"guard.pipeToInterpreter":   "shell guard: a download piped into an interpreter (curl … | sh)",
	"guard.forkBomb":            "shell guard: fork bombs",
	"guard.reverseShell":        "shell guard: reverse shells (/dev/tcp, nc -e, socat exec:)",
	"guard.decodeAndRun":        "shell guard: decoded text run as code (base64 -d | sh)",
	"guard.envDump":             "shell guard: environment dumps (env, printenv, /proc/*/environ)",
	"guard.protectedPaths":      "shell guard: the engine's data and config, other tenants' dirs",
	"guard.unreadable":          "shell guard: commands too deep or broken to read",
	"guard.sandbox":             "shell guard in a sandbox: warn, deny or off (on the host a match always refuses)",
	"exec":                      "host exec, the Agent shell and Scheduler scripts switches' off paths and the direct backend: exec.tenantHostPolicy, exec.hostTimeoutSeconds, exec.credentialedCommands",
	"exec.hostTimeoutSeconds":   "host exec's timeout when none is asked, and the most for all but the owner, in s (1 to 86400; the whole process tree is killed)",
	"exec.credentialedCommands": "programs refused on the host under exec.tenantHostPolicy=deny for all but the owner, besides gh, gcloud, aws, az, kubectl, terraform, psql, docker (comma-separated names)",
	"exec.tenantHostPolicy":     "host exec for all but the owner: deny, warn (runs confined by Landlock, recorded) or allow (confined)",
	"exec.envOverride":          "read-only: the tenant host policy SENCLAW_EXEC_TENANT_HOST_POLICY set, over exec.tenantHostPolicy",
}

// settings executes `senclaw settings` (show) and `senclaw settings set
// KEY=VALUE...`: every setting, with what it means; a change is validated
// by the engine, which names the field it refuses.
func settings(ctx context.Context, c *client.Client, set []string, jsonOut bool, io streams) int {
	var cur map[string]json.RawMessage
	if err := c.Do(ctx, "GET", "/settings", nil, nil, &cur); err != nil {
		say(io.Err, "senclaw settings: %v", err)
		return exitFor(err)
	}
	if len(set) > 0 {
		patch, err := settingsPatch(cur, set)
		if err != nil {
			say(io.Err, "senclaw settings set: %v", err)
			return ExitUsage
		}
		if err := c.Do(ctx, "PUT", "/settings", nil, patch, &cur); err != nil {
			say(io.Err, "senclaw settings set: %v (nothing was changed)", err)
			return exitFor(err)
		}
	}
	if jsonOut {
		writeJSON(io.Out, cur)
		return 0
	}
	tw := table(io)
	row(tw, "SETTING", "VALUE", "WHAT IT IS")
	flat := flatSettings(cur)
	for _, k := range sortedKeys(flat) {
		v := strings.TrimSpace(string(flat[k]))
		var str string
		if json.Unmarshal(flat[k], &str) == nil {
			v = str
		}
		row(tw, k, v, settingHelp[k])
	}
	tw.Flush()
	return 0
}

// flatSettings lists a setting that is an object (guard) by its fields,
// as KEY.FIELD, the way settings set names them.
func flatSettings(cur map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(cur))
	for k, v := range cur {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil || obj == nil {
			out[k] = v
			continue
		}
		for f, fv := range obj {
			out[k+"."+f] = fv
		}
	}
	return out
}

// settingsPatch turns KEY=VALUE words into the patch for PUT /settings:
// each value of the type the setting has now; KEY.FIELD changes one
// field of an object setting (guard.envDump=false), which the engine
// merges into the rest.
func settingsPatch(cur map[string]json.RawMessage, set []string) (map[string]any, error) {
	flat := flatSettings(cur)
	patch := map[string]any{}
	for _, kv := range set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: give KEY=VALUE, e.g. defaultMemoryMb=1024", kv)
		}
		old, known := flat[k]
		if !known {
			return nil, fmt.Errorf("%q is not a setting; the settings are %s", k, strings.Join(sortedKeys(flat), ", "))
		}
		val, err := settingValue(old, v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %v", k, v, err)
		}
		parent, field, nested := strings.Cut(k, ".")
		if !nested {
			patch[k] = val
			continue
		}
		obj, _ := patch[parent].(map[string]any)
		if obj == nil {
			obj = map[string]any{}
			patch[parent] = obj
		}
		obj[field] = val
	}
	return patch, nil
}

// settingValue parses text as a value of the same JSON type as old.
func settingValue(old json.RawMessage, text string) (any, error) {
	var probe any
	_ = json.Unmarshal(old, &probe)
	switch probe.(type) {
	case bool:
		switch strings.ToLower(text) {
		case "true", "on", "yes", "1":
			return true, nil
		case "false", "off", "no", "0":
			return false, nil
		}
		return nil, fmt.Errorf("give true or false")
	case float64:
		n, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("give a number")
		}
		return n, nil
	case map[string]any, nil:
		// An object setting (pinnedCAs) is given as JSON; it may be
		// null while unset.
		if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") {
			var m map[string]any
			if err := json.Unmarshal([]byte(t), &m); err != nil {
				return nil, fmt.Errorf("give a JSON object: %v", err)
			}
			return m, nil
		}
	case []any:
		list := []string{}
		for _, p := range strings.Split(text, ",") {
			if p = strings.TrimSpace(p); p != "" {
				list = append(list, p)
			}
		}
		return list, nil
	}
	return text, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
