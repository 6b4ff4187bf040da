package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/senclaw/sandbox/app/agentshell"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/attach"
)

// Session is an attached run (app/attach): the client sends stdin,
// terminal sizes and signals, and reads the run's output and its result.
type Session struct {
	conn io.ReadWriteCloser
	w    *attach.Writer
	r    *attach.Reader
}

// Attach starts an attached run on path (POST, the route's JSON body)
// over the upgraded connection. An error answer before the upgrade (bad
// JSON, authentication) is an *Error.
func (c *Client) Attach(ctx context.Context, path string, body any) (*Session, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/api/sandbox"+path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", attach.Protocol)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		if err := decodeAnswer(resp, nil); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("the engine answered %s instead of switching to %s", resp.Status, attach.Protocol)
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, errors.New("the upgraded connection is not writable")
	}
	return &Session{conn: conn, w: attach.NewWriter(conn), r: attach.NewReader(conn)}, nil
}

// Stdin sends bytes for the command's stdin.
func (s *Session) Stdin(p []byte) error { return s.w.Frame(attach.FrameStdin, p) }

// CloseStdin says that stdin ended.
func (s *Session) CloseStdin() error { return s.w.Frame(attach.FrameStdinEOF, nil) }

// Control sends a terminal size or a signal.
func (s *Session) Control(c apitype.Control) error { return s.w.JSON(attach.FrameControl, c) }

// Close ends the session; a run still going is killed.
func (s *Session) Close() error { return s.conn.Close() }

// Events are what Wait reports as the run goes on.
type Events struct {
	// Stdout and Stderr get the output as it comes.
	Stdout, Stderr io.Writer
	// Started is called once the command started, with its record so far.
	Started func(apitype.RunRecord)
}

// Wait reads the run's frames until its result, which it returns: the
// reply, or the run's error as an *Error (Refused for a refusal).
func (s *Session) Wait(ev Events) (*apitype.RunReply, error) {
	for {
		typ, payload, err := s.r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, errors.New("the engine closed the connection before the run ended")
			}
			return nil, fmt.Errorf("reading the run's frames: %w", err)
		}
		switch typ {
		case attach.FrameStdout:
			if ev.Stdout != nil {
				_, _ = ev.Stdout.Write(payload)
			}
		case attach.FrameStderr:
			if ev.Stderr != nil {
				_, _ = ev.Stderr.Write(payload)
			}
		case attach.FrameStarted:
			var rec apitype.RunRecord
			if ev.Started != nil && json.Unmarshal(payload, &rec) == nil {
				ev.Started(rec)
			}
		case attach.FrameResult:
			var out struct {
				Result *apitype.RunReply `json:"result"`
				Error  *json.RawMessage  `json:"error"`
			}
			if err := json.Unmarshal(payload, &out); err != nil {
				return nil, fmt.Errorf("reading the run's result: %w", err)
			}
			if out.Error != nil {
				e := &Error{}
				_ = json.Unmarshal(*out.Error, e)
				switch {
				case e.Refused:
					e.Status = http.StatusForbidden
				case e.Field != "":
					e.Status = http.StatusBadRequest
				default:
					e.Status = http.StatusInternalServerError
				}
				return nil, e
			}
			if out.Result == nil {
				return nil, errors.New("the run's result is empty")
			}
			return out.Result, nil
		}
	}
}

// AgentShellCheck asks what the agent shell would do in projectDir now:
// the isolation ("none" with the switch off), or the refusal as an
// *Error with Refused set.
func (c *Client) AgentShellCheck(ctx context.Context, projectDir string) (string, error) {
	var out struct {
		Isolation string `json:"isolation"`
	}
	err := c.Do(ctx, http.MethodPost, "/agent-shell/check", nil, map[string]string{"projectDir": projectDir}, &out)
	return out.Isolation, err
}

// Integrations reads where the agent integrations are installed.
func (c *Client) Integrations(ctx context.Context) ([]agentshell.Integration, error) {
	var out struct {
		Integrations []agentshell.Integration `json:"integrations"`
	}
	return out.Integrations, c.Do(ctx, http.MethodGet, "/integrations", nil, nil, &out)
}
