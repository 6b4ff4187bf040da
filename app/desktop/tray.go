package desktop

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"fyne.io/systray"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/browser"
	"github.com/senclaw/sandbox/app/client"
)

// policySwitch is one enforcement switch of the tray menu.
type policySwitch struct {
	label, tooltip string
	get            func(*app.ExecPolicy) bool
	set            func(*app.ExecPolicy, bool)
}

// policySwitches are the switches the tray shows, in the dashboard's order.
func policySwitches() []policySwitch {
	return []policySwitch{
		{"Agent shell", "On: the shell commands of the agents handed to senclaw (senclaw integrate) run sandboxed in their project. Off: directly on this machine, recorded as none.",
			func(p *app.ExecPolicy) bool { return p.ExecShell }, func(p *app.ExecPolicy, v bool) { p.ExecShell = v }},
		{"Scheduler scripts", "On: scheduler scripts run sandboxed. Off: directly on this machine.",
			func(p *app.ExecPolicy) bool { return p.SchedulerScript }, func(p *app.ExecPolicy, v bool) { p.SchedulerScript = v }},
		{"Run Python", "Off refuses every Python code run.",
			func(p *app.ExecPolicy) bool { return p.RunPython }, func(p *app.ExecPolicy, v bool) { p.RunPython = v }},
		{"Run Node", "Off refuses every Node code run.",
			func(p *app.ExecPolicy) bool { return p.RunNode }, func(p *app.ExecPolicy, v bool) { p.RunNode = v }},
	}
}

// callTimeout bounds an API call made from a menu click.
const callTimeout = 10 * time.Second

// tray is the tray icon and its menu. systray keeps its state in package
// variables, so there is at most one tray per process.
type tray struct {
	client   *client.Client
	log      *slog.Logger
	open     func()
	openAt   func(anchor string)
	quit     func()
	changed  func() // asks the watcher for a poll after a change
	switches []policySwitch

	mu       sync.Mutex
	status   *systray.MenuItem
	apps     *systray.MenuItem // opens the dashboard at the Space Apps card
	appsText string
	items    []*systray.MenuItem // one per switch
	login    *systray.MenuItem   // Start at login
	level    Level
	text     string
	built    bool
	lastSnap *Snapshot
}

// build adds the menu items and starts listening to their clicks. systray
// calls it (through onReady) once the tray is registered.
func (t *tray) build(ctx context.Context) {
	systray.SetTitle("SenClaw Sandbox")
	t.mu.Lock()
	t.status = systray.AddMenuItem("SenClaw Sandbox: starting…", "What this machine can isolate with")
	t.status.Disable()
	open := systray.AddMenuItem("Open dashboard", "Show the dashboard window")
	browse := systray.AddMenuItem("Open in browser", "Open the dashboard in your web browser, logged in once (an owner-only login page: the code is on no command line)")
	t.apps = systray.AddMenuItem(appsMenuLabel(nil), "Open the dashboard at the Space Apps card")
	t.appsText = appsMenuLabel(nil)
	systray.AddSeparator()
	for _, sw := range t.switches {
		item := systray.AddMenuItemCheckbox(sw.label, sw.tooltip, false)
		t.items = append(t.items, item)
		go t.onClick(ctx, item, func() { t.toggle(ctx, sw, item) })
	}
	systray.AddSeparator()
	t.login = systray.AddMenuItemCheckbox("Start at login", "Start SenClaw Sandbox when you log in (~/.config/autostart/senclaw.desktop)", false)
	t.login.Disable() // until a snapshot says what is on disk
	login := t.login
	stopAll := systray.AddMenuItem("Stop all sandboxes", "Kill every process of every sandbox")
	systray.AddSeparator()
	quit := systray.AddMenuItem("Quit", "Stop SenClaw Sandbox: the engine, the tray and the window")
	t.built = true
	snap := t.lastSnap
	t.mu.Unlock()

	go t.onClick(ctx, open, t.open)
	go t.onClick(ctx, browse, func() { t.openInBrowser(ctx) })
	go t.onClick(ctx, login, func() { t.toggleLogin(ctx) })
	go t.onClick(ctx, t.apps, func() { t.openAt(SpaceAppsAnchor) })
	go t.onClick(ctx, stopAll, func() { t.stopAll(ctx) })
	go t.onClick(ctx, quit, t.quit)
	if snap != nil {
		t.apply(ctx, *snap)
	}
}

