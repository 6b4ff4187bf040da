// Package browser opens a file in the user's web browser, never with a secret on a command line.
//
// A command line is public: every user of the machine reads it in
// /proc/PID/cmdline (ps). So a login reaches the browser as the path of
// an owner-only page that holds the one-time code (the engine writes it,
// api's login pages), as Jupyter does, and only that path is handed to
// the system's opener.
package browser

import (
	"fmt"
	"os/exec"
	"runtime"
)

// opener is the system's program that opens a file in the user's
// browser, and its arguments before the file.
func opener() (string, []string) {
	switch runtime.GOOS {
	case "darwin":
		return "open", nil
	case "windows":
		return "rundll32", []string{"url.dll,FileProtocolHandler"}
	default:
		return "xdg-open", nil
	}
}

// Open starts the system's opener on path (a file whose name holds no
// secret) and does not wait for it: some openers run the browser in the
// foreground.
func Open(path string) error {
	name, args := opener()
	prog, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("no %s to open a browser with (%v)", name, err)
	}
	cmd := exec.Command(prog, append(args, path)...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
