//go:build desktop

package desktop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
	wailsruntime "github.com/wailsapp/wails/v2/pkg/runtime"
)

// Options configure the desktop app: the window, the tray and the
// notifications.
type Options struct {
	// Handler answers every request of the window, the page, its files
	// and /api/: the API server, called in process (see InprocHandler).
	Handler http.Handler
	// Tray configures the tray and the notifications. Run sets its
	// OpenDashboard and Quit.
	Tray TrayOptions
	// Icon is the window's icon (PNG).
	Icon   []byte
	Logger *slog.Logger
}

// ErrNoDisplay is returned by Run when GTK cannot open a display.
var ErrNoDisplay = errors.New("GTK could not open a display")

// Run shows the dashboard window and the tray, and returns when the app
// quits: Quit in the tray, or ctx's end (SIGTERM, `senclaw stop`). Closing
// the window only hides it when a tray host shows the icon, whose Open
// dashboard shows the window again; with no tray host it quits. Run must
// be called on the main goroutine (GTK's thread).
func Run(ctx context.Context, o Options) (err error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	shuttingDown := make(chan struct{}) // closed when the GTK loop has ended
	var shutdownOnce sync.Once

	var (
		mu       sync.Mutex
		windowCx context.Context
		stopTray = func() {}
	)
	show := func() {
		mu.Lock()
		wc := windowCx
		mu.Unlock()
		if wc != nil {
			wailsruntime.WindowShow(wc)
			wailsruntime.WindowUnminimise(wc)
		}
	}
	// Wails turns a failed gtk_init_check into a panic before any window
	// exists; it is the one panic that means "no display".
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok && strings.Contains(e.Error(), "failed to init GTK") {
				err = ErrNoDisplay
				return
			}
			panic(r)
		}
	}()
	// Closing the window hides it when the tray can bring it back, and
	// quits the app when there is no tray host to show the icon.
	hideOnClose := trayHostPresent(o.Tray.BusAddress)
	if !hideOnClose {
		o.Logger.Warn("No tray host (StatusNotifierWatcher) on the session bus: the tray icon shows nowhere, so closing the window quits the app.")
	}
	err = wails.Run(&options.App{
		Title:             "SenClaw Sandbox",
		Width:             1200,
		Height:            820,
		MinWidth:          640,
		MinHeight:         480,
		HideWindowOnClose: hideOnClose,
		BackgroundColour:  &options.RGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff},
		AssetServer:       &assetserver.Options{Handler: InprocHandler(o.Handler)},
		Logger:            wailsLogger{o.Logger},
		Linux: &linux.Options{
			Icon:        o.Icon,
			ProgramName: "senclaw",
			// The dashboard is a plain page: software rendering is
			// plenty, and it keeps the WebKit web process about 100 MiB
			// smaller than GPU compositing (measured under Xvfb).
			WebviewGpuPolicy: linux.WebviewGpuPolicyNever,
		},
		OnStartup: func(wc context.Context) {
			mu.Lock()
			windowCx = wc
			mu.Unlock()
			// Quit when ctx ends. On SIGTERM Wails quits by itself, and a
			// second gtk_main_quit after the loop ended is a GTK
			// assertion, so wait a moment to see whether the loop is
			// ending anyway. A quit before gtk_main runs is lost, so it is
			// repeated until the loop ends.
			go func() {
				<-ctx.Done()
				for {
					select {
					case <-shuttingDown:
						return
					case <-time.After(300 * time.Millisecond):
					}
					wailsruntime.Quit(wc)
					select {
					case <-shuttingDown:
						return
					case <-time.After(2 * time.Second):
					}
				}
			}()
			to := o.Tray
			to.OpenDashboard, to.Quit = show, cancel
			if to.Logger == nil {
				to.Logger = o.Logger
			}
			stop, err := StartTray(ctx, to)
			if err != nil {
				o.Logger.Warn("No tray icon: the window stays the only way in; closing it keeps the app running until SIGTERM or `senclaw stop`.", "err", err)
			}
			mu.Lock()
			stopTray = stop
			mu.Unlock()
		},
		OnShutdown: func(context.Context) {
			shutdownOnce.Do(func() { close(shuttingDown) })
			cancel()
			mu.Lock()
			stop := stopTray
			mu.Unlock()
			stop()
		},
	})
	if err != nil {
		return fmt.Errorf("running the window: %w", err)
	}
	return nil
}

// wailsLogger sends Wails's log lines to slog.
type wailsLogger struct{ log *slog.Logger }

func (l wailsLogger) Print(m string)   { l.log.Info(m, "from", "wails") }
func (l wailsLogger) Trace(m string)   { l.log.Debug(m, "from", "wails") }
func (l wailsLogger) Debug(m string)   { l.log.Debug(m, "from", "wails") }
func (l wailsLogger) Info(m string)    { l.log.Info(m, "from", "wails") }
func (l wailsLogger) Warning(m string) { l.log.Warn(m, "from", "wails") }
func (l wailsLogger) Error(m string)   { l.log.Error(m, "from", "wails") }
func (l wailsLogger) Fatal(m string)   { l.log.Error(m, "from", "wails") }
