package client

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/senclaw/sandbox/app/apitype"
)

// TestRunOnceBodyIsOneObject: the run and the sandbox config go as one
// object; the run's timeout and env win over the sandbox's when it sets
// them, and the sandbox's stay when it does not.
func TestRunOnceBodyIsOneObject(t *testing.T) {
	five, name := 5000, "box"
	cases := []struct {
		name string
		body RunOnceBody
		want map[string]any
	}{
		{"run only", RunOnceBody{RunBody: RunBody{Argv: []string{"true"}}},
			map[string]any{"argv": []any{"true"}}},
		{"sandbox's timeout and env stay", RunOnceBody{RunBody: RunBody{Command: "ls"}, Sandbox: apitype.SandboxConfig{Name: &name, TimeoutMs: &five, Env: map[string]string{"A": "1"}}},
			map[string]any{"command": "ls", "name": "box", "timeoutMs": 5000.0, "env": map[string]any{"A": "1"}}},
		{"the run's win", RunOnceBody{RunBody: RunBody{Command: "ls", TimeoutMs: 7000, Env: map[string]string{"B": "2"}, Background: true}, Sandbox: apitype.SandboxConfig{TimeoutMs: &five, Env: map[string]string{"A": "1"}}},
			map[string]any{"command": "ls", "timeoutMs": 7000.0, "env": map[string]any{"B": "2"}, "background": true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			// The sandbox config's zero fields that it always sends.
			for k, v := range got {
				if _, ok := tc.want[k]; !ok && !reflect.ValueOf(v).IsZero() {
					t.Errorf("%s: unexpected %s=%v in %s", tc.name, k, v, data)
				}
			}
			for k, v := range tc.want {
				if !reflect.DeepEqual(got[k], v) {
					t.Errorf("%s=%v, want %v (%s)", k, got[k], v, data)
				}
			}
		})
	}
}
