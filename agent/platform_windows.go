//go:build windows

package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/patchd/patchd/agent/collect"
	"github.com/patchd/patchd/agent/execute"
	"github.com/patchd/patchd/agentsvc"
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
	if err := svc.Run(agentsvc.ServiceName, h); err != nil {
		return true, fmt.Errorf("service: %w", err)
	}
	return true, h.err
}

type serviceHandler struct {
	run func(ctx context.Context) error
	err error
}

func (h *serviceHandler) Execute(args []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
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
				// The agent tells the server it stops (within
				// StoppingTimeout) before it returns.
				status <- svc.Status{State: svc.StopPending, WaitHint: uint32((StoppingTimeout + 5*time.Second) / time.Millisecond)}
				cancel(ErrServiceStop)
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

// refreshServiceDefinition brings the recovery of the agent's Windows
// service up to date (agentsvc.RecoveryDelays, agentsvc.RecoveryReset, a failing exit code
// counted as a failure) when it differs: services installed by an MSI
// without recovery or by an older patchd-agent install. Only the service
// whose program is this agent is changed.
func refreshServiceDefinition(ctx context.Context, cfg Config, log *slog.Logger) error {
	return ensureRecovery(cfg.Executable, log)
}

// ensureRecovery checks the recovery of the agent's service (the one whose
// program is exe) and sets it when it differs; recoveryVerified then.
func ensureRecovery(exe string, log *slog.Logger) error {
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("service manager: %w", err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(agentsvc.ServiceName)
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return nil // run by hand, not installed as a service
	} else if err != nil {
		return fmt.Errorf("service %s: %w", agentsvc.ServiceName, err)
	}
	defer s.Close()
	sc, err := s.Config()
	if err != nil {
		return fmt.Errorf("service %s: %w", agentsvc.ServiceName, err)
	}
	if prog := ServiceExe(sc.BinaryPathName); !strings.EqualFold(filepath.Clean(prog), filepath.Clean(exe)) {
		log.Debug("the service runs another program: its recovery is left alone", "service", prog, "this", exe)
		return nil
	}
	have, err := s.RecoveryActions()
	if err != nil {
		return fmt.Errorf("service %s recovery: %w", agentsvc.ServiceName, err)
	}
	reset, err := s.ResetPeriod()
	if err != nil {
		return fmt.Errorf("service %s recovery: %w", agentsvc.ServiceName, err)
	}
	flag, err := s.RecoveryActionsOnNonCrashFailures()
	if err != nil {
		return fmt.Errorf("service %s recovery: %w", agentsvc.ServiceName, err)
	}
	actions := make([]RecoveryAction, len(have))
	for i, a := range have {
		actions[i] = RecoveryAction{Type: a.Type, Delay: a.Delay}
	}
	diff := RecoveryDiff(actions, time.Duration(reset)*time.Second, flag)
	if diff == "" {
		recoveryVerified.Store(true)
		log.Debug("service recovery up to date")
		return nil
	}
	want := make([]mgr.RecoveryAction, len(agentsvc.RecoveryDelays))
	for i, d := range agentsvc.RecoveryDelays {
		want[i] = mgr.RecoveryAction{Type: mgr.ServiceRestart, Delay: d}
	}
	if err := s.SetRecoveryActions(want, uint32(agentsvc.RecoveryReset/time.Second)); err != nil {
		return fmt.Errorf("service %s: set recovery: %w", agentsvc.ServiceName, err)
	}
	if err := s.SetRecoveryActionsOnNonCrashFailures(true); err != nil {
		return fmt.Errorf("service %s: set recovery on failing exit codes: %w", agentsvc.ServiceName, err)
	}
	recoveryVerified.Store(true)
	log.Info("service recovery brought up to date", "service", agentsvc.ServiceName, "was", diff)
	return nil
}
