//go:build windows

package agent

import (
	"context"
	"fmt"

	"golang.org/x/sys/windows"

	"golang.org/x/sys/windows/svc"

	"github.com/patchd/patchd/agent/collect"
	"github.com/patchd/patchd/agent/execute"
)

func setPlatformTools(e *execute.Executor) {
	e.PowerShellPath = collect.PowerShellPath()
	e.WingetPath = collect.WingetPath()
}

// RunAsService runs run under the Service Control Manager when the
// process was started as a Windows service; handled is false otherwise.
func RunAsService(run func(ctx context.Context) error) (handled bool, err error) {
	is, err := svc.IsWindowsService()
	if err != nil || !is {
		return false, err
	}
	h := &serviceHandler{run: run}
	if err := svc.Run(ServiceName, h); err != nil {
		return true, fmt.Errorf("service: %w", err)
	}
	return true, h.err
}

type serviceHandler struct {
	run func(ctx context.Context) error
	err error
}

func (h *serviceHandler) Execute(args []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.run(ctx) }()
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case err := <-done:
			h.err = err
			status <- svc.Status{State: svc.StopPending}
			// Uninstalled or refused (401): stop without failure, so
			// that the recovery actions do not restart the service.
			if err != nil && err != ErrUninstalled && err != ErrUnauthorized {
				return true, 1
			}
			return false, 0
		case c := <-req:
			switch c.Cmd {
			case svc.Interrogate:
				status <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				status <- svc.Status{State: svc.StopPending}
				cancel()
				h.err = <-done
				return false, 0
			}
		}
	}
}

// removeAtReboot has Windows delete path at the next restart: the running
// agent's own binary cannot be deleted while it runs.
func removeAtReboot(path string) error {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return err
	}
	return windows.MoveFileEx(p, nil, windows.MOVEFILE_DELAY_UNTIL_REBOOT)
}
