package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/patchd/patchd/internal/bootedtest"
)

// bootedKinds are the init systems the booted tests run the agent under.
var bootedKinds = []bootedtest.Kind{bootedtest.Systemd, bootedtest.SysV, bootedtest.OpenRC}

// agentLog is the agent's recent output in the machine: the journal under
// systemd, the log file the init scripts write elsewhere.
func agentLog(m *bootedtest.Machine, k bootedtest.Kind) string {
	script := "tail -n 60 /var/log/patchd-agent.log 2>/dev/null"
	if k == bootedtest.Systemd {
		script = "journalctl --no-pager -n 80 -u patchd-agent -u patchd-agent-removal 2>/dev/null"
	}
	out, _ := m.Run(script)
	return out
}

// servicePID is the agent's process as the machine's service manager
// knows it: systemd's main process of the unit; under SysV init the
// process in the init script's pid file, when its status says it runs;
// under OpenRC the process its rc-service status says runs (the child of
// supervise-daemon for the installer's script, the pid file's for the
// packages' LSB script). It answers "" and what was seen when none runs.
func servicePID(m *bootedtest.Machine, k bootedtest.Kind) (string, string) {
	var script string
	switch k {
	case bootedtest.Systemd:
		script = `systemctl is-active --quiet patchd-agent && systemctl show -p MainPID --value patchd-agent`
	case bootedtest.SysV:
		script = `/etc/init.d/patchd-agent status >/dev/null && cat /run/patchd-agent.pid`
	default:
		script = `rc-service patchd-agent status >/dev/null || exit 1
pid=$(cat /run/patchd-agent.pid) || exit 1
case $(readlink /proc/$pid/exe) in */supervise-daemon) pgrep -P "$pid" ;; *) echo "$pid" ;; esac`
	}
	out, err := m.Run(script)
	pid := strings.TrimSpace(out)
	if err != nil || pid == "" || pid == "0" || strings.ContainsAny(pid, " \n") {
		status, _ := m.Run("ps -eo pid,ppid,args | grep -v grep | grep -e patchd -e supervise; ls -l /run/patchd-agent.pid")
		return "", out + "\n" + status
	}
	return pid, out
}

// serviceRuns tells whether the service manager's process of the agent
// executes exe (not a replaced, deleted file) and exe is version.
func serviceRuns(m *bootedtest.Machine, k bootedtest.Kind, exe, version string) (bool, string) {
	pid, seen := servicePID(m, k)
	if pid == "" {
		return false, "the service does not run: " + seen
	}
	out, err := m.Run("readlink /proc/" + pid + "/exe; " + exe + " version")
	return err == nil && strings.HasPrefix(out, exe+"\n") && strings.Contains(out, "patchd-agent "+version+" "), "pid " + pid + ": " + out
}

var agentBuilds struct {
	sync.Mutex
	dir   string
	files map[string]string
}

// builtAgent is the agent built as version with releaseKey, built once
// per test binary (the booted tests of each kind use the same ones).
func builtAgent(t *testing.T, version, releaseKey string) string {
	t.Helper()
	agentBuilds.Lock()
	defer agentBuilds.Unlock()
	key := version + "\x00" + releaseKey
	if f, ok := agentBuilds.files[key]; ok {
		return f
	}
	if agentBuilds.dir == "" {
		d, err := os.MkdirTemp("", "patchd-e2e-agents-")
		if err != nil {
			t.Fatal(err)
		}
		agentBuilds.dir, agentBuilds.files = d, map[string]string{}
	}
	out := filepath.Join(agentBuilds.dir, strings.NewReplacer("/", "_", "+", "_", "=", "_").Replace(version+"-"+releaseKey), "patchd-agent")
	buildVersion(t, out, version, releaseKey)
	agentBuilds.files[key] = out
	return out
}

// TestMain removes the agents builtAgent built.
func TestMain(m *testing.M) {
	code := m.Run()
	if agentBuilds.dir != "" {
		os.RemoveAll(agentBuilds.dir)
	}
	os.Exit(code)
}
