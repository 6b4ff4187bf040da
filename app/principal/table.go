package principal

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// Route is one REST operation's row of the table.
type Route struct {
	// Scope is what the operation needs.
	Scope Scope `json:"scope"`
	// Tool is the sbx_* tool (or operation group) a tool policy names it
	// by; empty for the routes every holder of the scope may use.
	Tool string `json:"tool,omitempty"`
	// App is true for a Space App's own routes, which its token reaches
	// for that app only.
	App bool `json:"app,omitempty"`
}

// table is table.json decoded.
type table struct {
	Routes map[string]Route    `json:"routes"`
	Tools  map[string]Scope    `json:"tools"`
	Groups map[string]string   `json:"groups"`
	names  []string            // every name a tool policy may hold, sorted
	byTool map[string][]string // the routes of each tool or group
}

//go:embed table.json
var tableJSON []byte

// loadTable decodes the table once, on first use. A table that does not
// decode, or names a scope or tool that does not exist, is a bug that
// panics at the first request (and in the tests): never a silent allow.
var loadTable = sync.OnceValue(func() *table {
	var t table
	if err := json.Unmarshal(tableJSON, &t); err != nil {
		panic("principal: table.json: " + err.Error())
	}
	for key, r := range t.Routes {
		if !slices.Contains(Scopes, r.Scope) {
			panic(fmt.Sprintf("principal: table.json: route %q has the unknown scope %q", key, r.Scope))
		}
		if _, ok := t.Tools[r.Tool]; r.Tool != "" && !ok && t.Groups[r.Tool] == "" {
			panic(fmt.Sprintf("principal: table.json: route %q names the unknown tool %q", key, r.Tool))
		}
	}
	for tool, s := range t.Tools {
		if !slices.Contains(Scopes, s) {
			panic(fmt.Sprintf("principal: table.json: tool %q has the unknown scope %q", tool, s))
		}
		t.names = append(t.names, tool)
	}
	for g := range t.Groups {
		t.names = append(t.names, g)
	}
	sort.Strings(t.names)
	t.byTool = map[string][]string{}
	for key, r := range t.Routes {
		if r.Tool != "" {
			t.byTool[r.Tool] = append(t.byTool[r.Tool], key)
		}
	}
	return &t
})

// Lookup returns the row of the route pattern ("GET /api/sandbox/runs",
// as the server registers it). An unknown pattern is not found: the
// server refuses to register a route the table does not name.
func Lookup(pattern string) (Route, bool) {
	r, ok := loadTable().Routes[pattern]
	return r, ok
}

// Patterns lists every route of the table, sorted.
func Patterns() []string {
	t := loadTable()
	out := make([]string, 0, len(t.Routes))
	for k := range t.Routes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ToolScope returns the scope an MCP tool needs, and whether the tool is
// in the table.
func ToolScope(tool string) (Scope, bool) {
	s, ok := loadTable().Tools[tool]
	return s, ok
}

// ToolNames lists every name a tool policy may hold: the sbx_* tools and
// the REST operation groups (agent_shell, schedules, space_apps), sorted.
func ToolNames() []string { return slices.Clone(loadTable().names) }

// CheckTools validates a tool policy: every name must be a tool or a
// group. It returns the policy sorted, without duplicates.
func CheckTools(tools []string) ([]string, error) {
	t := loadTable()
	out := make([]string, 0, len(tools))
	for _, name := range tools {
		if !slices.Contains(t.names, name) {
			return nil, fmt.Errorf("%q is not a tool or an operation group: use %v", name, t.names)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// DefaultTenantTools is the tool policy of a new tenant that is not told
// otherwise: run code, read its runs, see what the machine isolates with,
// read what its runs did.
var DefaultTenantTools = []string{"sbx_capabilities", "sbx_events", "sbx_run", "sbx_runs"}

// Allow decides a request for route r by p: nil, or a *DeniedError
// naming the scope or the tool policy. Apps are decided by the caller,
// which knows the app the path names (App routes).
func Allow(p Principal, r Route) error {
	if !p.Holds(r.Scope) && !(p.Kind == App && r.App) {
		return &DeniedError{Principal: p, Scope: r.Scope}
	}
	if !p.AllowsTool(r.Tool) {
		return &DeniedError{Principal: p, Tool: r.Tool}
	}
	return nil
}

// DefaultTenantQuota is a new tenant's quota when it is not told
// otherwise.
var DefaultTenantQuota = Quota{Sandboxes: 20, Runs: 4, DiskMB: 4096}
