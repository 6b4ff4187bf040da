package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/spaceapps"
	"github.com/senclaw/sandbox/monitor"
)

// TestSpaceAppSchemasHaveEveryField: each Space Apps schema of
// openapi.json lists exactly the JSON fields of the Go type it documents,
// so the dashboard can be written from the document.
func TestSpaceAppSchemasHaveEveryField(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	types := map[string]any{
		"AppList": AppList{}, "AppView": spaceapps.AppView{}, "AppHealth": spaceapps.HealthView{},
		"AppSandboxSummary": spaceapps.SandboxSummary{}, "AppOverview": spaceapps.Overview{},
		"AppSandboxSettings": spaceapps.SandboxSettings{}, "SandboxPatch": spaceapps.SandboxPatch{}, "AppFolder": spaceapps.Folder{},
		"RegisterRequest": spaceapps.RegisterRequest{}, "RegisterReply": spaceapps.RegisterReply{}, "StartReply": spaceapps.StartReply{},
		"AppRuntime": spaceapps.Runtime{}, "HealthPoint": spaceapps.HealthPoint{}, "ProxyCounts": spaceapps.ProxyCounts{},
		"LaunchView": spaceapps.LaunchView{}, "LogChunk": spaceapps.LogChunk{}, "AppSandboxView": spaceapps.SandboxView{},
		"AppSandboxReply": spaceapps.SandboxReply{}, "AppIsolation": spaceapps.IsolationView{},
		"Socket": monitor.Socket{}, "PortHolder": monitor.Holder{}, "StatsPoint": app.StatsPoint{}, "ProcessInfo": app.ProcessInfo{},
	}
	for name, v := range types {
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
		if fields := jsonNames(reflect.TypeOf(v)); !slices.Equal(fields, documented) {
			t.Errorf("schema %s documents %v; the Go type has %v", name, documented, fields)
		}
	}
}

// jsonNames lists a struct's JSON field names (embedded structs inline).
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, jsonNames(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
