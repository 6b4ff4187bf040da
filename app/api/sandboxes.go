package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/attach"
	"github.com/senclaw/sandbox/backends"
)

// listSandboxes answers one page of the sandboxes (?limit, ?offset, ?q
// to filter), with the total that match and how many are running.
// Without ?limit it lists them all, as it always did.
func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request) error {
	q, err := listQuery(r, 0)
	if err != nil {
		return err
	}
	page, err := s.e.SandboxesPage(q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// maxPage bounds ?limit and ?offset of the lists.
const maxPage = 100000

// listQuery reads ?limit (def when absent), ?offset and ?q.
func listQuery(r *http.Request, def int) (app.ListQuery, error) {
	limit, err := intParam(r, "limit", def, 1, maxPage)
	if err != nil {
		return app.ListQuery{}, err
	}
	offset, err := intParam(r, "offset", 0, 0, maxPage)
	if err != nil {
		return app.ListQuery{}, err
	}
	match := r.URL.Query().Get("q")
	if len(match) > 200 {
		return app.ListQuery{}, &badRequest{field: "q", msg: "q: at most 200 characters"}
	}
	q := app.ListQuery{Limit: limit, Offset: offset, Match: match}
	// The owner lists every tenant's (or ?tenant's); anyone else its own.
	if p := Principal(r.Context()); p.IsOwner() {
		q.Tenant = tenantFilter(r)
		q.AllTenants = q.Tenant == "*"
	} else {
		q.Tenant = p.Tenant
	}
	return q, nil
}

func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request) error {
	var cfg app.SandboxConfig
	if err := decode(r, &cfg); err != nil {
		return err
	}
	sb, err := s.e.Create(r.Context(), cfg)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, SandboxReply{Sandbox: sb, Notes: s.e.CreateNotes(r.Context(), sb)})
	return nil
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request) error {
	sb, err := s.e.Get(r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sb)
	return nil
}

func (s *Server) updateSandbox(w http.ResponseWriter, r *http.Request) error {
	var cfg app.SandboxConfig
	if err := decode(r, &cfg); err != nil {
		return err
	}
	sb, err := s.e.Update(r.PathValue("id"), cfg)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, SandboxReply{Sandbox: sb, Notes: s.e.ChangeNotes(r.Context(), sb)})
	return nil
}

func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request) error {
	purge, _ := strconv.ParseBool(r.URL.Query().Get("purge"))
	purged, err := s.e.Delete(r.Context(), r.PathValue("id"), purge)
	if err != nil {
		return err
	}
	files := "still on disk"
	if purged {
		files = "purged"
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deleted": r.PathValue("id"), "files": files})
	return nil
}

func (s *Server) startSandbox(w http.ResponseWriter, r *http.Request) error {
	note, err := s.e.StartSandbox(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "note": note})
	return nil
}

func (s *Server) stopSandbox(w http.ResponseWriter, r *http.Request) error {
	n, err := s.e.Stop(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "stopped": n})
	return nil
}

func (s *Server) recreateSandbox(w http.ResponseWriter, r *http.Request) error {
	note, err := s.e.Recreate(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "note": note})
	return nil
}

// runBody is the body of exec, run and run-once.
type runBody struct {
	Command    string            `json:"command"`
	Argv       []string          `json:"argv"`
	Language   string            `json:"language"`
	Code       string            `json:"code"`
	TimeoutMs  int               `json:"timeoutMs"`
	Env        map[string]string `json:"env"`
	Background bool              `json:"background"`
	TTLMs      int               `json:"ttlMs"`
	IdleTTLMs  int               `json:"idleTtlMs"`
	Source     string            `json:"source"`
	// Trace traces this run even when its sandbox does not.
	Trace bool `json:"trace"`
}

func (b runBody) request(r *http.Request) app.RunRequest {
	src := b.Source
	if src == "" {
		src = app.SourceREST
	}
	return app.RunRequest{Source: src, Command: b.Command, Argv: b.Argv, Language: b.Language, Code: b.Code, TimeoutMs: b.TimeoutMs, Env: b.Env, Background: b.Background, TTLMs: b.TTLMs, IdleTTLMs: b.IdleTTLMs, Trace: b.Trace}
}

func reply(res *app.RunResult) RunReply {
	// A background run that started is ok: it is going as asked.
	ok := res.Record.OK() || (res.Record.Background && res.Record.State == "running")
	refusals := res.Record.Refusals
	if refusals == nil {
		refusals = []app.Refusal{}
	}
	return RunReply{Run: res.Record, OK: ok, Stdout: res.Stdout, Stderr: res.Stderr, Notes: app.RunNotes(&res.Record), Lifetime: res.Record.Lifetime(), Refusals: refusals}
}

