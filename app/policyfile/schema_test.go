package policyfile

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

type schemaNode struct {
	Type                 string                 `json:"type"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties *bool                  `json:"additionalProperties"`
	Items                *schemaNode            `json:"items"`
	Enum                 []string               `json:"enum"`
}

// TestSchemaMatchesTheGoTypes walks File and the published schema side by
// side: the same keys at every level, the same JSON types, no additional
// properties anywhere.
func TestSchemaMatchesTheGoTypes(t *testing.T) {
	t.Parallel()
	var root schemaNode
	if err := json.Unmarshal(Schema(), &root); err != nil {
		t.Fatal(err)
	}
	kinds := map[reflect.Kind]string{reflect.String: "string", reflect.Int: "integer", reflect.Float64: "number", reflect.Bool: "boolean", reflect.Slice: "array", reflect.Struct: "object"}
	var walk func(path string, typ reflect.Type, n *schemaNode)
	walk = func(path string, typ reflect.Type, n *schemaNode) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if n == nil {
			t.Errorf("%s: not in the schema", path)
			return
		}
		if want := kinds[typ.Kind()]; n.Type != want {
			t.Errorf("%s: schema type %q, Go type %s (%q)", path, n.Type, typ, want)
			return
		}
		switch typ.Kind() {
		case reflect.Slice:
			walk(path+"[]", typ.Elem(), n.Items)
		case reflect.Struct:
			if n.AdditionalProperties == nil || *n.AdditionalProperties {
				t.Errorf("%s: additionalProperties must be false (unknown keys are refused)", path)
			}
			var goNames, schemaNames []string
			fields := map[string]int{}
			for i := range typ.NumField() {
				name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
				if name != "" && name != "-" {
					goNames = append(goNames, name)
					fields[name] = i
				}
			}
			for k := range n.Properties {
				schemaNames = append(schemaNames, k)
			}
			sort.Strings(goNames)
			sort.Strings(schemaNames)
			if !slices.Equal(goNames, schemaNames) {
				t.Errorf("%s: Go keys %v, schema properties %v", path, goNames, schemaNames)
				return
			}
			for name, i := range fields {
				walk(path+"."+name, typ.Field(i).Type, n.Properties[name])
			}
		}
	}
	walk("policy", reflect.TypeOf(File{}), &root)
	for _, path := range [][]string{{"fsMode"}, {"agentShell", "fsMode"}} {
		n := &root
		for _, p := range path {
			n = n.Properties[p]
		}
		if !slices.Equal(n.Enum, []string{"strict", "allowlist", "open"}) {
			t.Errorf("%v: enum %v", path, n.Enum)
		}
		for _, v := range n.Enum {
			if _, err := Parse("p.json", []byte(`{"fsMode":"`+v+`"}`)); err != nil {
				t.Errorf("%q is in the enum and refused: %v", v, err)
			}
		}
	}
}
