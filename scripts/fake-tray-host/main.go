// Command fake-tray-host stands in for a desktop's tray host in
// scripts/test-desktop.sh.
//
// It runs a StatusNotifierWatcher (the service a desktop's tray host runs)
// on the session bus of its environment, so that the desktop app sees a tray
// host. It prints "ready" once it owns the name, and every item that
// registers, and runs until it is killed.
package main

import (
	"fmt"
	"os"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
)

type watcher struct{}

func (watcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	fmt.Printf("registered %s %s\n", sender, service)
	return nil
}

func (watcher) RegisterStatusNotifierHost(string) *dbus.Error { return nil }

func main() {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-tray-host:", err)
		os.Exit(1)
	}
	const path, iface = "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"
	if err := conn.Export(watcher{}, path, iface); err != nil {
		fmt.Fprintln(os.Stderr, "fake-tray-host:", err)
		os.Exit(1)
	}
	if _, err := prop.Export(conn, path, prop.Map{iface: {
		"RegisteredStatusNotifierItems":  {Value: []string{}, Emit: prop.EmitTrue},
		"IsStatusNotifierHostRegistered": {Value: true, Emit: prop.EmitTrue},
		"ProtocolVersion":                {Value: int32(0), Emit: prop.EmitTrue},
	}}); err != nil {
		fmt.Fprintln(os.Stderr, "fake-tray-host:", err)
		os.Exit(1)
	}
	if reply, err := conn.RequestName(iface, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		fmt.Fprintln(os.Stderr, "fake-tray-host: could not own", iface, err)
		os.Exit(1)
	}
	fmt.Println("ready")
	select {}
}
