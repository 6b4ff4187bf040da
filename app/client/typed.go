package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/backends"
)

// Status reads GET /status.
func (c *Client) Status(ctx context.Context) (*apitype.Status, error) {
	var s apitype.Status
	return &s, c.Do(ctx, http.MethodGet, "/status", nil, nil, &s)
}

// Caps reads the capabilities, probing again when refresh.
func (c *Client) Caps(ctx context.Context, refresh bool) (*apitype.Capabilities, error) {
	var caps apitype.Capabilities
	q := url.Values{}
	if refresh {
		q.Set("refresh", "1")
	}
	return &caps, c.Do(ctx, http.MethodGet, "/caps", q, nil, &caps)
}

// Sandboxes lists the sandboxes.
func (c *Client) Sandboxes(ctx context.Context) ([]apitype.Sandbox, error) {
	var out struct {
		Sandboxes []apitype.Sandbox `json:"sandboxes"`
	}
	return out.Sandboxes, c.Do(ctx, http.MethodGet, "/sandboxes", nil, nil, &out)
}

// SandboxReply is the answer of create and update.
type SandboxReply = apitype.SandboxReply

// Create creates a sandbox.
func (c *Client) Create(ctx context.Context, cfg apitype.SandboxConfig) (*SandboxReply, error) {
	var out SandboxReply
	return &out, c.Do(ctx, http.MethodPost, "/sandboxes", nil, cfg, &out)
}

// Update changes a sandbox.
func (c *Client) Update(ctx context.Context, id string, cfg apitype.SandboxConfig) (*SandboxReply, error) {
	var out SandboxReply
	return &out, c.Do(ctx, http.MethodPatch, "/sandboxes/"+url.PathEscape(id), nil, cfg, &out)
}

// Sandbox reads one sandbox.
func (c *Client) Sandbox(ctx context.Context, id string) (*apitype.Sandbox, error) {
	var sb apitype.Sandbox
	return &sb, c.Do(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id), nil, nil, &sb)
}

// DeleteReply is the answer of Delete.
type DeleteReply struct {
	OK      bool   `json:"ok"`
	Deleted string `json:"deleted"`
	Files   string `json:"files"`
}

// Delete deletes a sandbox, with its files when purge.
func (c *Client) Delete(ctx context.Context, id string, purge bool) (*DeleteReply, error) {
	var out DeleteReply
	return &out, c.Do(ctx, http.MethodDelete, "/sandboxes/"+url.PathEscape(id), url.Values{"purge": {strconv.FormatBool(purge)}}, nil, &out)
}

