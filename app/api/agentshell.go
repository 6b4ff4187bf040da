package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/agentshell"
	"github.com/senclaw/sandbox/app/attach"
)

// agentShellBody is the body of POST /agent-shell: the engine's request
// and, for an attached run, the terminal asked for.
type agentShellBody struct {
	app.AgentShellRequest
	Terminal *app.TerminalRequest `json:"terminal,omitempty"`
}

// agentShell runs an agent's shell command: attached when the request
// asks for the upgrade (app/attach), else answered as the other run
// routes (JSON, or NDJSON with ?stream=1).
func (s *Server) agentShell(w http.ResponseWriter, r *http.Request) error {
	var b agentShellBody
	if err := decode(r, &b); err != nil {
		return err
	}
	if wantsAttach(r) {
		return s.attachRun(w, r, b.Terminal, func(ctx context.Context, a *app.Attachment, stdout, stderr io.Writer) (*app.RunResult, error) {
			req := b.AgentShellRequest
			req.Attach, req.Stdout, req.Stderr = a, stdout, stderr
			return s.e.AgentShell(ctx, req)
		})
	}
	if b.Terminal != nil {
		return &badRequest{field: "terminal", msg: "a terminal needs an attached run (Connection: Upgrade, Upgrade: " + attach.Protocol + ")"}
	}
	return s.doRun(w, r, app.RunRequest{}, func(req app.RunRequest) (*app.RunResult, error) {
		a := b.AgentShellRequest
		a.Stdout, a.Stderr = req.Stdout, req.Stderr
		return s.e.AgentShell(r.Context(), a)
	})
}

// agentShellCheck answers what the agent shell would do in a project now.
func (s *Server) agentShellCheck(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		ProjectDir string `json:"projectDir"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	isolation, err := s.e.AgentShellCheck(r.Context(), b.ProjectDir)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"execShell": isolation != "none", "isolation": isolation})
	return nil
}

// integrations answers where the agent integrations are installed: the
// owner's settings files of each agent, those of the agent sandboxes'
// projects, and the SHELL wrapper. The engine reads them for its owner;
// they stay the owner's files, never written here.
func (s *Server) integrations(w http.ResponseWriter, r *http.Request) error {
	all, err := s.e.List()
	if err != nil {
		return err
	}
	var projects []string
	for _, sb := range all {
		if sb.Kind == "agent" {
			projects = append(projects, sb.Workspace)
		}
	}
	list := agentshell.Status(s.e.HomeDir(), s.e.DataDir(), projects)
	if list == nil {
		list = []agentshell.Integration{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"integrations": list})
	return nil
}

func wantsAttach(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), attach.Protocol) &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

// attachRun switches the connection to attach frames and runs run with
// the attachment they feed. Everything before it (authentication, the
// Host and Origin checks, the body) went as for any request. The run is
// cancelled (its command killed) when the client goes away.
func (s *Server) attachRun(w http.ResponseWriter, r *http.Request, terminal *app.TerminalRequest,
	run func(ctx context.Context, a *app.Attachment, stdout, stderr io.Writer) (*app.RunResult, error)) error {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return errors.New("this connection cannot be upgraded")
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Time{})
	if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "+attach.Protocol+"\r\nConnection: Upgrade\r\n\r\n"); err != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	stdinR, stdinW := io.Pipe()
	control := make(chan app.Control, 16)
	go func() {
		// The client's frames; its going away ends the run.
		defer cancel()
		defer stdinW.Close()
		fr := attach.NewReader(brw.Reader)
		for {
			typ, payload, err := fr.Next()
			if err != nil {
				return
			}
			switch typ {
			case attach.FrameStdin:
				if _, err := stdinW.Write(payload); err != nil {
					stdinW.Close()
				}
			case attach.FrameStdinEOF:
				stdinW.Close()
			case attach.FrameControl:
				var c app.Control
				if json.Unmarshal(payload, &c) == nil {
					select {
					case control <- c:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	}()
	fw := attach.NewWriter(conn)
	a := &app.Attachment{Stdin: stdinR, Terminal: terminal, Control: control,
		Started: func(rec app.RunRecord) { _ = fw.JSON(attach.FrameStarted, rec) }}
	res, err := run(ctx, a, fw.Stream(attach.FrameStdout), fw.Stream(attach.FrameStderr))
	if err != nil {
		body := errorBody{Error: err.Error(), Refused: app.IsRefused(err)}
		var fe *app.FieldError
		if errors.As(err, &fe) {
			body.Field = fe.Field
		}
		if res != nil {
			body.Run = &res.Record
		}
		_ = fw.JSON(attach.FrameResult, map[string]any{"error": body})
		return nil
	}
	rep := reply(res)
	rep.Stdout, rep.Stderr = "", "" // already sent
	_ = fw.JSON(attach.FrameResult, map[string]any{"result": rep})
	return nil
}