// streamer writes output chunks as NDJSON lines while a run goes on, for
// ?stream=1. The two output streams write from their own goroutines.
type streamer struct {
	mu sync.Mutex
	w  http.ResponseWriter
	fl http.Flusher
}

type streamWriter struct {
	s    *streamer
	name string
}

func (sw streamWriter) Write(p []byte) (int, error) {
	sw.s.mu.Lock()
	defer sw.s.mu.Unlock()
	_ = json.NewEncoder(sw.s.w).Encode(map[string]string{sw.name: string(p)})
	if sw.s.fl != nil {
		sw.s.fl.Flush()
	}
	return len(p), nil
}

// doRun runs req through run and answers, streaming when asked.
func (s *Server) doRun(w http.ResponseWriter, r *http.Request, req app.RunRequest, run func(app.RunRequest) (*app.RunResult, error)) error {
	stream, _ := strconv.ParseBool(r.URL.Query().Get("stream"))
	var st *streamer
	if stream && !req.Background {
		fl, _ := w.(http.Flusher)
		st = &streamer{w: w, fl: fl}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		req.Stdout, req.Stderr = streamWriter{st, "stdout"}, streamWriter{st, "stderr"}
	}
	res, err := run(req)
	if st != nil {
		st.mu.Lock()
		defer st.mu.Unlock()
		if err != nil {
			body := errorBody{Error: err.Error(), Refused: app.IsRefused(err)}
			if res != nil {
				body.Run = &res.Record
			}
			return json.NewEncoder(w).Encode(map[string]any{"error": body})
		}
		rep := reply(res)
		rep.Stdout, rep.Stderr = "", "" // already streamed
		return json.NewEncoder(w).Encode(map[string]any{"result": rep})
	}
	if err != nil {
		if res != nil && app.IsRefused(err) {
			status, field := http.StatusForbidden, ""
			if le := (*app.LimitError)(nil); errors.As(err, &le) {
				status, field = http.StatusTooManyRequests, le.Setting // the queue is full
			}
			writeJSON(w, status, errorBody{Error: err.Error(), Field: field, Refused: true, Run: &res.Record})
			return nil
		}
		return err
	}
	status := http.StatusOK
	if req.Background {
		status = http.StatusAccepted
	}
	writeJSON(w, status, reply(res))
	return nil
}

// execBody is the body of exec: a run and, for an attached one, the
// terminal asked for and whether a person is at it.
type execBody struct {
	runBody
	Terminal    *app.TerminalRequest `json:"terminal"`
	Interactive bool                 `json:"interactive"`
}

// exec runs a command in the sandbox: attached when the request asks for
// the upgrade (app/attach; senclaw shell), else answered as JSON, or
// NDJSON with ?stream=1.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) error {
	var b execBody
	if err := decode(r, &b); err != nil {
		return err
	}
	if b.Language != "" || b.Code != "" {
		return &badRequest{field: "language", msg: "exec runs a command; use POST .../run for code"}
	}
	if wantsAttach(r) {
		return s.attachRun(w, r, b.Terminal, func(ctx context.Context, a *app.Attachment, stdout, stderr io.Writer) (*app.RunResult, error) {
			req := b.request(r)
			a.Interactive = b.Interactive
			req.Attach, req.Stdout, req.Stderr = a, stdout, stderr
			return s.e.Exec(ctx, r.PathValue("id"), req)
		})
	}
	switch {
	case b.Terminal != nil:
		return &badRequest{field: "terminal", msg: "a terminal needs an attached run (Connection: Upgrade, Upgrade: " + attach.Protocol + ")"}
	case b.Interactive:
		return &badRequest{field: "interactive", msg: "an interactive run needs an attached run (Connection: Upgrade, Upgrade: " + attach.Protocol + ")"}
	}
	return s.doRun(w, r, b.request(r), func(req app.RunRequest) (*app.RunResult, error) {
		return s.e.Exec(r.Context(), r.PathValue("id"), req)
	})
}

func (s *Server) runCode(w http.ResponseWriter, r *http.Request) error {
	var b runBody
	if err := decode(r, &b); err != nil {
		return err
	}
	if b.Command != "" || len(b.Argv) > 0 {
		return &badRequest{field: "command", msg: "run takes language and code; use POST .../exec for a command"}
	}
	if b.Language == "" {
		return &badRequest{field: "language", msg: "language is required: " + strings.Join(app.Languages(), ", ")}
	}
	return s.doRun(w, r, b.request(r), func(req app.RunRequest) (*app.RunResult, error) {
		return s.e.Exec(r.Context(), r.PathValue("id"), req)
	})
}

