//go:build !windows

package agent

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// reexec replaces this process with exe, same arguments and environment:
// the service manager sees the same process go on.
func reexec(exe string) error {
	return syscall.Exec(exe, append([]string{exe}, os.Args[1:]...), os.Environ())
}

// startWatchdog starts old's update-watchdog in its own session, so that
// signals to the agent's process group do not reach it.
func startWatchdog(old, stateDir string, pid int) error {
	cmd := exec.Command(old, "update-watchdog", "--state", stateDir, "--pid", strconv.Itoa(pid))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd.Start()
}
