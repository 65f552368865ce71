package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/patchd/patchd/agent"
	"github.com/patchd/patchd/internal/agentdist"
)

// TestRealAgentWatchdogStartsOldAgent: the real agent runs as SysV init or
// OpenRC without a supervisor run it (in the background, its pid in a pid
// file, nothing to start it again). It updates itself to a release that
// starts but never checks in; the watchdog puts the old binary back, ends
// the new agent and, as no service manager will, starts the old agent
// itself and writes its pid into the pid file. The old agent refuses the
// release, reports the rollback and goes on checking in.
func TestRealAgentWatchdogStartsOldAgent(t *testing.T) {
	r := newUpdateRig(t)
	v2sum := r.build(r.exe, "2.0.0")
	r.release(r.exe, "2.0.0")
	// 3.0.0 answers its version but never checks in.
	v3sum := r.releaseScript("3.0.0", "exec sleep 600\n")
	a := startUnsupervised(r, "10s")
	waitFor(t, "the update to 3.0.0", nil, func() bool { r.kick(); return strings.Contains(a.logs(), "restarting into it") })
	waitFor(t, "the watchdog ending 3.0.0", nil, func() bool { return ended(a.exited) })
	if sum, _ := agentdist.FileSHA256(r.exe); sum != v2sum {
		t.Fatal("the watchdog did not put 2.0.0 back")
	}
	a.restartedByWatchdog()
	a.refusedAndReported(v3sum, "rolled back")
	for _, want := range []string{"the watchdog started the old one", "agent update failed: the previous agent runs again"} {
		if !strings.Contains(a.logs(), want) {
			t.Errorf("the log lacks %q", want)
		}
	}
}

// TestRealAgentCrashRolledBack: the real agent runs as SysV init runs it
// (its pid in a pid file, nothing to start it again) with a grace period
// far longer than the test may wait, and updates itself to a release that
// starts (it answers its version) but exits at once when run. The
// watchdog sees the new agent's process end, puts the old binary back and
// starts it, without waiting for the deadline; the old agent refuses the
// release, reports why and checks in as 2.0.0.
func TestRealAgentCrashRolledBack(t *testing.T) {
	r := newUpdateRig(t)
	v2sum := r.build(r.exe, "2.0.0")
	r.release(r.exe, "2.0.0")
	// 3.0.0 answers its version, and fails as soon as it runs.
	v3sum := r.releaseScript("3.0.0", "echo 'patchd-agent 3.0.0: crashed' >&2\nexit 2\n")
	// The deadline (an hour) cannot be what rolls the update back here.
	a := startUnsupervised(r, "1h")
	waitFor(t, "the update to 3.0.0", nil, func() bool { r.kick(); return strings.Contains(a.logs(), "restarting into it") })
	waitFor(t, "3.0.0 exiting", nil, func() bool { return ended(a.exited) })
	if !strings.Contains(a.logs(), "3.0.0: crashed") {
		t.Fatal("3.0.0 did not run")
	}
	a.restartedByWatchdog()
	if sum, _ := agentdist.FileSHA256(r.exe); sum != v2sum {
		t.Fatal("the watchdog did not put 2.0.0 back")
	}
	a.refusedAndReported(v3sum, "ended before it checked in")
}

// unsupervised is the real agent run as SysV init or OpenRC without a
// supervisor run it: in the background, its output to a log file, its pid
// in a pid file, nothing to start it again.
type unsupervised struct {
	r       *updateRig
	cmd     *exec.Cmd
	exited  chan error
	pidFile string
	logFile string
}

// startUnsupervised enrolls the rig's agent and runs it so, with the
// update grace period given.
func startUnsupervised(r *updateRig, grace string) *unsupervised {
	t := r.t
	t.Helper()
	a := &unsupervised{r: r, pidFile: filepath.Join(r.dir, "patchd-agent.pid"), logFile: filepath.Join(r.dir, "patchd-agent.log")}
	r.env = slices.DeleteFunc(r.env, func(kv string) bool {
		return strings.HasPrefix(kv, "INVOCATION_ID=") || strings.HasPrefix(kv, "PATCHD_AGENT_SUPERVISED=")
	})
	r.env = append(r.env, "PATCHD_AGENT_PIDFILE="+a.pidFile)
	r.enroll()
	// A file, not a pipe: the agent the watchdog starts writes to it too,
	// and outlives the process this test waits for.
	lf, err := os.Create(a.logFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lf.Close() })
	a.cmd, a.exited = r.run(r.env, lf, "--update-grace", grace, "--release-check", "1s")
	os.WriteFile(a.pidFile, []byte(strconv.Itoa(a.cmd.Process.Pid)+"\n"), 0o644)
	// The agent the watchdog starts is no child of this test: it is ended
	// by the pid it wrote.
	t.Cleanup(func() {
		a.cmd.Process.Kill()
		if pid := a.pid(); pid > 0 && pid != a.cmd.Process.Pid {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", a.logs())
		}
	})
	return a
}

func (a *unsupervised) logs() string { b, _ := os.ReadFile(a.logFile); return string(b) }

// pid is the pid file's.
func (a *unsupervised) pid() int {
	b, err := os.ReadFile(a.pidFile)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// restartedByWatchdog waits until the watchdog started the old agent and
// wrote its pid into the pid file.
func (a *unsupervised) restartedByWatchdog() {
	t := a.r.t
	t.Helper()
	var pid int
	waitFor(t, "the old agent started by the watchdog, its pid in the pid file", nil, func() bool {
		pid = a.pid()
		return pid > 0 && pid != a.cmd.Process.Pid && syscall.Kill(pid, 0) == nil
	})
	if cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); !strings.Contains(string(cmdline), "run\x00--state\x00"+a.r.state) {
		t.Fatalf("the pid file's process: %q", cmdline)
	}
}

// refusedAndReported waits until the old agent refused the release whose
// file is sum and reported the failure with a reason containing why, and
// checks that the endpoint reports 2.0.0.
func (a *unsupervised) refusedAndReported(sum, why string) {
	r := a.r
	r.t.Helper()
	waitFor(r.t, "2.0.0 back, 3.0.0 refused and the rollback reported", nil, func() bool {
		st, err := agent.LoadState(r.state)
		return r.reported("3.0.0", why) && err == nil && st.Update == nil && slices.Contains(st.RefusedReleases, sum)
	})
	if v := r.version(); v != "2.0.0" {
		r.t.Fatalf("the endpoint reports %q", v)
	}
}
