//go:build !unix

package presence

// DefaultMaxLongPolls is the bound of long polls where the open-files
// limit is not read (Windows: sockets are not bounded by it): 16,384.
func DefaultMaxLongPolls() int { return 16384 }
