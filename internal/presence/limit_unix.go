//go:build unix

package presence

import "syscall"

// OpenFiles answers the process's open-files limit (which Go raises to the
// hard limit at start), 0 when it cannot be read.
func OpenFiles() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return l.Cur
}

// DefaultMaxLongPolls derives the bound of long polls from the open-files
// limit: see longPollsFor.
func DefaultMaxLongPolls() int {
	n := OpenFiles()
	if n == 0 {
		return minLongPolls
	}
	return longPollsFor(n)
}
