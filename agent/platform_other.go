//go:build !windows

package agent

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"runtime"

	"github.com/patchd/patchd/agent/execute"
)

func setPlatformTools(e *execute.Executor) {}

// RunAsService is for Windows services only: elsewhere systemd or launchd
// start the agent as a plain process.
func RunAsService(run func(ctx context.Context) error) (handled bool, err error) {
	return false, nil
}

// removeAtReboot is for Windows, where a running program cannot be deleted.
func removeAtReboot(path string) error { return errors.ErrUnsupported }

// refreshServiceDefinition brings the service files patchd-agent install
// wrote for this agent up to date (Linux: RefreshServiceFiles; launchd's
// property list may carry the installer's proxy settings and is left as
// it is).
func refreshServiceDefinition(ctx context.Context, cfg Config, log *slog.Logger) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	state, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return err
	}
	_, err = RefreshServiceFiles(ctx, cfg.ServiceRoot, cfg.Executable, state, execute.ExecRunner{}, log)
	return err
}
