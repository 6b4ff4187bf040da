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
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/autostart"
	"github.com/senclaw/sandbox/app/guard"
	"github.com/senclaw/sandbox/app/spaceapps"
	"github.com/senclaw/sandbox/backends"
)

// schemaTypes are the schemas of openapi.json that document a Go type
// the server encodes (or decodes, for request bodies).
var schemaTypes = map[string]any{
	"Status": apitype.Status{}, "Capabilities": apitype.Capabilities{}, "Capability": backends.Capability{}, "FsModeInfo": apitype.FsModeInfo{},
	"EngineInfo": apitype.EngineInfo{}, "EngineSettings": apitype.EngineSettings{},
	"Sandbox": apitype.Sandbox{}, "SandboxPage": app.SandboxPage{}, "SandboxReply": apitype.SandboxReply{}, "Mount": backends.Mount{}, "PortRules": backends.PortRules{},
	"SandboxConfig": apitype.SandboxConfig{}, "RunRecord": apitype.RunRecord{}, "RunReply": apitype.RunReply{}, "RunPage": app.RunPage{}, "RunLog": apitype.RunLog{},
	"FileEntry": apitype.FileEntry{}, "FileContent": apitype.FileContent{}, "Stats": apitype.Stats{}, "MountResult": apitype.MountResult{}, "PortsResult": apitype.PortsResult{},
	"FsModeReply": apitype.FsModeReply{}, "EventsResult": app.EventsResult{}, "StoredEvent": app.StoredEvent{}, "CacheInfo": apitype.CacheInfo{}, "Settings": apitype.Settings{}, "ExecPolicy": apitype.ExecPolicy{},
	"Integration": agentshell.Integration{}, "Autostart": autostart.State{}, "AgentShellBody": agentShellBody{}, "FileBody": fileBody{},
	"Schedule": apitype.Schedule{}, "ScheduleSpec": apitype.ScheduleSpec{}, "Firing": apitype.Firing{}, "ScheduleReply": apitype.ScheduleReply{},
	"AppList": apitype.AppList{}, "AppView": apitype.AppView{}, "AppHealth": apitype.AppHealth{}, "AppDetail": spaceapps.AppDetail{},
	"AppSandboxSummary": apitype.AppSandboxSummary{}, "AppOverview": apitype.AppOverview{},
	"AppSandboxSettings": apitype.AppSandboxSettings{}, "SandboxPatch": apitype.AppSandboxPatch{}, "AppFolder": apitype.AppFolder{},
	"RegisterRequest": apitype.AppRegisterRequest{}, "RegisterReply": apitype.AppRegisterReply{}, "StartReply": apitype.AppStartReply{},
	"AppRuntime": apitype.AppRuntime{}, "HealthPoint": apitype.AppHealthPoint{}, "ProxyCounts": apitype.AppProxyCounts{},
	"LaunchView": apitype.AppLaunch{}, "LogChunk": apitype.AppLogChunk{}, "AppSandboxView": apitype.AppSandboxView{},
	"AppSandboxReply": apitype.AppSandboxReply{}, "AppIsolation": apitype.AppIsolation{},
	"Socket": apitype.Socket{}, "PortHolder": apitype.PortHolder{}, "StatsPoint": apitype.StatsPoint{}, "ProcessInfo": apitype.ProcessInfo{},
	"GuardReport": guard.Report{}, "GuardFinding": guard.Finding{}, "GuardSettings": apitype.GuardSettings{}, "GuardCheckBody": guardCheckBody{},
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