// Stop stops a sandbox's processes.
func (c *Client) Stop(ctx context.Context, id string) (int, error) {
	var out struct {
		Stopped int `json:"stopped"`
	}
	return out.Stopped, c.Do(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/stop", nil, nil, &out)
}

// StopAll stops every sandbox.
func (c *Client) StopAll(ctx context.Context) (int, error) {
	var out struct {
		Stopped int `json:"stopped"`
	}
	return out.Stopped, c.Do(ctx, http.MethodPost, "/stop-all", nil, nil, &out)
}

// RunBody is the body of exec, run and run-once.
type RunBody struct {
	Command    string            `json:"command,omitempty"`
	Argv       []string          `json:"argv,omitempty"`
	Language   string            `json:"language,omitempty"`
	Code       string            `json:"code,omitempty"`
	TimeoutMs  int               `json:"timeoutMs,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Background bool              `json:"background,omitempty"`
	TTLMs      int               `json:"ttlMs,omitempty"`
	IdleTTLMs  int               `json:"idleTtlMs,omitempty"`
	Source     string            `json:"source,omitempty"`
	Trace      bool              `json:"trace,omitempty"`
}

// RunOnceBody is a run in a throwaway sandbox made from its config. The
// sandbox's timeout and env, when set, apply unless the run sets its own.
type RunOnceBody struct {
	RunBody
	Sandbox apitype.SandboxConfig
}

// MarshalJSON flattens the run and the sandbox config into one object, as
// POST /run-once takes it: both name timeoutMs and env, and the run's win
// when it sets them. Each part is marshalled once and the two objects
// joined, with no key in both.
func (b RunOnceBody) MarshalJSON() ([]byte, error) {
	cfg, run := b.Sandbox, b.RunBody
	if t := run.TimeoutMs; t != 0 {
		cfg.TimeoutMs = &t
	}
	if len(run.Env) > 0 {
		cfg.Env = run.Env
	}
	run.TimeoutMs, run.Env = 0, nil // omitted: the config carries them
	c, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	r, err := json.Marshal(run)
	if err != nil {
		return nil, err
	}
	switch {
	case len(r) <= 2: // {}
		return c, nil
	case len(c) <= 2:
		return r, nil
	}
	return append(append(c[:len(c)-1], ','), r[1:]...), nil
}

// Exec runs a command (or code, with path "/run") in sandbox id; onOutput,
// when set, receives the output as it comes.
func (c *Client) Exec(ctx context.Context, id string, body RunBody, onOutput func(stream, data string)) (*apitype.RunReply, error) {
	path := "/sandboxes/" + url.PathEscape(id) + "/exec"
	if body.Language != "" || body.Code != "" {
		path = "/sandboxes/" + url.PathEscape(id) + "/run"
	}
	return c.run(ctx, path, body, onOutput)
}

// RunOnce runs in a throwaway sandbox.
func (c *Client) RunOnce(ctx context.Context, body RunOnceBody, onOutput func(stream, data string)) (*apitype.RunReply, error) {
	return c.run(ctx, "/run-once", body, onOutput)
}

func (c *Client) run(ctx context.Context, path string, body any, onOutput func(stream, data string)) (*apitype.RunReply, error) {
	var out apitype.RunReply
	if onOutput != nil {
		return &out, c.Stream(ctx, path, body, onOutput, &out)
	}
	return &out, c.Do(ctx, http.MethodPost, path, nil, body, &out)
}

// InstallBody is the body of install: packages of a manager (pip, npm
// or apt) to install into a sandbox.
type InstallBody struct {
	Manager   string   `json:"manager"`
	Packages  []string `json:"packages"`
	TimeoutMs int      `json:"timeoutMs,omitempty"`
	Source    string   `json:"source,omitempty"`
}

// Install installs packages into a sandbox; onOutput, when set, receives
// the installer's output as it comes.
func (c *Client) Install(ctx context.Context, id string, req InstallBody, onOutput func(stream, data string)) (*apitype.RunReply, error) {
	return c.run(ctx, "/sandboxes/"+url.PathEscape(id)+"/install", req, onOutput)
}

// Runs lists recent runs.
func (c *Client) Runs(ctx context.Context, sandboxID string, limit int) ([]apitype.RunRecord, error) {
	var out struct {
		Runs []apitype.RunRecord `json:"runs"`
	}
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if sandboxID != "" {
		q.Set("sandboxId", sandboxID)
	}
	return out.Runs, c.Do(ctx, http.MethodGet, "/runs", q, nil, &out)
}

// Run reads one run record.
func (c *Client) Run(ctx context.Context, id string) (*apitype.RunRecord, error) {
	var r apitype.RunRecord
	return &r, c.Do(ctx, http.MethodGet, "/runs/"+url.PathEscape(id), nil, nil, &r)
}

// Policy reads the exec policy.
func (c *Client) Policy(ctx context.Context) (*apitype.ExecPolicy, error) {
	var p apitype.ExecPolicy
	return &p, c.Do(ctx, http.MethodGet, "/exec-policy", nil, nil, &p)
}

// SetPolicy saves the exec policy.
func (c *Client) SetPolicy(ctx context.Context, p apitype.ExecPolicy) (*apitype.ExecPolicy, error) {
	var out apitype.ExecPolicy
	return &out, c.Do(ctx, http.MethodPut, "/exec-policy", nil, p, &out)
}

// Settings reads the settings.
func (c *Client) Settings(ctx context.Context) (*apitype.Settings, error) {
	var s apitype.Settings
	return &s, c.Do(ctx, http.MethodGet, "/settings", nil, nil, &s)
}

// SetSettings merges the given fields into the settings.
func (c *Client) SetSettings(ctx context.Context, patch map[string]any) (*apitype.Settings, error) {
	var out apitype.Settings
	return &out, c.Do(ctx, http.MethodPut, "/settings", nil, patch, &out)
}

// Files lists a folder of a sandbox.
func (c *Client) Files(ctx context.Context, id, path string) ([]apitype.FileEntry, error) {
	var out struct {
		Entries []apitype.FileEntry `json:"entries"`
	}
	return out.Entries, c.Do(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id)+"/files", url.Values{"path": {path}}, nil, &out)
}

// ReadFile reads a file of a sandbox.
func (c *Client) ReadFile(ctx context.Context, id, path string, base64 bool) (*apitype.FileContent, error) {
	var out apitype.FileContent
	q := url.Values{"path": {path}}
	if base64 {
		q.Set("encoding", "base64")
	}
	return &out, c.Do(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id)+"/file", q, nil, &out)
}

// WriteFile writes a file of a sandbox.
func (c *Client) WriteFile(ctx context.Context, id, path, content, encoding string) (int64, error) {
	var out struct {
		Bytes int64 `json:"bytes"`
	}
	body := map[string]string{"path": path, "content": content, "encoding": encoding}
	return out.Bytes, c.Do(ctx, http.MethodPut, "/sandboxes/"+url.PathEscape(id)+"/file", nil, body, &out)
}

// AddMount mounts a host folder into a sandbox.
func (c *Client) AddMount(ctx context.Context, id string, m backends.Mount) (*apitype.MountResult, error) {
	var out apitype.MountResult
	return &out, c.Do(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/mounts", nil, m, &out)
}

// RemoveMount removes a mount from a sandbox.
func (c *Client) RemoveMount(ctx context.Context, id, target string) error {
	return c.Do(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/mounts/remove", nil, map[string]string{"target": target}, nil)
}

// SetFsMode changes what a sandbox may read.
func (c *Client) SetFsMode(ctx context.Context, id, mode string) (map[string]any, error) {
	var out map[string]any
	return out, c.Do(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/fs-mode", nil, map[string]string{"fsMode": mode}, &out)
}

// SetPorts replaces a sandbox's port rules.
func (c *Client) SetPorts(ctx context.Context, id string, listen, connect, loopback []int) (*apitype.PortsResult, error) {
	var out apitype.PortsResult
	body := map[string][]int{"listen": listen, "connect": connect, "loopback": loopback}
	return &out, c.Do(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/ports", nil, body, &out)
}

// SetPortRules replaces a sandbox's port rules, domain lists and HTTP
// rules.
func (c *Client) SetPortRules(ctx context.Context, id string, r backends.PortRules) (*apitype.PortsResult, error) {
	var out apitype.PortsResult
	rules := r.AllowHTTP
	if rules == nil {
		rules = []backends.HTTPRule{}
	}
	body := map[string]any{"listen": orNoInts(r.Listen), "connect": orNoInts(r.Connect), "loopback": orNoInts(r.Loopback),
		"domains": orNoNames(r.Domains), "denyDomains": orNoNames(r.DenyDomains), "allowHttp": rules}
	return &out, c.Do(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/ports", nil, body, &out)
}

func orNoInts(l []int) []int {
	if l == nil {
		return []int{}
	}
	return l
}

func orNoNames(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// LoginURL asks the daemon for a one-time dashboard login link.
func (c *Client) LoginURL(ctx context.Context, base string) (string, error) {
	var out struct {
		Code string `json:"code"`
		Path string `json:"path"`
	}
	if err := c.Do(ctx, http.MethodPost, "/login-codes", nil, nil, &out); err != nil {
		return "", err
	}
	return base + out.Path + out.Code, nil
}

// StopDaemon asks the daemon to shut down.
func (c *Client) StopDaemon(ctx context.Context) error {
	return c.Do(ctx, http.MethodPost, "/daemon/stop", nil, nil, nil)
}

// BackgroundRuns lists the background runs going on now.
func (c *Client) BackgroundRuns(ctx context.Context) ([]apitype.RunRecord, error) {
	var out struct {
		Runs []apitype.RunRecord `json:"runs"`
	}
	return out.Runs, c.Do(ctx, http.MethodGet, "/runs", url.Values{"state": {"running"}}, nil, &out)
}

// KillRun kills one run; killed is false when it had ended.
func (c *Client) KillRun(ctx context.Context, id string) (killed bool, err error) {
	var out struct {
		Killed bool `json:"killed"`
	}
	return out.Killed, c.Do(ctx, http.MethodPost, "/runs/"+url.PathEscape(id)+"/kill", nil, nil, &out)
}

// RunLog reads up to limit bytes of a run's output from offset
// (negative: from the end): a background run's log, what a foreground
// run going on writes, or what a finished run's record keeps.
func (c *Client) RunLog(ctx context.Context, id string, offset int64, limit int) (*apitype.RunLog, error) {
	var out apitype.RunLog
	q := url.Values{"offset": {strconv.FormatInt(offset, 10)}, "limit": {strconv.Itoa(limit)}}
	return &out, c.Do(ctx, http.MethodGet, "/runs/"+url.PathEscape(id)+"/log", q, nil, &out)
}

// FollowRunLog streams a run's output from offset to onData as it grows
// (stream is "stdout", or "stderr" for the stderr a finished foreground
// run's record keeps), until the run ends (its record is returned) or
// ctx ends. onSkipped, when set, hears how many bytes were not kept
// before what comes next.
func (c *Client) FollowRunLog(ctx context.Context, id string, offset int64, onData func(stream, data string), onSkipped func(n int64)) (*apitype.RunRecord, error) {
	q := url.Values{"offset": {strconv.FormatInt(offset, 10)}, "follow": {"1"}}
	resp, err := c.send(ctx, http.MethodGet, "/runs/"+url.PathEscape(id)+"/log", q, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return nil, decodeAnswer(resp, nil)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var line struct {
			Data    *string            `json:"data"`
			Stream  string             `json:"stream"`
			Skipped int64              `json:"skipped"`
			End     *apitype.RunRecord `json:"end"`
			Error   *Error             `json:"error"`
		}
		if err := dec.Decode(&line); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("reading the log stream: %w", err)
		}
		switch {
		case line.Data != nil:
			stream := "stdout"
			if line.Stream == "stderr" {
				stream = "stderr"
			}
			onData(stream, *line.Data)
		case line.Skipped > 0:
			if onSkipped != nil {
				onSkipped(line.Skipped)
			}
		case line.End != nil:
			return line.End, nil
		case line.Error != nil:
			return nil, line.Error
		}
	}
}

// Mkdir makes a folder (and its parents) in a sandbox.
func (c *Client) Mkdir(ctx context.Context, id, path string) error {
	return c.Do(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/mkdir", nil, map[string]string{"path": path}, nil)
}

// LoginPage asks the daemon for an owner-only login page (a one-time
// code in a form that posts itself) and returns its path: open that in a
// browser, never a URL with the code, which every user sees on a command
// line.
func (c *Client) LoginPage(ctx context.Context) (string, error) {
	var out struct {
		File string `json:"file"`
	}
	if err := c.Do(ctx, http.MethodPost, "/login-codes", url.Values{"page": {"1"}}, nil, &out); err != nil {
		return "", err
	}
	return out.File, nil
}

// Caches lists the package caches that last (GET /caches).
func (c *Client) Caches(ctx context.Context) ([]apitype.CacheInfo, error) {
	var out struct {
		Caches []apitype.CacheInfo `json:"caches"`
	}
	return out.Caches, c.Do(ctx, http.MethodGet, "/caches", nil, nil, &out)
}

// ClearCaches empties the package caches of sandbox id, or every one
// with id "".
func (c *Client) ClearCaches(ctx context.Context, id string) error {
	path := "/caches"
	if id != "" {
		path = "/sandboxes/" + url.PathEscape(id) + "/cache"
	}
	return c.Do(ctx, http.MethodDelete, path, nil, nil, nil)
}

// PolicyCheck asks what the layered policy files make of a command in a
// project, running nothing.
func (c *Client) PolicyCheck(ctx context.Context, req apitype.PolicyCheckRequest) (*apitype.PolicyCheck, error) {
	var out apitype.PolicyCheck
	return &out, c.Do(ctx, http.MethodPost, "/policy/check", nil, req, &out)
}

// PolicyLearn runs a command once in its project, traced, and answers
// the policy it proposes (senclaw run --learn).
func (c *Client) PolicyLearn(ctx context.Context, req apitype.PolicyLearnRequest) (*apitype.PolicyLearn, error) {
	var out apitype.PolicyLearn
	return &out, c.Do(ctx, http.MethodPost, "/policy/learn", nil, req, &out)
}
