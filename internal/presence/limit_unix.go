//go:build unix

package presence

import "syscall"

// DefaultMaxLongPolls derives the bound of long polls from the open-files
// limit (which Go raises to the hard limit at start): see longPollsFor.
func DefaultMaxLongPolls() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return minLongPolls
	}
	return longPollsFor(l.Cur)
}
