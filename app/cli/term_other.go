//go:build !linux && !darwin

package cli

import (
	"errors"
	"os"
)

func isTerminal(*os.File) bool               { return false }
func terminalSize(*os.File) (uint16, uint16) { return 0, 0 }
func makeRaw(*os.File) (func(), error)       { return nil, errors.New("no terminal support here") }
func dieBy(os.Signal)                        {}

var forwardedSignals = map[os.Signal]string{os.Interrupt: "INT"}

// resizeSignal is never delivered here.
var resizeSignal os.Signal

func signalNumber(os.Signal) int { return -1 }

// readHidden is never called here: isTerminal is false.
func readHidden(*os.File) ([]byte, error) { return nil, errors.New("no terminal support here") }
