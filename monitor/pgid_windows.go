//go:build windows

package monitor

// processGroup returns 0: Windows has no process groups in the POSIX sense
// (console process groups are not what callers mean by a pgid).
func processGroup(int) int {
	return 0
}
