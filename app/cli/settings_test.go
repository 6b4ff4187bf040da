package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/apitype"
)

// TestEverySettingIsExplained: `senclaw settings` says what each of the
// engine's settings is, and each field of one that is an object (guard),
// which it lists as KEY.FIELD.
func TestEverySettingIsExplained(t *testing.T) {
	t.Parallel()
	st := reflect.TypeOf(apitype.Settings{})
	for i := 0; i < st.NumField(); i++ {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if settingHelp[name] == "" {
			t.Errorf("senclaw settings does not say what %s is (settingHelp)", name)
		}
		if ft := st.Field(i).Type; ft.Kind() == reflect.Struct {
			for j := 0; j < ft.NumField(); j++ {
				field, _, _ := strings.Cut(ft.Field(j).Tag.Get("json"), ",")
				if settingHelp[name+"."+field] == "" {
					t.Errorf("senclaw settings does not say what %s.%s is (settingHelp)", name, field)
				}
			}
		}
	}
}

// An object setting is shown and set by its fields: guard.envDump=false
// patches guard's envDump alone (the engine merges it into the rest).
func TestSettingsPatchOfAnObjectsField(t *testing.T) {
	t.Parallel()
	cur := map[string]json.RawMessage{
		"defaultPids": json.RawMessage(`256`),
		"guard":       json.RawMessage(`{"envDump":true,"forkBomb":true,"sandbox":"warn"}`),
	}
	flat := flatSettings(cur)
	if _, ok := flat["guard.envDump"]; !ok || flat["guard"] != nil {
		t.Fatalf("flattened %v", flat)
	}
	patch, err := settingsPatch(cur, []string{"guard.envDump=off", "guard.sandbox=deny", "defaultPids=128"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(patch)
	if want := `{"defaultPids":128,"guard":{"envDump":false,"sandbox":"deny"}}`; string(got) != want {
		t.Fatalf("patch %s, want %s", got, want)
	}
	for _, bad := range []string{"guard.nope=1", "guard.envDump=maybe", "guard=x", "nope=1"} {
		if _, err := settingsPatch(cur, []string{bad}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestAnObjectSettingIsGivenAsJSON: pinnedCAs (null while unset) is set
// with a JSON object, and a broken one is refused, not sent as text.
func TestAnObjectSettingIsGivenAsJSON(t *testing.T) {
	t.Parallel()
	for _, old := range []string{"null", "{}"} {
		v, err := settingValue([]byte(old), `{"git.example:443": "PEM"}`)
		if err != nil {
			t.Fatalf("from %s: %v", old, err)
		}
		if m, ok := v.(map[string]any); !ok || m["git.example:443"] != "PEM" {
			t.Errorf("from %s: got %#v, want the object", old, v)
		}
		if _, err := settingValue([]byte(old), `{"git.example:443": `); err == nil {
			t.Errorf("from %s: a broken object was taken", old)
		}
	}
}
