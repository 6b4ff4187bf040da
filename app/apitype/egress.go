package apitype

import (
	"fmt"
	"strings"
	"time"
)

// Kinds of refusal (Refusal.Kind).
const (
	RefusedConnect = "connect"
	RefusedHTTP    = "http"
	RefusedSecret  = "secret"
	RefusedUnix    = "unix"
	RefusedWrite   = "write"
	RefusedMore    = "more"
)

// Refusal is one thing a run's sandbox was refused while the run went:
// what, the rule that refused it and how to allow it.
type Refusal struct {
	// Kind is connect, http, secret, unix, write, or more (how many
	// more were refused than a run keeps).
	Kind string `json:"kind"`
	// Host and Port: a connection's or a request's target.
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	// Method and Path: a request's.
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// Target is a Unix socket's path or a refused write's path.
	Target string `json:"target,omitempty"`
	// Rule says what refused it.
	Rule string `json:"rule"`
	// Allow says how to allow it; empty when nothing may (the engine's
	// own API, this machine's private addresses).
	Allow string `json:"allow,omitempty"`
	// Count is how many times it was refused during the run.
	Count int `json:"count"`
}

// Line is the refusal in one line, for a terminal or an agent.
func (r Refusal) Line() string {
	var what string
	switch r.Kind {
	case RefusedHTTP, RefusedSecret:
		what = fmt.Sprintf("%s %s %s%s", r.Kind, r.Method, joinHostPort(r.Host, r.Port), r.Path)
	case RefusedUnix, RefusedWrite:
		what = r.Kind + " " + r.Target
	case RefusedMore:
		return r.Rule
	default:
		what = r.Kind + " " + joinHostPort(r.Host, r.Port)
	}
	line := what + ": " + r.Rule
	if r.Count > 1 {
		line += fmt.Sprintf(" (%d times)", r.Count)
	}
	if r.Allow != "" {
		line += "; to allow it: " + r.Allow
	}
	return line
}

func joinHostPort(host string, port int) string {
	switch {
	case port == 0:
		return host
	case strings.Contains(host, ":"):
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// SecretSpec is what the owner gives to add a secret (its value apart).
type SecretSpec struct {
	Name string `json:"name"`
	// Hosts are the only hosts its value is sent to: HOST[:PORT] (443
	// without a port), "*.name" for the name and its subdomains.
	Hosts []string `json:"hosts"`
	// Header is the request header its placeholder is replaced in; ""
	// replaces it anywhere in the request head.
	Header string `json:"header,omitempty"`
	// Format, with Header, is the header's whole value once the
	// placeholder is in it, "{}" standing for the value ("Bearer {}").
	Format string `json:"format,omitempty"`
}

// SecretInfo is a secret as the API shows it: never its value.
type SecretInfo struct {
	Name   string   `json:"name"`
	Hosts  []string `json:"hosts"`
	Header string   `json:"header,omitempty"`
	Format string   `json:"format,omitempty"`
	// Where is keyring (the desktop keyring, through the Secret
	// Service) or store (sealed in the engine's store).
	Where     string    `json:"where"`
	CreatedAt time.Time `json:"createdAt"`
	RotatedAt time.Time `json:"rotatedAt,omitzero"`
	// Env is the variable its placeholder is in inside a sandbox.
	Env string `json:"env"`
	// UsedBy are the sandboxes that ask for it.
	UsedBy []SandboxRef `json:"usedBy"`
}

// SandboxRef names a sandbox.
type SandboxRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// SecretsReply lists the secrets.
type SecretsReply struct {
	Secrets []SecretInfo `json:"secrets"`
}

// AddSecretBody adds a secret: its spec and its value, which is stored
// and never answered.
type AddSecretBody struct {
	SecretSpec
	Value string `json:"value"`
}

// RotateSecretBody is a secret's new value.
type RotateSecretBody struct {
	Value string `json:"value"`
}
