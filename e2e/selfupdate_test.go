package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agent"
	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/lockedbuf"
)

// buildVersion compiles patchd-agent as version with the release key
// built in.
func buildVersion(t *testing.T, out, version, releaseKey string) {
	t.Helper()
	goBuildAgent(t, "", out, version, releaseKey)
}

// TestRealAgentSelfUpdate builds the agent twice (1.0.0 and 2.0.0, the
// release key built in), runs 1.0.0 on this machine and publishes 2.0.0
// on the server with the organization's policy "latest": a tampered 2.0.0
// (its signature is of another file) is refused and 1.0.0 keeps checking
// in; the genuine one is downloaded, verified, put in place of the running
// binary, restarted into, and checks in as 2.0.0; the old binary goes once
// it did.
func TestRealAgentSelfUpdate(t *testing.T) {
	r := newUpdateRig(t)
	p := r.p
	r.build(r.exe, "1.0.0")
	v2 := filepath.Join(r.dir, "v2", "patchd-agent")
	v2sum := r.build(v2, "2.0.0")

	// The tampered release: 2.0.0 with bytes added after it was signed.
	tampered := filepath.Join(r.dir, "tampered")
	b, _ := os.ReadFile(v2)
	os.WriteFile(tampered, append(b, []byte("\x00tampered")...), 0o755)
	if _, err := r.dist.Publish(tampered, p); err != nil {
		t.Fatal(err)
	}
	if _, err := r.dist.SetRelease(p, "2.0.0", agentproto.SignRelease(r.priv, p.OS, p.Arch, "2.0.0", v2sum), nil); err != nil {
		t.Fatal(err)
	}
	r.enroll()
	logs := &lockedbuf.Buffer{}
	var run *exec.Cmd
	var exited chan error
	var agentPID int
	// start runs the agent as a service manager would (and, after the
	// watchdog ended it, runs it again); this test restarts the agent as
	// systemd does: the watchdog leaves that to it.
	start := func() {
		run, exited = r.run(append(r.env, "PATCHD_AGENT_SUPERVISED=1"), logs, "--update-grace", "20s", "--release-check", "1s")
		agentPID = run.Process.Pid
	}
	start()
	defer func() {
		run.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	}()
	waitFor := func(what string, cond func() bool) { t.Helper(); waitFor(t, what, exited, cond) }
	version, kick, reported := r.version, r.kick, r.reported
	exe, state := r.exe, r.state

	waitFor("the tampered release refused", func() bool { kick(); return strings.Contains(logs.String(), "agent update refused: bad signature") })
	if v := version(); v != "1.0.0" {
		t.Fatalf("after the tampered release the endpoint reports %q", v)
	}
	waitFor("the refusal reported to the server", func() bool { return reported("2.0.0", "bad signature") })
	if sum, _ := agentdist.FileSHA256(exe); sum == v2sum {
		t.Fatal("the binary was replaced")
	}
	// 1.0.0 keeps checking in (scans go through).
	n := strings.Count(logs.String(), "package lists refreshed")
	waitFor("1.0.0 still working", func() bool { kick(); return strings.Count(logs.String(), "package lists refreshed") > n })

	// The genuine release.
	r.release(v2, "2.0.0")
	waitFor("the endpoint on 2.0.0", func() bool { kick(); return version() == "2.0.0" })
	// The new agent reports 2.0.0 before the watchdog's confirmation moves
	// the files into place: the file is checked once the update is confirmed.
	waitFor("the update confirmed", func() bool {
		st, err := agent.LoadState(state)
		_, oldErr := os.Stat(exe + ".old")
		return err == nil && st.Update == nil && os.IsNotExist(oldErr)
	})
	if sum, _ := agentdist.FileSHA256(exe); sum != v2sum {
		t.Fatal("the running binary's file is not 2.0.0")
	}
	if out, err := exec.Command(exe, "version").Output(); err != nil || !strings.HasPrefix(string(out), "patchd-agent 2.0.0 ") {
		t.Fatalf("the installed agent: %q %v", out, err)
	}
	if !strings.Contains(logs.String(), "agent update confirmed") {
		t.Fatal("no confirmation in the log")
	}
	// The watchdog, started by 1.0.0 in this process, ends once 2.0.0
	// checked in; 2.0.0, now running in that process, waits for it: no
	// zombie is left behind.
	waitFor("the watchdog ended and reaped", func() bool {
		for _, c := range childrenOf(t, agentPID) {
			if c.state == 'Z' || strings.Contains(c.cmdline, "update-watchdog") {
				return false
			}
		}
		return true
	})

	// 3.0.0 starts (it answers its version) but never checks in: the
	// watchdog, run from the 2.0.0 binary, puts 2.0.0 back and ends it;
	// started again, 2.0.0 refuses that release and checks in.
	v3sum := r.releaseScript("3.0.0", "exec sleep 600\n")
	deadline := time.Now().Add(3 * time.Minute)
	for ended := false; !ended; {
		kick()
		select {
		case <-exited:
			ended = true
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("3.0.0 was not ended by the watchdog within 3 minutes")
		}
	}
	if sum, _ := agentdist.FileSHA256(exe); sum != v2sum {
		t.Fatal("the watchdog did not put 2.0.0 back")
	}
	start()
	waitFor("2.0.0 back and 3.0.0 refused", func() bool {
		st, err := agent.LoadState(state)
		return err == nil && st.Update == nil && slices.Contains(st.RefusedReleases, v3sum) && version() == "2.0.0"
	})
	if !strings.Contains(logs.String(), "agent update failed: the previous agent runs again") {
		t.Fatal("the rollback is not in the log")
	}
	waitFor("the rollback reported to the server", func() bool { return reported("3.0.0", "rolled back") })
	// It does not try 3.0.0 again.
	n = strings.Count(logs.String(), "package lists refreshed")
	waitFor("2.0.0 working", func() bool { kick(); return strings.Count(logs.String(), "package lists refreshed") > n+1 })
	if sum, _ := agentdist.FileSHA256(exe); sum != v2sum || strings.Count(logs.String(), "restarting into it") != 2 {
		t.Fatal("3.0.0 was tried again")
	}
}

// child is a process of /proc: its state letter and command line.
type child struct {
	pid     int
	state   byte
	cmdline string
}

// childrenOf lists the processes whose parent is pid (Linux's /proc).
func childrenOf(t *testing.T, pid int) []child {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []child
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold blanks and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != pid {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		out = append(out, child{pid: n, state: f[0][0], cmdline: strings.ReplaceAll(string(cmdline), "\x00", " ")})
	}
	return out
}
