package mcp

import (
	"context"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

type runArgs struct {
	Language  string            `json:"language,omitempty" jsonschema:"language of code: python, node or bash (aliases: python3, py, javascript, js, sh). Give language and code, or command, not both"`
	Code      string            `json:"code,omitempty" jsonschema:"the source to run, non-blank; it is written to a file in the sandbox and run with the language's interpreter"`
	Command   string            `json:"command,omitempty" jsonschema:"a shell command line (run with /bin/sh -c), instead of language and code"`
	Backend   string            `json:"backend,omitempty" jsonschema:"bwrap, landlock or docker; omit to get the best isolating backend available. Never ask for direct: it runs with no isolation and is refused unless a person allowed it"`
	Network   *bool             `json:"network,omitempty" jsonschema:"allow network access; default: the settings' defaultNetwork (off unless a person changed it)"`
	FsMode    string            `json:"fsMode,omitempty" jsonschema:"what the code may read: strict (its own folder and system folders), allowlist (strict plus folders a person listed) or open (the whole disk read-only, except secrets); default: the settings' defaultFsMode"`
	TimeoutMs int               `json:"timeoutMs,omitempty" jsonschema:"kill the run after this many milliseconds, 1000 to 86400000 (24 h); the output so far is kept"`
	Env       map[string]string `json:"env,omitempty" jsonschema:"extra environment variables for this run only, NAME: value"`
	Secrets   []string          `json:"secrets,omitempty" jsonschema:"names of the engine's secrets this run may use (sbx_capabilities lists them): it gets a placeholder in the variable NAME in upper case (gh: GH), which the proxy replaces with the value on requests to the secret's hosts only (send it as it is, e.g. Authorization: Bearer $GH); needs network"`
	AllowHTTP []httpRuleArg     `json:"allowHttp,omitempty" jsonschema:"HTTP rules for this run: for each rule's host, only the requests whose method and path a rule allows get through"`
	// Learn mode: the owner's (it needs policy:write).
	Learn      bool   `json:"learn,omitempty" jsonschema:"learn mode, the owner's only: run the command once in projectDir, traced, in the widest sandbox of the backend asked for that the owner's policy allows it, and answer the narrowest .senclaw/policy.json under which it would have run, as a diff (learned); the other sandbox arguments do not apply"`
	ProjectDir string `json:"projectDir,omitempty" jsonschema:"with learn: the project folder the command runs in and the proposal is for"`
	Write      bool   `json:"write,omitempty" jsonschema:"with learn: save the proposal as the project's .senclaw/policy.json (after a run that succeeded)"`
}

type runResult struct {
	Backend string     `json:"backend" jsonschema:"the backend the throwaway sandbox used"`
	Run     RunSummary `json:"run"`
	// Learned is learn mode's proposal.
	Learned *learnedPolicy `json:"learned,omitempty" jsonschema:"with learn: the proposed policy"`
}

type learnedPolicy struct {
	File     string   `json:"file" jsonschema:"the project's policy file"`
	Proposal string   `json:"proposal" jsonschema:"the proposed file, as it would be written"`
	Diff     []string `json:"diff" jsonschema:"the proposal against the file as it is: - key: old, + key: new"`
	Notes    []string `json:"notes" jsonschema:"what it could not propose (the owner would have to allow it) and what it did not measure"`
	Written  bool     `json:"written" jsonschema:"the proposal was saved"`
}

type runInArgs struct {
	SandboxID  string            `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
	Language   string            `json:"language" jsonschema:"python, node or bash (aliases: python3, py, javascript, js, sh)"`
	Code       string            `json:"code" jsonschema:"the source to run, non-blank; it runs in the sandbox's folder, where files from sbx_file_write and earlier runs are"`
	TimeoutMs  int               `json:"timeoutMs,omitempty" jsonschema:"kill the run after this many milliseconds, 1000 to 86400000 (24 h); default: the sandbox's timeoutMs. Not for background runs (see ttlMs)"`
	Env        map[string]string `json:"env,omitempty" jsonschema:"extra environment variables for this run only, NAME: value"`
	Background bool              `json:"background,omitempty" jsonschema:"start the run and return at once (for servers and long jobs); the answer has the run id and the log file its output goes to. It runs until it exits, sbx_kill stops it or sbx_delete removes its sandbox, unless ttlMs or idleTtlMs is given"`
	TTLMs      int               `json:"ttlMs,omitempty" jsonschema:"a background run's deadline in milliseconds, 1000 to 2592000000 (30 days); default none"`
	IdleTTLMs  int               `json:"idleTtlMs,omitempty" jsonschema:"kill a background run after this many milliseconds without CPU use or output, 1000 to 2592000000"`
}

type execArgs struct {
	SandboxID  string            `json:"sandboxId" jsonschema:"id of a persistent sandbox, as sbx_create or sbx_list return it"`
	Command    string            `json:"command" jsonschema:"shell command line, run with /bin/sh -c in the sandbox's folder"`
	TimeoutMs  int               `json:"timeoutMs,omitempty" jsonschema:"kill the run after this many milliseconds, 1000 to 86400000 (24 h); default: the sandbox's timeoutMs. Not for background runs (see ttlMs)"`
	Env        map[string]string `json:"env,omitempty" jsonschema:"extra environment variables for this run only, NAME: value"`
	Background bool              `json:"background,omitempty" jsonschema:"start the command and return at once, e.g. a web server: the answer has the run id and the log file its output goes to. It runs until it exits, sbx_kill stops it or sbx_delete removes its sandbox, unless ttlMs or idleTtlMs is given. Reach a server from this machine at 127.0.0.1 on a port listed with sbx_ports listen (or listenPorts on sbx_create)"`
	TTLMs      int               `json:"ttlMs,omitempty" jsonschema:"a background run's deadline in milliseconds, 1000 to 2592000000 (30 days); default none"`
	IdleTTLMs  int               `json:"idleTtlMs,omitempty" jsonschema:"kill a background run after this many milliseconds without CPU use or output, 1000 to 2592000000"`
}

type installArgs struct {
	SandboxID string   `json:"sandboxId" jsonschema:"id of a persistent sandbox with network on, as sbx_create or sbx_list return it"`
	Manager   string   `json:"manager" jsonschema:"pip (also pip3, python) or npm (also node); packages go into the sandbox's folder. apt is refused: system folders are read-only in every sandbox"`
	Packages  []string `json:"packages" jsonschema:"package names with optional versions, e.g. requests==2.32.3 or lodash@4; no options, spaces or shell syntax"`
	TimeoutMs int      `json:"timeoutMs,omitempty" jsonschema:"kill the install after this many milliseconds, 1000 to 86400000 (24 h)"`
}

func (s *server) addRunTools(srv *sdk.Server) {
	addTool(srv, "sbx_run", "Run code once in a throwaway sandbox",
		"Run a piece of code (language + code) or a shell command once in a fresh, isolated, throwaway sandbox that is deleted afterwards (its run record stays). "+
			"This is the default tool for a single calculation, script or check. Nothing persists between calls: for multi-step work that keeps files or packages, use sbx_create and sbx_run_in/sbx_exec instead. "+
			"Network is off unless network is true. Returns {backend, run: RunSummary}; read run.note for anything the backend could not enforce.",
		runsCode, inputSchema[runArgs](withDefault("timeoutMs", 60000)),
		func(ctx context.Context, req *sdk.CallToolRequest, in runArgs) (*sdk.CallToolResult, runResult, error) {
			if in.Learn {
				return s.learn(ctx, in)
			}
			body := client.RunOnceBody{RunBody: client.RunBody{Source: app.SourceMCP, Command: in.Command, Language: in.Language, Code: in.Code, TimeoutMs: in.TimeoutMs, Env: in.Env}}
			body.Sandbox.Network = in.Network
			body.Sandbox.Secrets, body.Sandbox.AllowHTTP = in.Secrets, httpRulesOf(in.AllowHTTP)
			if in.Backend != "" {
				body.Sandbox.Backend = &in.Backend
			}
			if in.FsMode != "" {
				body.Sandbox.FsMode = &in.FsMode
			}
			pr := progressFor(ctx, req)
			defer pr.stop()
			rep, err := call(ctx, s, func(c *client.Client) (*apitype.RunReply, error) { return c.RunOnce(ctx, body, pr.onOutput()) })
			if err != nil {
				return nil, runResult{}, err
			}
			pr.fill(rep)
			out := runResult{Backend: rep.Run.Backend, Run: summary(rep)}
			return textResult("backend " + out.Backend + "\n" + out.Run.text()), out, nil
		})

	addTool(srv, "sbx_run_in", "Run code in a persistent sandbox",
		"Run code (python, node or bash) in an existing persistent sandbox, in its folder, where files written with sbx_file_write, packages from sbx_install and earlier runs' outputs are. "+
			"Use it for multi-step work; for a one-off calculation use sbx_run. For a shell command use sbx_exec. Returns a RunSummary.",
		runsCode, inputSchema[runInArgs](),
		func(ctx context.Context, req *sdk.CallToolRequest, in runInArgs) (*sdk.CallToolResult, RunSummary, error) {
			body := client.RunBody{Source: app.SourceMCP, Language: in.Language, Code: in.Code, TimeoutMs: in.TimeoutMs, Env: in.Env, Background: in.Background, TTLMs: in.TTLMs, IdleTTLMs: in.IdleTTLMs}
			return s.exec(ctx, req, in.SandboxID, body)
		})

	addTool(srv, "sbx_exec", "Run a shell command in a persistent sandbox",
		"Run a shell command line in an existing persistent sandbox, in its folder (e.g. ls, python3 script.py, make). "+
			"With background: true it starts the command and returns at once with the run id and its log file: use that for servers (reach them at 127.0.0.1 on a port allowed with sbx_ports listen) and long jobs; stop them with sbx_kill. "+
			"Returns a RunSummary.",
		runsCode, inputSchema[execArgs](),
		func(ctx context.Context, req *sdk.CallToolRequest, in execArgs) (*sdk.CallToolResult, RunSummary, error) {
			body := client.RunBody{Source: app.SourceMCP, Command: in.Command, TimeoutMs: in.TimeoutMs, Env: in.Env, Background: in.Background, TTLMs: in.TTLMs, IdleTTLMs: in.IdleTTLMs}
			if body.Command == "" {
				// An empty command must not turn into a code run: the
				// engine names the missing field.
				body.Command = " "
			}
			return s.exec(ctx, req, in.SandboxID, body)
		})

	addTool(srv, "sbx_install", "Install packages into a persistent sandbox",
		"Install pip or npm packages into a persistent sandbox's folder, so later sbx_run_in/sbx_exec calls can use them. "+
			"The sandbox needs network on (sbx_create with network: true, or sbx_update). Returns a RunSummary of the installer's run.",
		runsCode, inputSchema[installArgs](withDefault("timeoutMs", app.DefaultInstallTimeoutMs)),
		func(ctx context.Context, creq *sdk.CallToolRequest, in installArgs) (*sdk.CallToolResult, RunSummary, error) {
			req := client.InstallBody{Manager: in.Manager, Packages: in.Packages, TimeoutMs: in.TimeoutMs, Source: app.SourceMCP}
			pr := progressFor(ctx, creq)
			defer pr.stop()
			rep, err := call(ctx, s, func(c *client.Client) (*apitype.RunReply, error) {
				return c.Install(ctx, in.SandboxID, req, pr.onOutput())
			})
			if err != nil {
				return nil, RunSummary{}, err
			}
			pr.fill(rep)
			sum := summary(rep)
			return textResult(sum.text()), sum, nil
		})
}

// exec runs body in a persistent sandbox.
func (s *server) exec(ctx context.Context, req *sdk.CallToolRequest, id string, body client.RunBody) (*sdk.CallToolResult, RunSummary, error) {
	var pr *reporter
	if !body.Background {
		pr = progressFor(ctx, req)
	}
	defer pr.stop()
	rep, err := call(ctx, s, func(c *client.Client) (*apitype.RunReply, error) { return c.Exec(ctx, id, body, pr.onOutput()) })
	if err != nil {
		return nil, RunSummary{}, err
	}
	pr.fill(rep)
	sum := summary(rep)
	return textResult(sum.text()), sum, nil
}

// learn is sbx_run with learn: true, learn mode (POST /policy/learn).
func (s *server) learn(ctx context.Context, in runArgs) (*sdk.CallToolResult, runResult, error) {
	l, err := call(ctx, s, func(c *client.Client) (*apitype.PolicyLearn, error) {
		return c.PolicyLearn(ctx, apitype.PolicyLearnRequest{ProjectDir: in.ProjectDir, Command: in.Command, TimeoutMs: in.TimeoutMs, Write: in.Write, Backend: in.Backend})
	})
	if err != nil {
		return nil, runResult{}, err
	}
	rep := &apitype.RunReply{Run: l.Run, OK: l.Run.OK(), Stdout: l.Stdout, Stderr: l.Stderr}
	out := runResult{Backend: l.Run.Backend, Run: summary(rep), Learned: &learnedPolicy{File: l.File, Proposal: l.Proposal, Diff: l.Diff, Notes: l.Notes, Written: l.Written}}
	text := "backend " + out.Backend + "\n" + out.Run.text() + "\nproposed for " + l.File + ":\n" + strings.Join(l.Diff, "\n")
	for _, n := range l.Notes {
		text += "\nnote: " + n
	}
	return textResult(text), out, nil
}
