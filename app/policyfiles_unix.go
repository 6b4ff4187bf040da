//go:build unix

package app

import "syscall"

// noFollowOpen opens the owner's policy file only if it is not a link.
const noFollowOpen = syscall.O_NOFOLLOW
