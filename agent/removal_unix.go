//go:build !windows

package agent

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// startRemoval starts exe's RemovalCommand outside the agent's service:
// under a running systemd in a transient unit of its own (stopping the
// agent's unit does not touch it; its output goes to the journal), else
// in a session of its own writing to the agent's output. It is not
// waited for.
func startRemoval(ctx context.Context, exe, stateDir string, log *slog.Logger) error {
	args := []string{RemovalCommand, "--state", stateDir}
	if isDir("/run/systemd/system") {
		if run, err := exec.LookPath("systemd-run"); err == nil {
			out, err := exec.CommandContext(ctx, run, append([]string{"--unit=patchd-agent-removal", "--collect", "--quiet", "--", exe}, args...)...).CombinedOutput()
			if err == nil {
				return nil
			}
			log.Warn("systemd-run cannot start the removal; it runs in a session of its own", "err", err, "output", strings.TrimSpace(string(out)))
		}
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reaped if it ends before the agent
	return nil
}

// quietly runs name with args, output discarded, and answers its failure.
func quietly(name string, args ...string) error {
	return exec.Command(name, args...).Run()
}
