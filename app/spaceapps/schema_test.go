package spaceapps

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// schemaNode is the part of a JSON schema the test reads.
type schemaNode struct {
	Type                 string                 `json:"type"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties *bool                  `json:"additionalProperties"`
	Required             []string               `json:"required"`
	Items                *schemaNode            `json:"items"`
	Enum                 []string               `json:"enum"`
	Default              any                    `json:"default"`
}

func loadSchema(t *testing.T) *schemaNode {
	t.Helper()
	data, err := os.ReadFile("senclaw-app.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var n schemaNode
	if err := json.Unmarshal(data, &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

// TestSchemaMatchesTheGoTypes walks Manifest and the shipped schema side
// by side: the same fields at every level, the same JSON types, no
// additional properties anywhere.
func TestSchemaMatchesTheGoTypes(t *testing.T) {
	t.Parallel()
	var walk func(path string, typ reflect.Type, n *schemaNode)
	walk = func(path string, typ reflect.Type, n *schemaNode) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		want := map[reflect.Kind]string{reflect.String: "string", reflect.Int: "integer", reflect.Bool: "boolean", reflect.Slice: "array", reflect.Struct: "object"}[typ.Kind()]
		if n.Type != want {
			t.Errorf("%s: schema type %q, Go type %s (%q)", path, n.Type, typ, want)
			return
		}
		switch typ.Kind() {
		case reflect.Slice:
			if n.Items == nil {
				t.Errorf("%s: an array without items", path)
				return
			}
			walk(path+"[]", typ.Elem(), n.Items)
		case reflect.Struct:
			if n.AdditionalProperties == nil || *n.AdditionalProperties {
				t.Errorf("%s: additionalProperties must be false (unknown fields are refused)", path)
			}
			fields := jsonFields(typ)
			goNames, schemaNames := fieldNames(fields), []string{}
			for k := range n.Properties {
				schemaNames = append(schemaNames, k)
			}
			sort.Strings(schemaNames)
			if !slices.Equal(goNames, schemaNames) {
				t.Errorf("%s: Go fields %v, schema properties %v", path, goNames, schemaNames)
				return
			}
			for name, i := range fields {
				walk(join(path, name), typ.Field(i).Type, n.Properties[name])
			}
			for _, r := range n.Required {
				if _, ok := fields[r]; !ok {
					t.Errorf("%s: required %q is not a field", path, r)
				}
			}
		}
	}
	walk("manifest", reflect.TypeOf(Manifest{}), loadSchema(t))
}

const minimal = `{"id": "a", "name": "A", "runtime": {"start": "true"}}`

// TestSchemaRequiredEnumsAndDefaultsAreTheParser's: what the schema
// requires the parser refuses to go without, its enums are exactly what
// the parser accepts, and its defaults are what the parser fills in.
func TestSchemaRequiredEnumsAndDefaultsAreTheParsers(t *testing.T) {
	t.Parallel()
	schema := loadSchema(t)
	set := func(doc, path string, v any) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(doc), &m)
		parts := strings.Split(path, ".")
		cur := m
		for _, p := range parts[:len(parts)-1] {
			next, ok := cur[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
		if v == nil {
			delete(cur, parts[len(parts)-1])
		} else {
			cur[parts[len(parts)-1]] = v
		}
		out, _ := json.Marshal(m)
		return string(out)
	}
	for _, path := range []string{"id", "name", "runtime", "runtime.start"} {
		if _, err := ParseManifest([]byte(set(minimal, path, nil))); err == nil {
			t.Errorf("a manifest without %s was accepted", path)
		}
	}
	if got := schema.Required; !slices.Equal(got, []string{"id", "name", "runtime"}) {
		t.Errorf("schema requires %v", got)
	}
	if got := schema.Properties["runtime"].Required; !slices.Equal(got, []string{"start"}) {
		t.Errorf("schema requires runtime %v", got)
	}
	enums := map[string][]string{
		"runtime.restart":  schema.Properties["runtime"].Properties["restart"].Enum,
		"sandbox.readMode": schema.Properties["sandbox"].Properties["readMode"].Enum,
		"sandbox.network":  schema.Properties["sandbox"].Properties["network"].Enum,
	}
	for path, values := range enums {
		if len(values) == 0 {
			t.Errorf("%s has no enum in the schema", path)
		}
		for _, v := range values {
			if _, err := ParseManifest([]byte(set(minimal, path, v))); err != nil {
				t.Errorf("%s %q is in the schema's enum and refused: %v", path, v, err)
			}
		}
		if _, err := ParseManifest([]byte(set(minimal, path, "bogus"))); err == nil {
			t.Errorf("%s \"bogus\" was accepted", path)
		}
	}
	m, err := ParseManifest([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	rt := schema.Properties["runtime"].Properties
	filled := map[string]any{"healthPath": m.Runtime.HealthPath, "startTimeoutSec": float64(m.Runtime.StartTimeoutSec), "stopTimeoutSec": float64(m.Runtime.StopTimeoutSec), "restart": m.Runtime.Restart, "port": float64(m.Runtime.Port), "autostart": m.Runtime.Autostart}
	for k, v := range filled {
		if rt[k].Default != v {
			t.Errorf("runtime.%s: schema default %v, the parser fills in %v", k, rt[k].Default, v)
		}
	}
	d := defaultSettings()
	sb := schema.Properties["sandbox"].Properties
	for k, v := range map[string]any{"readMode": d.ReadMode, "network": d.Network, "backend": d.Backend, "enabled": d.Enabled, "daemonApi": d.DaemonAPI} {
		if sb[k].Default != v {
			t.Errorf("sandbox.%s: schema default %v, the default setting is %v", k, sb[k].Default, v)
		}
	}
}

// TestTheExampleManifestIsValid: examples/space-apps parses as shipped.
func TestTheExampleManifestIsValid(t *testing.T) {
	t.Parallel()
	m, _, err := ReadManifest("../../examples/space-apps")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "notes" || m.Runtime.HealthPath != "/health" || m.Sandbox == nil || !*m.Sandbox.Enabled {
		t.Fatalf("example manifest %+v", m)
	}
}
