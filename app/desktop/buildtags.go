//go:build desktop && !production && !dev

package desktop

// Wails builds a window only with its "production" (or "dev") tag; without
// it, wails.Run fails at run time. Fail at build time instead, naming the
// tags to use.
var _ = build_the_desktop_app_with_tags_desktop_production_webkit2_41
