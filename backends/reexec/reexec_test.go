package reexec

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

const testHelper = "__reexec-test-helper"

func init() {
	Register(testHelper, func(args []string) int {
		os.Stdout.WriteString("helper " + strings.Join(args, " ") + "\n")
		return 7
	})
}

func TestMain(m *testing.M) {
	Init()
	os.Exit(m.Run())
}

// TestInitRunsTheNamedHelper starts this test binary as the helper: it
// runs with the arguments after its name and exits with its code, before
// any test runs.
func TestInitRunsTheNamedHelper(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(self, testHelper, "a", "-test.run=none").Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 || string(out) != "helper a -test.run=none\n" {
		t.Fatalf("the helper: %q %v", out, err)
	}
}

func TestRegisterRefusesBadNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{testHelper, "landlock-helper"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			Register(name, func([]string) int { return 0 })
		}()
	}
	if got := Names(); len(got) != 1 || got[0] != testHelper {
		t.Errorf("Names() = %q", got)
	}
}
