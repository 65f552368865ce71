//go:build !windows

package agent

import (
	"context"
	"errors"

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
