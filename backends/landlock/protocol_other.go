//go:build !linux

package landlock

// Protocol is Linux's: there is no helper elsewhere.
func Protocol() string { return "" }
