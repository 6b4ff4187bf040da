// Package desktop is SenClaw Sandbox's desktop shell: the dashboard window
// (Wails), the tray icon and menu (fyne.io/systray) and desktop
// notifications (org.freedesktop.Notifications over D-Bus).
//
// It is a thin face of the engine. main hands it the API server as an
// http.Handler, which the window's asset server calls in process, and a
// client of the API, through which the tray and the notifications read the
// engine's state and change the policy exactly as the dashboard and the CLI
// do. Only this package imports Wails and systray; the window, which needs
// cgo and GTK, is built only with the "desktop" build tag, while the tray
// and the notifications are plain Go and tested without a display.
package desktop
