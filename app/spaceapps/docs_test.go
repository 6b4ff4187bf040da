package spaceapps

import (
	"testing"

	"github.com/senclaw/sandbox/internal/doccheck"
)

// TestDocsManifestParses: the manifest docs/space-apps.md shows (its
// block marked run: TestDocsManifestParses) is one the engine takes.
func TestDocsManifestParses(t *testing.T) {
	t.Parallel()
	root, err := doccheck.Root()
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := doccheck.RunBy(root, "TestDocsManifestParses")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatal("no block of the docs is marked <!-- run: TestDocsManifestParses -->")
	}
	for _, b := range blocks {
		m, err := ParseManifest([]byte(b.Text))
		if err != nil {
			t.Errorf("%s: the manifest is refused: %v", b.Where(), err)
			continue
		}
		if m.ID != "notes" || m.Runtime.HealthPath != "/health" {
			t.Errorf("%s: the manifest is not the example app's: %+v", b.Where(), m)
		}
	}
}
