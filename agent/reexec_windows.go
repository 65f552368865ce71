//go:build windows

package agent

import (
	"errors"
	"os"
	"time"
)

// reexec: Windows cannot replace a running process's image; a self-update
// there needs the service to restart the agent, which is not done yet, so
// the update is rolled back at once and the old agent keeps running.
func reexec(exe string) error {
	return errors.New("self-update restart is not supported on Windows yet")
}

func startWatchdog(old, stateDir string, pid int) error {
	return errors.New("no update watchdog on Windows yet")
}

func startAgent(exe string, args []string) (int, error) {
	return 0, errors.New("no update watchdog on Windows yet")
}

func waitEnded(p *os.Process, d time.Duration) {}
