package landlock

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ABIVersion asks the kernel for its Landlock ABI version with
// landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION).
func ABIVersion() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == 0:
		return int(v), nil
	case errors.Is(errno, unix.ENOSYS):
		return 0, errors.New("landlock is not supported by this kernel (needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)")
	case errors.Is(errno, unix.EOPNOTSUPP):
		return 0, errors.New("landlock is built into the kernel but not enabled: add landlock to the lsm= boot parameter")
	default:
		return 0, fmt.Errorf("querying the landlock abi: %w", errno)
	}
}
