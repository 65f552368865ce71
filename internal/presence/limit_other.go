//go:build !unix

package presence

// OpenFiles answers 0: sockets are not bounded by an open-files limit here
// (Windows).
func OpenFiles() uint64 { return 0 }

// DefaultMaxLongPolls is the bound of long polls where the open-files
// limit is not read: 16,384.
func DefaultMaxLongPolls() int { return 16384 }
