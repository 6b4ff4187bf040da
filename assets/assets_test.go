package assets

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/senclaw/sandbox/assets/internal/icons"
)

// TestIconsUpToDate checks that the committed PNGs are what the generator
// draws, so that a change to the shapes is not forgotten (go generate
// ./assets rewrites them).
func TestIconsUpToDate(t *testing.T) {
	t.Parallel()
	for _, ic := range icons.All() {
		t.Run(filepath.Base(ic.File), func(t *testing.T) {
			t.Parallel()
			got, err := os.ReadFile(filepath.Join("..", ic.File))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, icons.PNG(ic)) {
				t.Fatalf("%s is stale: run go generate ./assets", ic.File)
			}
			img, err := png.Decode(bytes.NewReader(got))
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != ic.Size || b.Dy() != ic.Size {
				t.Fatalf("%s is %v, want %dx%d", ic.File, b, ic.Size, ic.Size)
			}
		})
	}
}

func TestTrayIconsEmbedded(t *testing.T) {
	t.Parallel()
	for name, b := range map[string][]byte{"isolated": TrayIsolated(), "degraded": TrayDegraded(), "attention": TrayAttention(), "app": AppIcon()} {
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
