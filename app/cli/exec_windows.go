package cli

import (
	"errors"
	"os"
	"os/exec"
)

// execEngine runs the engine's executable with argv's arguments and this
// process's streams, and returns its exit code: Windows has no exec.
func execEngine(path string, argv []string) (int, error) {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, err
	}
	return 0, nil
}
