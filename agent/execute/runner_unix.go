//go:build !windows

package execute

import (
	"os/exec"
	"syscall"
)

// prepare puts the command in its own process group so that a timeout
// ends the script and everything it started.
func prepare(cmd *exec.Cmd, c Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
