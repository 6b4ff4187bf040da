// Package mcp is the engine's MCP face: the 22 sbx_* tools for agent
// clients.
//
// It serves them over stdio (`senclaw sandbox-server`) and over Streamable
// HTTP. It is a client of the running engine's API, like the CLI: it keeps
// no state of its own (no process registry, no database), so what an agent
// starts is what the dashboard shows, and every run goes through the
// engine's single gate.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app/client"
)

// Options configure the MCP server.
type Options struct {
	// Client reaches the engine.
	Client *client.Client
	// Redial, when set, is called once when the engine stops answering
	// (nothing listens on its socket any more); it returns a client of a
	// new engine, starting one if need be. Only requests that never reached
	// the engine are retried.
	Redial func(ctx context.Context) (*client.Client, error)
	// Version is reported to MCP clients.
	Version string
	Logger  *slog.Logger
}

// server holds what the tool handlers share.
type server struct {
	opts Options
	mu   sync.Mutex
	c    *client.Client
}

// New returns an MCP server exposing the sbx_* tools. Connect it to a
// transport with its Run or Connect method, or use ServeStdio.
func New(opts Options) *sdk.Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &server{opts: opts, c: opts.Client}
	srv := sdk.NewServer(&sdk.Implementation{Name: "senclaw-sandbox", Title: "SenClaw Sandbox", Version: opts.Version}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       opts.Logger,
	})
	srv.AddReceivingMiddleware(s.gate)
	s.addRunTools(srv)
	s.addSandboxTools(srv)
	s.addFileTools(srv)
	s.addRuleTools(srv)
	s.addSecurityTools(srv)
	return srv
}

// ServeStdio serves the tools on this process's stdin and stdout until the
// client disconnects or ctx ends; both are a normal end.
func ServeStdio(ctx context.Context, opts Options) error {
	err := New(opts).Run(ctx, &sdk.StdioTransport{})
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// instructions is what an MCP client may show the model about the server.
const instructions = `SenClaw runs code and shell commands inside an operating-system sandbox on this machine.
For one calculation or script, use sbx_run (a throwaway sandbox). For multi-step work that keeps files or installed packages, create a sandbox with sbx_create, then sbx_file_write, sbx_run_in / sbx_exec, sbx_install, and sbx_delete when done.
Network is off unless asked for. Read the "note" of every answer: it says what the backend could not enforce. Never ask for backend "direct": it runs without isolation and is refused unless a person allowed it.`

// client returns the current engine client.
func (s *server) client() *client.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// call runs fn against the engine. When the engine's socket does not
// answer at all and Redial is set, it reconnects (the daemon may have been
// restarted) and tries once more: a refused dial means the request never
// reached an engine, so it is safe to repeat.
func call[T any](ctx context.Context, s *server, fn func(*client.Client) (T, error)) (T, error) {
	c := s.client()
	out, err := fn(c)
	if err != nil && notListening(err) && s.opts.Redial != nil {
		nc, rerr := s.opts.Redial(ctx)
		if rerr != nil {
			return out, fmt.Errorf("the senclaw engine does not answer and could not be restarted: %w", rerr)
		}
		s.mu.Lock()
		s.c = nc
		s.mu.Unlock()
		out, err = fn(nc)
	}
	if err != nil && client.IsUnavailable(err) {
		return out, fmt.Errorf("the senclaw engine does not answer (start it with `senclaw serve`): %w", err)
	}
	// A *client.Error's text is the API's {"error"} message, unchanged.
	return out, err
}

// notListening reports whether err is a failed dial: nothing reached the
// engine.
func notListening(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && ne.Op == "dial"
}
