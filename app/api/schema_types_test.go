package api

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/agentshell"
	"github.com/senclaw/sandbox/app/autostart"
	"github.com/senclaw/sandbox/app/scheduler"
	"github.com/senclaw/sandbox/app/spaceapps"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/monitor"
)

// schemaTypes are the schemas of openapi.json that document a Go type
// the server encodes (or decodes, for request bodies).
var schemaTypes = map[string]any{
	"Status": Status{}, "Capabilities": app.Capabilities{}, "Capability": backends.Capability{}, "FsModeInfo": app.FsModeInfo{},
	"Sandbox": app.Sandbox{}, "SandboxPage": app.SandboxPage{}, "SandboxReply": SandboxReply{}, "Mount": backends.Mount{}, "PortRules": backends.PortRules{},
	"SandboxConfig": app.SandboxConfig{}, "RunRecord": app.RunRecord{}, "RunReply": RunReply{}, "RunPage": app.RunPage{}, "RunLog": app.RunLog{},
	"FileEntry": app.FileEntry{}, "FileContent": app.FileContent{}, "Stats": app.Stats{}, "MountResult": app.MountResult{}, "PortsResult": app.PortsResult{},
	"FsModeReply": FsModeReply{}, "EventsResult": app.EventsResult{}, "StoredEvent": app.StoredEvent{}, "Settings": app.Settings{}, "ExecPolicy": app.ExecPolicy{},
	"Integration": agentshell.Integration{}, "Autostart": autostart.State{}, "AgentShellBody": agentShellBody{}, "FileBody": fileBody{},
	"Schedule": scheduler.View{}, "ScheduleSpec": scheduler.Spec{}, "Firing": scheduler.Firing{}, "ScheduleReply": ScheduleReply{},
	"AppList": AppList{}, "AppView": spaceapps.AppView{}, "AppHealth": spaceapps.HealthView{}, "AppDetail": spaceapps.AppDetail{},
	"AppSandboxSummary": spaceapps.SandboxSummary{}, "AppOverview": spaceapps.Overview{},
	"AppSandboxSettings": spaceapps.SandboxSettings{}, "SandboxPatch": spaceapps.SandboxPatch{}, "AppFolder": spaceapps.Folder{},
	"RegisterRequest": spaceapps.RegisterRequest{}, "RegisterReply": spaceapps.RegisterReply{}, "StartReply": spaceapps.StartReply{},
	"AppRuntime": spaceapps.Runtime{}, "HealthPoint": spaceapps.HealthPoint{}, "ProxyCounts": spaceapps.ProxyCounts{},
	"LaunchView": spaceapps.LaunchView{}, "LogChunk": spaceapps.LogChunk{}, "AppSandboxView": spaceapps.SandboxView{},
	"AppSandboxReply": spaceapps.SandboxReply{}, "AppIsolation": spaceapps.IsolationView{},
	"Socket": monitor.Socket{}, "PortHolder": monitor.Holder{}, "StatsPoint": app.StatsPoint{}, "ProcessInfo": app.ProcessInfo{},
	"Error": errorBody{},
}

// TestSchemasDocumentTheGoTypes: each schema of openapi.json that
// documents a Go type lists exactly its JSON fields, and requires those
// the server always sends (no omitempty), so the dashboard and clients
// can be written from the document.
func TestSchemasDocumentTheGoTypes(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	dump := os.Getenv("SENCLAW_DUMP_SCHEMAS") != ""
	for name, v := range schemaTypes {
		fields, required := jsonFields(reflect.TypeOf(v))
		if dump {
			t.Logf("%s: %q", name, required)
			t.Logf("ALL %s: %q", name, fields)
		}
		schema, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("openapi.json has no schema %s", name)
			continue
		}
		var documented []string
		for k := range schema.Properties {
			documented = append(documented, k)
		}
		sort.Strings(documented)
		if !slices.Equal(fields, documented) {
			t.Errorf("schema %s documents %v; the Go type has %v", name, documented, fields)
		}
		req := slices.Clone(schema.Required)
		sort.Strings(req)
		if !slices.Equal(required, req) && !strings.HasSuffix(name, "Body") && !requestOnly[name] {
			t.Errorf("schema %s requires %v; the Go type always sends %v", name, req, required)
		}
	}
}

// requestOnly are schemas of request bodies: what they require is what
// the handler needs, not what a Go encoder always writes.
var requestOnly = map[string]bool{"SandboxConfig": true, "ScheduleSpec": true, "SandboxPatch": true, "RegisterRequest": true}

// jsonFields lists a struct's JSON field names (embedded structs inline),
// and those encoding/json always writes (no omitempty or omitzero).
func jsonFields(t reflect.Type) (all, always []string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			a, w := jsonFields(f.Type)
			all, always = append(all, a...), append(always, w...)
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			always = append(always, name)
		}
	}
	sort.Strings(all)
	sort.Strings(always)
	return all, always
}
