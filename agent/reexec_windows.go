//go:build windows

package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/patchd/patchd/agentsvc"
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// recoveryVerified: the agent's service restarts it when it ends with a
// failing exit code (refreshServiceDefinition saw or set its recovery).
var recoveryVerified atomic.Bool

func runsAsWindowsService() bool {
	is, err := svc.IsWindowsService()
	return err == nil && is
}

// reexec: Windows cannot replace a running process's image. Run as the
// service whose recovery restarts it, the agent ends (ErrRestart: a
// failing exit) and the service manager starts it again from exe's file,
// now the new binary; otherwise (run by hand, recovery not in place) the
// update is rolled back at once and the old agent keeps running.
func reexec(exe string) error {
	if !runsAsWindowsService() {
		return errors.New("self-update restart needs the agent to run as its Windows service (patchd-agent install or the MSI)")
	}
	if !recoveryVerified.Load() {
		// Not checked yet in this run (a new agent that cannot check in
		// rolls back before): check it now.
		if err := ensureRecovery(exe, slog.New(slog.DiscardHandler)); err != nil || !recoveryVerified.Load() {
			return fmt.Errorf("self-update restart needs the service's recovery (restart on failure), which could not be checked or set: %v", err)
		}
	}
	return ErrRestart
}

// startWatchdog starts old's update-watchdog detached from the agent's
// process, so that it outlives the agent's exit for the restart.
// A released process leaves nothing to reap: it answers no pid.
func startWatchdog(old, stateDir string, pid int) (int, error) {
	cmd := exec.Command(old, "update-watchdog", "--state", stateDir, "--pid", strconv.Itoa(pid))
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	return 0, cmd.Process.Release()
}

// reapChild: Windows keeps no zombie processes.
func reapChild(int) {}

// processAlive tells whether pid runs: it can be opened and has no exit
// code yet.
func processAlive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code == 259 // STILL_ACTIVE
}

// startAgent: the service manager starts the agent on Windows (Supervised).
func startAgent(exe string, args []string) (int, error) {
	return 0, errors.New("the service manager starts the agent on Windows")
}

// agentPID is the agent service's process now (a restart by the service
// manager gives it another process than pid), else pid.
func agentPID(pid int) int {
	m, err := mgr.Connect()
	if err != nil {
		return pid
	}
	defer m.Disconnect()
	s, err := m.OpenService(agentsvc.ServiceName)
	if err != nil {
		return pid
	}
	defer s.Close()
	st, err := s.Query()
	if err != nil || st.ProcessId == 0 {
		return pid
	}
	return int(st.ProcessId)
}

// waitEnded waits until the process p is gone, at most d.
func waitEnded(p *os.Process, d time.Duration) {
	done := make(chan struct{})
	go func() {
		p.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}
