package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// settingsArgs are the settings an agent may change with sbx_settings.
// The schema is built from it; the arguments themselves are decoded by
// parseSettingsPatch, which refuses everything else by name.
type settingsArgs struct {
	DefaultFsMode    *string  `json:"defaultFsMode,omitempty" jsonschema:"fs mode of new sandboxes and one-shot runs: strict, allowlist or open"`
	Allowlist        []string `json:"allowlist,omitempty" jsonschema:"absolute host folders the allowlist fs mode may read; replaces the whole list ([] clears it); secret folders are refused"`
	DefaultNetwork   *bool    `json:"defaultNetwork,omitempty" jsonschema:"network on for new sandboxes and one-shot runs that do not say"`
	DefaultCPUs      *float64 `json:"defaultCpus,omitempty" jsonschema:"CPU limit of new sandboxes in cores, 0.1 to 32"`
	DefaultMemoryMB  *int     `json:"defaultMemoryMb,omitempty" jsonschema:"memory limit of new sandboxes in MB, 64 to 65536"`
	DefaultPids      *int     `json:"defaultPids,omitempty" jsonschema:"process count limit of new sandboxes, 16 to 8192"`
	DefaultTimeoutMs *int     `json:"defaultTimeoutMs,omitempty" jsonschema:"default run timeout of new sandboxes in milliseconds, 1000 to 86400000 (24 h)"`
	DefaultDiskMB    *int     `json:"defaultDiskMb,omitempty" jsonschema:"folder quota of new sandboxes in MB, 16 to 1048576"`
	DefaultImage     *string  `json:"defaultImage,omitempty" jsonschema:"container image of new docker sandboxes"`
}

// settableSettings are the exact argument names sbx_settings accepts.
var settableSettings = []string{"defaultFsMode", "allowlist", "defaultNetwork", "defaultCpus", "defaultMemoryMb", "defaultPids", "defaultTimeoutMs", "defaultDiskMb", "defaultImage"}

// protectedSettings switch isolation itself off or weaken it; only a
// person (dashboard, CLI) may change them, never the agent being isolated.
var protectedSettings = map[string]string{
	"allowdirect":    "allowDirect",
	"landlocklisten": "landlockListen",
	"sandboxuid":     "sandboxUid",
	"sandboxgid":     "sandboxGid",
	// Which uids sandboxes run as: a range over a host service's uid
	// would let a sandbox act as it.
	"sandboxuidrange": "sandboxUidRange",
	// mountAllow widens the mount guard: the agent must not give itself
	// a system folder to write.
	"mountallow": "mountAllow",
	// Host sockets opened to every sandbox (the Unix socket guard).
	"allowedsockets": "allowedSockets",
	// Fewer levels or projects leave projects in a writable folder
	// unprotected: what agents and git run code from.
	"nestedprojectdepth": "nestedProjectDepth",
	"nestedprojectlimit": "nestedProjectLimit",
	// The CA the proxy verifies a host with: an agent must not choose
	// whom the proxy believes a host is.
	"pinnedcas": "pinnedCAs",
	// The Docker engines on other machines the engine drives with the
	// owner's TLS material: an agent must not send sandboxes, or the
	// owner's credentials, to a daemon it chose.
	"engines": "engines",
	// The shell guard refuses an agent's commands on the host: the agent
	// must not switch off the groups that refuse it.
	"guard": "guard",
	// The tenant host policy lets agents and tenants run on the host
	// with nothing in the way: an agent must not choose it.
	"exec": "exec",
}

// parseSettingsPatch decodes the arguments of sbx_settings into the patch
// for PUT /settings, or nil when there is nothing to change (a read).
//
// The patch is rebuilt from the typed fields with their canonical names,
// never forwarded as given: the engine matches JSON names without regard
// to case, so a forwarded "AllowDirect" would reach a protected setting.
// For the same reason protected names are refused in any spelling, and any
// name that is not exactly a settable one is refused (fail closed).
func parseSettingsPatch(raw []byte) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, errors.New("the arguments of sbx_settings must be a JSON object of settings")
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if canonical, ok := protectedSettings[strings.ToLower(name)]; ok {
			return nil, fmt.Errorf("%s cannot be changed with sbx_settings: it decides whether and as whom code runs isolated, or what it reaches outside its sandbox, and an agent must not switch off its own isolation; a person can change it in the SenClaw dashboard or with the senclaw CLI", canonical)
		}
		if !slices.Contains(settableSettings, name) {
			return nil, fmt.Errorf("unknown setting %q: sbx_settings can change %s", name, strings.Join(settableSettings, ", "))
		}
	}
	if len(fields) == 0 {
		return nil, nil
	}
	var in settingsArgs
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, fmt.Errorf("%s: expected %s, got %s", ute.Field, ute.Type, ute.Value)
		}
		return nil, fmt.Errorf("the settings are not valid: %v", err)
	}
	patch := map[string]any{}
	set := func(name string, given bool, v any) {
		if given {
			patch[name] = v
		}
	}
	set("defaultFsMode", in.DefaultFsMode != nil, in.DefaultFsMode)
	set("allowlist", in.Allowlist != nil, in.Allowlist)
	set("defaultNetwork", in.DefaultNetwork != nil, in.DefaultNetwork)
	set("defaultCpus", in.DefaultCPUs != nil, in.DefaultCPUs)
	set("defaultMemoryMb", in.DefaultMemoryMB != nil, in.DefaultMemoryMB)
	set("defaultPids", in.DefaultPids != nil, in.DefaultPids)
	set("defaultTimeoutMs", in.DefaultTimeoutMs != nil, in.DefaultTimeoutMs)
	set("defaultDiskMb", in.DefaultDiskMB != nil, in.DefaultDiskMB)
	set("defaultImage", in.DefaultImage != nil, in.DefaultImage)
	if len(patch) == 0 {
		// Every field was null: nothing to change.
		return nil, nil
	}
	return patch, nil
}
