//go:build !windows

package agent

import (
	"os"
	"syscall"
)

// reexec replaces this process with exe, same arguments and environment:
// the service manager sees the same process go on.
func reexec(exe string) error {
	return syscall.Exec(exe, append([]string{exe}, os.Args[1:]...), os.Environ())
}
