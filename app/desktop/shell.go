package desktop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"fyne.io/systray"
	"github.com/godbus/dbus/v5"

	"github.com/senclaw/sandbox/app/client"
)

// TrayOptions configure the tray and the notifications.
type TrayOptions struct {
	// Client reaches the engine's API; the tray reads and changes the
	// engine only through it.
	Client *client.Client
	// BusAddress is the D-Bus session bus, the one in the process's
	// environment (systray dials that one itself). "" means there is
	// none: no tray and no notifications, and nothing else changes.
	BusAddress string
	// Notifications turns desktop notifications on. The engine's
	// "notifications" setting, when the engine has one, wins.
	Notifications bool
	// NotifyEvery is the least time between two notifications of one
	// kind (default one minute).
	NotifyEvery time.Duration
	// PollInterval is how often the engine is polled (default 2 s).
	PollInterval time.Duration
	// OpenDashboard shows the dashboard (the menu item and a left click
	// on the icon); Quit stops the whole app (the menu item).
	OpenDashboard func()
	Quit          func()
	// OpenDashboardAt shows the dashboard at a card (the Space Apps menu
	// item, SpaceAppsAnchor); nil falls back to OpenDashboard.
	OpenDashboardAt func(anchor string)
	Logger          *slog.Logger
	// Now is the clock of the rate limit; nil means time.Now.
	Now func() time.Time
}

// ErrNoSessionBus is returned by StartTray when there is no session bus.
var ErrNoSessionBus = errors.New("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset and there is no bus socket in the runtime dir)")

// StartTray shows the tray icon and starts the notifications, polling the
// engine until stop is called. It can run once per process (systray's
// state is global). Without a session bus it returns ErrNoSessionBus and
// a stop that does nothing; the caller logs it and goes on.
func StartTray(ctx context.Context, o TrayOptions) (stop func(), err error) {
	noop := func() {}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.BusAddress == "" {
		return noop, ErrNoSessionBus
	}
	conn, err := dbus.Connect(o.BusAddress)
	if err != nil {
		return noop, fmt.Errorf("connecting to the session bus %s: %w", o.BusAddress, err)
	}
	if o.NotifyEvery <= 0 {
		o.NotifyEvery = time.Minute
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	for _, fn := range []*func(){&o.OpenDashboard, &o.Quit} {
		if *fn == nil {
			*fn = noop
		}
	}
	if o.OpenDashboardAt == nil {
		open := o.OpenDashboard
		o.OpenDashboardAt = func(string) { open() }
	}
	ctx, cancel := context.WithCancel(ctx)
	w := newWatcher(o.Client, o.PollInterval, o.Logger)
	t := &tray{client: o.Client, log: o.Logger, open: o.OpenDashboard, openAt: o.OpenDashboardAt, quit: o.Quit, changed: w.pollNow, switches: policySwitches()}
	bus := newBusNotifier(conn, trayIcon)
	n := &notifications{limit: newRateLimit(o.NotifyEvery, o.Now), send: bus.Send, on: o.Notifications, log: o.Logger}
	w.listen = append(w.listen, t.apply, n.handle)

	systray.SetIcon(trayIcon(LevelDegraded))
	systray.SetTooltip("SenClaw Sandbox")
	systray.SetOnTapped(o.OpenDashboard)
	start, end := systray.RunWithExternalLoop(func() { t.build(ctx) }, nil)
	start()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.run(ctx)
	}()
	o.Logger.Info("The tray is up.", "bus", o.BusAddress)
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			endTray(end, o.Logger)
			conn.Close()
		})
	}, nil
}

// endTray ends systray. systray's end closes the D-Bus connection it
// opened and panics when it never got one (the bus refused the tray's
// exports); the app must still quit cleanly then.
func endTray(end func(), log *slog.Logger) {
	defer func() {
		if r := recover(); r != nil {
			log.Warn("The tray did not shut down cleanly.", "panic", r)
		}
	}()
	end()
}
