package api

import (
	"net/http"
	"slices"
	"testing"

	"github.com/senclaw/sandbox/app/principal"
)

// TestTheScopeTableIsTheServedRoutes: every route the server serves has
// its row in app/principal/table.json (a route without one panics when
// the server is built), and the table names no route that is not served.
func TestTheScopeTableIsTheServedRoutes(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	s.MountMCP(http.NotFoundHandler())
	served := slices.Clone(s.guarded)
	slices.Sort(served)
	if want := principal.Patterns(); !slices.Equal(served, want) {
		for _, p := range want {
			if !slices.Contains(served, p) {
				t.Errorf("the table names %s, which is not served", p)
			}
		}
		for _, p := range served {
			if !slices.Contains(want, p) {
				t.Errorf("%s is served and not in the table", p)
			}
		}
	}
}
