// Package frontend embeds the built dashboard into the binary.
//
// The dashboard is frontend/dist, made by `npm run build` with Vite.
package frontend

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist returns the built dashboard, or nil when the binary was built
// without it (dist holds only its placeholder).
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil
	}
	if _, err := fs.Stat(sub, "index.html"); err != nil {
		return nil
	}
	return sub
}
