package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/app/client"
)

// settingHelp says what each setting is, in the words the dashboard uses.
// A setting the engine has and this table lacks is still shown and set.
var settingHelp = map[string]string{
	"defaultFsMode":         "what new sandboxes may read: strict, allowlist or open",
	"allowlist":             "paths allowlist-mode sandboxes may read (comma-separated absolute paths)",
	"defaultNetwork":        "whether new sandboxes may use the network",
	"defaultCpus":           "CPU limit of new sandboxes, in cores (0.1 to 32)",
	"defaultMemoryMb":       "memory limit of new sandboxes, in MB (64 to 65536)",
	"defaultPids":           "process limit of new sandboxes (16 to 8192)",
	"defaultTimeoutMs":      "timeout of new sandboxes' runs, in ms (1000 to 600000)",
	"defaultDiskMb":         "workspace quota of new sandboxes, in MB",
	"sandboxUid":            "the unprivileged user sandboxed code runs as when the engine is root",
	"sandboxGid":            "the group of that user",
	"allowDirect":           "allow runs that ask for the direct backend (no isolation at all)",
	"defaultImage":          "the container image of Docker sandboxes",
	"notifications":         "desktop notifications",
	"mcpSessionIdleMinutes": "an MCP-over-HTTP session is closed after this many idle minutes",
	"mcpMaxSessions":        "how many MCP-over-HTTP sessions one token may hold at once",
	"landlockListen":        "allow listen ports in landlock sandboxes (they bind in this machine's network)",
	"allowedSockets":        "host Unix sockets every sandbox may connect to (comma-separated absolute paths)",
	"mountAllow":            "host folders sandboxes may mount although the mount guard refuses them (comma-separated)",
	"dockerPoolSize":        "idle Docker containers kept ready per one-shot configuration (0 to 16; 0: none)",
	"maxSandboxes":          "the most sandboxes the engine holds; more are refused",
	"concurrency":           "runs executing at once (default 4 per core); more wait in the queue",
	"queueLength":           "runs that may wait for a place (0: none wait); more are refused (429)",
	"maxBackgroundRuns":     "background runs and Space App servers at once (they never wait); more are refused",
	"maxRunsPerSandbox":     "runs of one sandbox at once, waiting and background ones included",
	"minFreeDiskMb":         "new runs are refused while the data dir has less free space than this, in MiB (0: never)",
}

// Settings executes `senclaw settings` (show) and `senclaw settings set
// KEY=VALUE...`: every setting, with what it means; a change is validated
// by the engine, which names the field it refuses.
func Settings(ctx context.Context, c *client.Client, set []string, jsonOut bool, io IO) int {
	var cur map[string]json.RawMessage
	if err := c.Do(ctx, "GET", "/settings", nil, nil, &cur); err != nil {
		say(io.Err, "senclaw settings: %v", err)
		return exitFor(err)
	}
	if len(set) > 0 {
		patch := map[string]any{}
		for _, kv := range set {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				say(io.Err, "senclaw settings set: %q: give KEY=VALUE, e.g. defaultMemoryMb=1024", kv)
				return ExitUsage
			}
			old, known := cur[k]
			if !known {
				say(io.Err, "senclaw settings set: %q is not a setting; the settings are %s", k, strings.Join(sortedKeys(cur), ", "))
				return ExitUsage
			}
			val, err := settingValue(old, v)
			if err != nil {
				say(io.Err, "senclaw settings set: %s=%q: %v", k, v, err)
				return ExitUsage
			}
			patch[k] = val
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
	for _, k := range sortedKeys(cur) {
		v := strings.TrimSpace(string(cur[k]))
		var str string
		if json.Unmarshal(cur[k], &str) == nil {
			v = str
		}
		row(tw, k, v, settingHelp[k])
	}
	tw.Flush()
	return 0
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