// runOnceBody is a run plus the throwaway sandbox's configuration. The
// run's timeoutMs and env are the sandbox's too.
type runOnceBody struct {
	runBody
	Name     *string          `json:"name"`
	Backend  *string          `json:"backend"`
	Image    *string          `json:"image"`
	FsMode   *string          `json:"fsMode"`
	Mounts   []backends.Mount `json:"mounts"`
	Network  *bool            `json:"network"`
	Listen   []int            `json:"listenPorts"`
	Connect  []int            `json:"connectPorts"`
	Loopback []int            `json:"loopbackPorts"`
	Domains  []string         `json:"domains"`
	Deny     []string         `json:"denyDomains"`
	CPUs     *float64         `json:"cpus"`
	MemoryMB *int             `json:"memoryMb"`
	Pids     *int             `json:"pids"`
	DiskMB   *int             `json:"diskMb"`
	// ProjectDir makes a folder of the caller's the run's workspace.
	ProjectDir *string `json:"projectDir"`
	// AllowHTTP and Secrets: the one-shot sandbox's HTTP rules and the
	// secrets its run gets placeholders of.
	AllowHTTP []backends.HTTPRule `json:"allowHttp"`
	Secrets   []string            `json:"secrets"`
}

func (b runOnceBody) config() app.SandboxConfig {
	return app.SandboxConfig{Name: b.Name, Backend: b.Backend, Image: b.Image, FsMode: b.FsMode, Mounts: b.Mounts, Network: b.Network,
		Listen: b.Listen, Connect: b.Connect, Loopback: b.Loopback, Domains: b.Domains, DenyDomains: b.Deny, CPUs: b.CPUs, MemoryMB: b.MemoryMB, Pids: b.Pids, DiskMB: b.DiskMB,
		ProjectDir: b.ProjectDir, AllowHTTP: b.AllowHTTP, Secrets: b.Secrets}
}

func (s *Server) runOnce(w http.ResponseWriter, r *http.Request) error {
	var b runOnceBody
	if err := decode(r, &b); err != nil {
		return err
	}
	return s.doRun(w, r, b.runBody.request(r), func(req app.RunRequest) (*app.RunResult, error) {
		return s.e.RunOnce(r.Context(), b.config(), req)
	})
}

func (s *Server) install(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Manager   string   `json:"manager"`
		Packages  []string `json:"packages"`
		TimeoutMs int      `json:"timeoutMs"`
		Source    string   `json:"source"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	src := b.Source
	if src == "" {
		src = app.SourceREST
	}
	return s.doRun(w, r, app.RunRequest{}, func(req app.RunRequest) (*app.RunResult, error) {
		return s.e.Install(r.Context(), r.PathValue("id"), app.InstallRequest{Manager: b.Manager, Packages: b.Packages, TimeoutMs: b.TimeoutMs, Source: src, Stdout: req.Stdout, Stderr: req.Stderr})
	})
}

func (s *Server) listMounts(w http.ResponseWriter, r *http.Request) error {
	sb, err := s.e.Get(r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"mounts": sb.Mounts})
	return nil
}

func (s *Server) addMount(w http.ResponseWriter, r *http.Request) error {
	var m backends.Mount
	if err := decode(r, &m); err != nil {
		return err
	}
	res, err := s.e.AddMount(r.PathValue("id"), m)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) removeMount(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Target string `json:"target"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	sb, err := s.e.RemoveMount(r.PathValue("id"), b.Target)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "unmounted": b.Target, "realFolder": "untouched", "sandbox": sb})
	return nil
}

func (s *Server) setFsMode(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		FsMode string `json:"fsMode"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	sb, err := s.e.SetFsMode(r.PathValue("id"), b.FsMode)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, FsModeReply{OK: true, Sandbox: sb, FsMode: sb.FsMode, Label: app.FsModeLabel(sb.FsMode), Notes: s.e.FsModeNotes(r.Context(), sb)})
	return nil
}

func (s *Server) setPorts(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Listen    []int                `json:"listen"`
		Connect   []int                `json:"connect"`
		Loopback  []int                `json:"loopback"`
		Domains   []string             `json:"domains"`
		Deny      []string             `json:"denyDomains"`
		AllowHTTP *[]backends.HTTPRule `json:"allowHttp"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	var res *app.PortsResult
	var err error
	if b.Domains == nil && b.Deny == nil && b.AllowHTTP == nil {
		// A client that knows only ports keeps the domain lists and the
		// HTTP rules.
		res, err = s.e.SetPorts(r.Context(), r.PathValue("id"), b.Listen, b.Connect, b.Loopback)
	} else {
		rules := backends.PortRules{Listen: b.Listen, Connect: b.Connect, Loopback: b.Loopback, Domains: b.Domains, DenyDomains: b.Deny}
		if b.AllowHTTP != nil {
			rules.AllowHTTP = *b.AllowHTTP
		} else if sb, gerr := s.e.Get(r.PathValue("id")); gerr == nil {
			rules.AllowHTTP = sb.Ports.AllowHTTP // not given: kept
		}
		res, err = s.e.SetPortRules(r.Context(), r.PathValue("id"), rules)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
