package api

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
)

// FuzzDecodeBodies feeds arbitrary bytes to the decoder of every request
// body type: it must answer with an error or a value, never panic.
func FuzzDecodeBodies(f *testing.F) {
	for _, seed := range []string{`{}`, `{"name":"x","cpus":1.5,"mounts":[{"source":"/a"}]}`, `{"command":"echo","env":{"A":"b"}}`, `[]`, `null`, `{"listen":[1,2]}`, `{"fsMode":7}`, `{"a":1}{"b":2}`, "\xff\xfe"} {
		f.Add([]byte(seed))
	}
	targets := []func() any{
		func() any { return &app.SandboxConfig{} },
		func() any { return &runBody{} },
		func() any { return &runOnceBody{} },
		func() any { return &fileBody{} },
		func() any { return &backends.Mount{} },
		func() any { return &app.AgentShellRequest{} },
		func() any { return &app.Settings{} },
		func() any { return &app.ExecPolicy{} },
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, target := range targets {
			r := httptest.NewRequest("POST", "/x", bytes.NewReader(body))
			_ = decode(r, target())
		}
	})
}
