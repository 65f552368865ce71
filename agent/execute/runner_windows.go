//go:build windows

package execute

import (
	"os/exec"
	"syscall"
)

// prepare passes a raw command line through unchanged and hides console
// windows.
func prepare(cmd *exec.Cmd, c Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: c.RawCmdLine, HideWindow: true}
}