// onClick runs fn for each click on item until ctx ends. systray drops a
// click when nobody waits on the channel, so the work runs on its own
// goroutine and this one goes straight back to waiting.
func (t *tray) onClick(ctx context.Context, item *systray.MenuItem, fn func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-item.ClickedCh:
			if !ok {
				return
			}
			go fn()
		}
	}
}

// apply shows a snapshot: the icon, the status line and the switches.
func (t *tray) apply(_ context.Context, s Snapshot) {
	st := statusOf(s)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastSnap = &s
	if !t.built {
		return
	}
	if st.Level != t.level {
		systray.SetIcon(trayIcon(st.Level))
		t.level = st.Level
	}
	if st.Text != t.text {
		systray.SetTooltip("SenClaw Sandbox: " + st.Text)
		t.status.SetTitle(st.Text)
		t.text = st.Text
	}
	switch st := s.StartAtLogin; {
	case st == nil || st.Foreign:
		// Nothing to manage, or an entry senclaw leaves alone.
		t.login.Disable()
	default:
		t.login.Enable()
		if st.Enabled != t.login.Checked() {
			if st.Enabled {
				t.login.Check()
			} else {
				t.login.Uncheck()
			}
		}
	}
	if label := appsMenuLabel(s.Apps); label != t.appsText {
		t.apps.SetTitle(label)
		t.appsText = label
	}
	if s.Policy == nil {
		return
	}
	for i, sw := range t.switches {
		if on := sw.get(s.Policy); on != t.items[i].Checked() {
			if on {
				t.items[i].Check()
			} else {
				t.items[i].Uncheck()
			}
		}
	}
}

// toggle flips one switch through the API. The new value is the opposite
// of what the menu showed, which is what the user meant to change, even
// if the policy changed elsewhere since the last poll.
func (t *tray) toggle(ctx context.Context, sw policySwitch, item *systray.MenuItem) {
	t.mu.Lock()
	want := !item.Checked()
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	p, err := t.client.Policy(ctx)
	if err == nil {
		sw.set(p, want)
		_, err = t.client.SetPolicy(ctx, *p)
	}
	if err != nil {
		t.log.Warn("The tray could not change a switch.", "switch", sw.label, "on", want, "err", err)
	} else {
		t.log.Info("The tray changed a switch.", "switch", sw.label, "on", want)
	}
	t.changed()
}

// openInBrowser opens the dashboard in the browser through an owner-only
// login page the engine writes (browser.Open gets its path, never a URL
// with the code).
func (t *tray) openInBrowser(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	file, err := t.client.LoginPage(ctx)
	if err == nil {
		err = browser.Open(file)
	}
	if err != nil {
		t.log.Warn("The tray could not open the dashboard in a browser.", "err", err)
		return
	}
	t.log.Info("The tray opened the dashboard's login page in the browser.", "page", file)
}

// toggleLogin writes or removes the login autostart entry, the opposite
// of what the menu showed.
func (t *tray) toggleLogin(ctx context.Context) {
	t.mu.Lock()
	want := !t.login.Checked()
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := t.client.SetAutostart(ctx, want); err != nil {
		t.log.Warn("The tray could not change Start at login.", "on", want, "err", err)
	} else {
		t.log.Info("The tray changed Start at login.", "on", want)
	}
	t.changed()
}

func (t *tray) stopAll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	n, err := t.client.StopAll(ctx)
	if err != nil {
		t.log.Warn("The tray could not stop the sandboxes.", "err", err)
		return
	}
	t.log.Info("The tray stopped every sandbox.", "stopped", n)
	t.changed()
}

// SpaceAppsAnchor is the dashboard's Space Apps card (#space-apps).
const SpaceAppsAnchor = "space-apps"

// appsMenuLabel is the Space Apps menu item: it says how many want
// attention.
func appsMenuLabel(apps []AppAlert) string {
	switch n := len(apps); n {
	case 0:
		return "Space Apps"
	case 1:
		return "Space Apps: 1 needs attention"
	default:
		return fmt.Sprintf("Space Apps: %d need attention", n)
	}
}
