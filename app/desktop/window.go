//go:build desktop

package desktop

import (
	"context"
	"encoding/json"
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

// WindowOptions configure the dashboard window.
type WindowOptions struct {
	// Handler answers every request of the window, the page, its files
	// and /api/ (see InprocHandler).
	Handler http.Handler
	// Show brings the window to the front each time it receives (the
	// tray's Open dashboard, passed on by the app's main process).
	Show <-chan struct{}
	// GoTo brings it to the front at a card of the dashboard (an anchor,
	// e.g. "space-apps": the tray's Space Apps item).
	GoTo <-chan string
	// Icon is the window's icon (PNG).
	Icon   []byte
	Logger *slog.Logger
}

// ErrNoDisplay is returned by RunWindow when GTK cannot open a display.
var ErrNoDisplay = errors.New("GTK could not open a display")

// RunWindow shows the dashboard window and returns when it closes: the
// person closes it, or ctx ends (SIGTERM from the app's main process, or
// its Quit). The window is a process of its own (see WindowProcess), so
// closing it gives back everything GTK and WebKit hold. RunWindow must be
// called on the main goroutine (GTK's thread).
func RunWindow(ctx context.Context, o WindowOptions) (err error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	shuttingDown := make(chan struct{}) // closed when the GTK loop has ended
	var nav navigation
	var shutdownOnce sync.Once
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
	err = wails.Run(&options.App{
		Title:            "SenClaw Sandbox",
		Width:            1200,
		Height:           820,
		MinWidth:         640,
		MinHeight:        480,
		BackgroundColour: &options.RGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff},
		AssetServer:      &assetserver.Options{Handler: o.Handler},
		Logger:           wailsLogger{o.Logger},
		Linux: &linux.Options{
			Icon:        o.Icon,
			ProgramName: "senclaw",
			// The dashboard is a plain page: software rendering is
			// plenty, and it keeps the WebKit web process about 100 MiB
			// smaller than GPU compositing (measured under Xvfb).
			WebviewGpuPolicy: linux.WebviewGpuPolicyNever,
		},
		OnStartup: func(wc context.Context) {
			go func() {
				for {
					select {
					case <-o.Show:
						wailsruntime.WindowShow(wc)
						wailsruntime.WindowUnminimise(wc)
					case anchor := <-o.GoTo:
						nav.set(anchor)
						wailsruntime.WindowShow(wc)
						wailsruntime.WindowUnminimise(wc)
						if nav.loaded() {
							wailsruntime.WindowExecJS(wc, hashJS(anchor))
						}
					case <-ctx.Done():
						return
					}
				}
			}()
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
		},
		OnDomReady: func(wc context.Context) {
			// An anchor asked for before the page was there.
			if anchor := nav.ready(); anchor != "" {
				wailsruntime.WindowExecJS(wc, hashJS(anchor))
			}
		},
		OnShutdown: func(context.Context) {
			shutdownOnce.Do(func() { close(shuttingDown) })
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

// navigation keeps an anchor asked for until the page can take it.
type navigation struct {
	mu      sync.Mutex
	pending string
	isReady bool
}

func (n *navigation) set(anchor string) {
	n.mu.Lock()
	if !n.isReady {
		n.pending = anchor
	}
	n.mu.Unlock()
}

func (n *navigation) loaded() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.isReady
}

// ready marks the page loaded and returns the anchor that waited for it.
func (n *navigation) ready() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.isReady = true
	a := n.pending
	n.pending = ""
	return a
}

// hashJS moves the page to anchor; the anchor is quoted as a JSON string.
func hashJS(anchor string) string {
	q, _ := json.Marshal("#" + anchor)
	return "location.hash = " + string(q) + ";"
}
