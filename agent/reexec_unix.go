//go:build !windows

package agent

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// reexec replaces this process with exe, same arguments and environment:
// the service manager sees the same process go on.
func reexec(exe string) error {
	return syscall.Exec(exe, append([]string{exe}, os.Args[1:]...), os.Environ())
}

// startWatchdog starts old's update-watchdog in its own session, so that
// signals to the agent's process group do not reach it.
// It answers the watchdog's pid: the watchdog stays a child of this
// process through the re-execution, and the agent running in it then
// waits for it (reapChild).
func startWatchdog(old, stateDir string, pid int) (int, error) {
	cmd := exec.Command(old, "update-watchdog", "--state", stateDir, "--pid", strconv.Itoa(pid))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	return cmd.Process.Pid, nil
}

// reapChild waits for the child process pid to end, so that it does not
// stay a zombie. The watchdog was started by this process before it
// re-executed: the Go runtime of this image does not know it as a child.
func reapChild(pid int) {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			return
		}
	}
}

// processAlive tells whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	return !zombie(pid)
}

// startAgent starts exe with args in its own session (the watchdog's
// output for its output) and answers its pid; it is not waited for.
func startAgent(exe string, args []string) (int, error) {
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	return pid, nil
}

// waitEnded waits until the process p is gone (or a zombie its parent has
// not reaped), at most d.
func waitEnded(p *os.Process, d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if p.Signal(syscall.Signal(0)) != nil || zombie(p.Pid) {
			return
		}
	}
}

// zombie tells whether pid has ended and waits for its parent (Linux's
// /proc; elsewhere false). The thread-group leader alone being a zombie
// is not enough: while a thread other than the leader executes a new
// program (as the agent's re-execution into an update may), the leader
// shows as a zombie until that thread takes its place, and a leader
// thread may end before the others. The process has ended when none of
// its threads runs.
func zombie(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	if !zombieTask(dir + "/stat") {
		return false
	}
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return os.IsNotExist(err) // reaped meanwhile
	}
	for _, t := range tasks {
		if b, err := os.ReadFile(dir + "/task/" + t.Name() + "/stat"); err == nil && !statZombie(b) {
			return false
		}
	}
	return true
}

// zombieTask tells whether the task of /proc stat file f is a zombie.
func zombieTask(f string) bool {
	b, err := os.ReadFile(f)
	return err == nil && statZombie(b)
}

// statZombie reads the state field of a /proc stat line: after the
// command's closing parenthesis (the command may hold any character).
func statZombie(b []byte) bool {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func runsAsWindowsService() bool { return false }

// agentPID: the update re-executed in place, the process is the same.
func agentPID(pid int) int { return pid }
