// Package desktop is the desktop app's face: the dashboard window, the tray
// and notifications.
//
// The window is Wails, the tray icon and menu fyne.io/systray, and the
// notifications org.freedesktop.Notifications over D-Bus.
//
// It is a thin face of the engine. The tray and the notifications live in
// the app's main process, beside the engine, and read its state and change
// the policy through a client of the API, exactly as the dashboard and the
// CLI do. The window is a process of its own (WindowProcess starts the
// senclaw-window executable, whose main calls RunWindow), whose asset
// server hands every request to the engine's Unix socket; it exists only
// while the window is open. Only this package imports Wails and systray; the window, which needs
// cgo and GTK, is built only with the "desktop" build tag, while the tray
// and the notifications are plain Go and tested without a display.
package desktop
