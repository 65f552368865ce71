package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/patchd/patchd/agent"
	"github.com/patchd/patchd/agentsvc"
	"github.com/patchd/patchd/internal/lockedbuf"
)

// beforeServiceRefresh is the last commit whose agent left its service
// definition as patchd-agent install wrote it.
const beforeServiceRefresh = "1e52037b249dd87e86d754ced64414dfbc0ef767"

// buildFromCommit builds the agent of an earlier commit (its source from
// this repository's history, read with git archive; the repository is not
// changed) as version, with the release key built in.
func buildFromCommit(t *testing.T, commit, out, version, releaseKey string) {
	t.Helper()
	src := exportCommit(t, commit)
	goBuildAgent(t, src, out, version, releaseKey, "GOFLAGS=-mod=mod")
}

// TestRealAgentBringsItsServiceUpToDate: an agent installed by an older
// version (the agent of an earlier commit, its OpenRC script and systemd
// unit as that version's install wrote them, under a folder the agent is
// pointed at instead of this machine's /) updates itself through the
// server to this version; once the new agent is confirmed it replaces both
// files with this version's, logs what changed, has systemd read the unit
// again (a recording systemctl) and goes on running. Started again, it
// finds them current and changes nothing.
func TestRealAgentBringsItsServiceUpToDate(t *testing.T) {
	r := newUpdateRig(t)
	exe, state, dir := r.exe, r.state, r.dir
	buildFromCommit(t, beforeServiceRefresh, exe, "1.0.0", r.releaseKey())
	v2 := filepath.Join(dir, "v2", "patchd-agent")
	r.build(v2, "2.0.0")
	r.release(v2, "2.0.0")

	// The root the agent is pointed at: what the older install wrote.
	root := filepath.Join(dir, "root")
	script, unit := filepath.Join(root, agentsvc.InitScript), filepath.Join(root, agentsvc.SystemdPath)
	oldScript := agent.PastServiceDefinitions(agent.OpenRC, exe, state)[0]
	oldUnit := agent.PastServiceDefinitions(agent.Systemd, exe, state)[1]
	for path, content := range map[string]string{script: oldScript, unit: oldUnit} {
		os.MkdirAll(filepath.Dir(path), 0o755)
		mode := os.FileMode(0o644)
		if path == script {
			mode = 0o755
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, "run/systemd/system"), 0o755) // systemd runs there
	systemctlCalls := filepath.Join(dir, "systemctl.calls")
	if err := os.WriteFile(filepath.Join(dir, "fakebin", "systemctl"), []byte("#!/bin/sh\necho \"$*\" >> '"+systemctlCalls+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.env = append(r.env, "PATCHD_AGENT_SERVICE_ROOT="+root)
	r.enroll()

	logs := &lockedbuf.Buffer{}
	var run *exec.Cmd
	var exited chan error
	startAgent := func() {
		run, exited = r.run(append(r.env, "PATCHD_AGENT_SUPERVISED=1"), logs, "--update-grace", "30s", "--release-check", "1s")
	}
	stopAgent := func() {
		run.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			run.Process.Kill()
			<-exited
		}
	}
	startAgent()
	defer func() {
		run.Process.Kill()
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	}()
	waitFor := func(what string, cond func() bool) { t.Helper(); waitFor(t, what, exited, cond) }
	kick := r.kick
	read := func(path string) string { b, _ := os.ReadFile(path); return string(b) }
	version := r.version

	waitFor("the update to 2.0.0", func() bool { kick(); return version() == "2.0.0" })
	waitFor("the service definitions brought up to date", func() bool {
		kick()
		return read(script) == agentsvc.OpenRCScript(exe, state) && read(unit) == agentsvc.SystemdUnit(exe, state)
	})
	l := logs.String()
	confirmed, refreshed := strings.Index(l, "agent update confirmed"), strings.Index(l, "service definition brought up to date")
	if confirmed < 0 || refreshed < confirmed {
		t.Fatalf("the service definition was replaced before the new agent was confirmed (at %d, confirmed at %d)", refreshed, confirmed)
	}
	if strings.Count(l, "service definition brought up to date") != 2 {
		t.Errorf("want one line per file:\n%s", l)
	}
	for _, want := range []string{`removed="command_background=true\n\tneed net"`, `\tuse net"`, "supervisor=supervise-daemon", "EnvironmentFile=-/etc/default/patchd-agent", "ran cmd=\"systemctl daemon-reload\""} {
		if !strings.Contains(l, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if fi, err := os.Stat(script); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the script: %v %v", fi, err)
	}
	// (The inventory's collectors ask the recording systemctl for services too.)
	reloads := func() int { return strings.Count(read(systemctlCalls), "daemon-reload") }
	if n := reloads(); n != 1 {
		t.Errorf("systemctl daemon-reload ran %d times", n)
	}
	stat := func(path string) (uint64, time.Time) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino, fi.ModTime()
	}
	scriptIno, scriptTime := stat(script)
	unitIno, unitTime := stat(unit)

	// Started again (as the service manager does at the next boot): the
	// files are current, nothing is written or run, the agent runs on.
	stopAgent()
	starts := strings.Count(logs.String(), "patchd-agent running")
	startAgent()
	scans := strings.Count(logs.String(), "package lists refreshed")
	waitFor("2.0.0 running again and checked in twice", func() bool {
		kick()
		return strings.Count(logs.String(), "patchd-agent running") > starts && strings.Count(logs.String(), "package lists refreshed") >= scans+2
	})
	if n := strings.Count(logs.String(), "service definition brought up to date"); n != 2 {
		t.Errorf("the second start replaced files again (%d lines)", n)
	}
	if ino, mt := stat(script); ino != scriptIno || !mt.Equal(scriptTime) {
		t.Error("the script was written again")
	}
	if ino, mt := stat(unit); ino != unitIno || !mt.Equal(unitTime) {
		t.Error("the unit was written again")
	}
	if n := reloads(); n != 1 {
		t.Errorf("systemctl daemon-reload ran again: %d times", n)
	}
	if left, _ := filepath.Glob(filepath.Join(root, "etc", "*", ".patchd-agent-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
