package daemon

import "errors"

// ownExecutable: the Landlock helper is Linux's; nothing is started by
// it elsewhere.
func ownExecutable(string) error { return errors.New("not on Windows") }
