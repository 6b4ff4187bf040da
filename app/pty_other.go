//go:build !linux

package app

import (
	"errors"
	"os"
)

func openTerminal(cols, rows uint16) (master, slave *os.File, err error) {
	return nil, nil, errors.New("terminals for runs are implemented on Linux only")
}

func resizeTerminal(master *os.File, cols, rows uint16) error {
	return errors.New("terminals for runs are implemented on Linux only")
}

// terminalsHere reports whether this engine can open terminals.
const terminalsHere = false
