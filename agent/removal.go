package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/patchd/patchd/agent/execute"
	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/agentsvc"
)

// RemovalCommand is the agent's command (not for people) that carries out
// the removal the server asked for, started by the agent outside its own
// service: `patchd-agent finish-removal --state DIR`.
const RemovalCommand = "finish-removal"

// removalWait is how long an agent that started its removal waits to be
// stopped by it before it ends by itself.
const removalWait = 2 * time.Minute

// SelfUninstall removes the agent from this computer: the server removed
// its endpoint. On Linux stopping the service ends the agent, so the
// removal runs in a helper started outside the service (a transient
// systemd unit, else a process in a session of its own: SysV's and
// OpenRC's stop end only the agent's own process), which stops the service
// last and reports to the server; the agent waits until it is stopped (ctx
// ends). Elsewhere the removal runs here, the service's stop last, and
// the agent reports before it.
func SelfUninstall(ctx context.Context, stateDir string, client *Client, log *slog.Logger) error {
	if runtime.GOOS == "linux" {
		exe, err := os.Executable()
		if err == nil {
			exe, err = filepath.EvalSymlinks(exe)
		}
		if err == nil {
			err = startRemoval(ctx, exe, stateDir, log)
		}
		if err == nil {
			log.Info("removal started outside the service; it stops the agent last")
			t := time.NewTimer(removalWait)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
				log.Warn("the removal did not stop the agent; it ends")
			}
			return nil
		}
		log.Warn("cannot start the removal outside the service; removing from this process", "err", err)
	}
	m := InstalledManager("/")
	plan := removalPlan(m, stateDir)
	err := plan.Apply(ctx, execute.ExecRunner{}, log)
	report(ctx, client, m, stateDir, err, log)
	return err
}

// FinishRemoval is RemovalCommand: the state is read first (the server's
// address, the secret, what to trust, to report with), then the service
// is unregistered and stopped, the agent's files and state removed, and
// what is left reported to the server.
func FinishRemoval(ctx context.Context, stateDir string, log *slog.Logger) error {
	var client *Client
	if st, err := LoadState(stateDir); err != nil {
		log.Warn("no state to report the removal with", "err", err)
	} else if hc, err := st.HTTPClient(); err != nil {
		log.Warn("cannot reach the server to report the removal", "err", err)
	} else {
		client = &Client{Base: st.Server, Secret: st.AgentSecret, HTTP: hc}
	}
	m := InstalledManager("/")
	err := removalPlan(m, stateDir).Apply(ctx, execute.ExecRunner{}, log)
	if err != nil {
		log.Error("removal", "err", err)
	}
	left := report(ctx, client, m, stateDir, err, log)
	if err == nil && len(left) > 0 {
		err = fmt.Errorf("left after the removal: %s", strings.Join(left, "; "))
	}
	return err
}

// removalPlan is what removing the agent does with manager m: the package
// manager's own removal when the agent is the .deb's or .rpm's (its
// scripts stop and unregister the service), else the uninstall plan of
// what the installers registered, the binary at the fixed place included.
func removalPlan(m Manager, stateDir string) Plan {
	exe, _ := os.Executable()
	if exe, err := filepath.EvalSymlinks(exe); err == nil && exe == agentsvc.PackageBinary {
		if _, err := lookPath("dpkg"); err == nil && quietly("dpkg-query", "-W", agentsvc.ServiceName) == nil {
			return Plan{Run: []execute.Cmd{{Path: "dpkg", Args: []string{"--purge", agentsvc.ServiceName}}}, Remove: []string{stateDir}}
		}
		if _, err := lookPath("rpm"); err == nil && quietly("rpm", "-q", agentsvc.ServiceName) == nil {
			return Plan{Run: []execute.Cmd{{Path: "rpm", Args: []string{"-e", agentsvc.ServiceName}}}, Remove: []string{stateDir}}
		}
	}
	return LocalUninstallPlan(stateDir, false, true)
}

// leftovers lists what of the agent is still on this computer after its
// removal with manager m (under root).
func leftovers(root string, m Manager, stateDir string) []string {
	var paths []string
	switch m {
	case Systemd:
		paths = []string{agentsvc.SystemdPath, agentsvc.PackageUnitPath, "/etc/systemd/system/multi-user.target.wants/patchd-agent.service"}
	case SysV:
		links, _ := filepath.Glob(filepath.Join(root, "etc/rc?.d/[SK][0-9][0-9]"+agentsvc.ServiceName))
		for _, l := range links {
			paths = append(paths, strings.TrimPrefix(l, strings.TrimSuffix(root, "/")))
		}
		paths = append(paths, agentsvc.InitScript, "/run/patchd-agent.pid")
	case OpenRC:
		links, _ := filepath.Glob(filepath.Join(root, "etc/runlevels/*", agentsvc.ServiceName))
		for _, l := range links {
			paths = append(paths, strings.TrimPrefix(l, strings.TrimSuffix(root, "/")))
		}
		paths = append(paths, agentsvc.InitScript, "/run/patchd-agent.pid")
	case Launchd:
		paths = []string{agentsvc.LaunchdPath}
	}
	if m != WinSCM {
		paths = append(paths, EnvFile, InstallPath(goosForPlans()), agentsvc.PackageBinary)
	}
	paths = append(paths, stateDir)
	var left []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			left = append(left, p+" is left")
		}
	}
	return left
}

// report tells the server what the removal did (err: the plan's failure)
// and answers what is left. Without a client, or when the server cannot
// be reached, it is logged only.
func report(ctx context.Context, client *Client, m Manager, stateDir string, err error, log *slog.Logger) []string {
	left := leftovers("/", m, stateDir)
	rep := agentproto.UninstalledReport{Complete: err == nil && len(left) == 0, Manager: string(m), Problems: left}
	if err != nil {
		rep.Problems = append([]string{err.Error()}, rep.Problems...)
	}
	if len(rep.Problems) > 100 {
		rep.Problems = rep.Problems[:100]
	}
	for i, p := range rep.Problems {
		if len(p) > 1000 {
			rep.Problems[i] = p[:1000]
		}
	}
	if client == nil {
		log.Info("removal done; not reported", "complete", rep.Complete, "problems", rep.Problems)
		return left
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if rerr := client.Uninstalled(rctx, rep); rerr != nil {
		var he *HTTPError
		if errors.As(rerr, &he) && he.Status == 404 {
			log.Info("removal done; this server takes no removal reports", "complete", rep.Complete, "problems", rep.Problems)
		} else {
			log.Warn("removal done; the report did not reach the server", "err", rerr, "complete", rep.Complete, "problems", rep.Problems)
		}
		return left
	}
	log.Info("removal done and reported to the server", "complete", rep.Complete, "problems", rep.Problems)
	return left
}
