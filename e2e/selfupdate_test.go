package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agent"
	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
)

// buildVersion compiles patchd-agent as version with the release key
// built in.
func buildVersion(t *testing.T, out, version, releaseKey string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, "-ldflags",
		"-X github.com/patchd/patchd/agent.Version="+version+" -X github.com/patchd/patchd/agent.ReleaseKey="+releaseKey,
		"github.com/patchd/patchd/cmd/patchd-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", version, err, b)
	}
}

// TestRealAgentSelfUpdate builds the agent twice (1.0.0 and 2.0.0, the
// release key built in), runs 1.0.0 on this machine and publishes 2.0.0
// on the server with the organization's policy "latest": a tampered 2.0.0
// (its signature is of another file) is refused and 1.0.0 keeps checking
// in; the genuine one is downloaded, verified, put in place of the running
// binary, restarted into, and checks in as 2.0.0; the old binary goes once
// it did.
func TestRealAgentSelfUpdate(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skip("the real-machine check runs on Linux amd64/arm64, where CI runs")
	}
	agentDir := t.TempDir()
	e := apitest.New(t, func(c *config.Config) { c.AgentDir = agentDir })
	ctx := context.Background()
	dir := t.TempDir()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubText := base64.StdEncoding.EncodeToString(pub)
	exe := filepath.Join(dir, "bin", "patchd-agent")
	os.MkdirAll(filepath.Dir(exe), 0o755)
	buildVersion(t, exe, "1.0.0", pubText)
	v2 := filepath.Join(dir, "v2", "patchd-agent")
	buildVersion(t, v2, "2.0.0", pubText)
	v2sum, err := agentdist.FileSHA256(v2)
	if err != nil {
		t.Fatal(err)
	}
	p := agentdist.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	dist, err := agentdist.NewStore(agentDir)
	if err != nil {
		t.Fatal(err)
	}

	// The tampered release: 2.0.0 with bytes added after it was signed.
	tampered := filepath.Join(dir, "tampered")
	b, _ := os.ReadFile(v2)
	os.WriteFile(tampered, append(b, []byte("\x00tampered")...), 0o755)
	if _, err := dist.Publish(tampered, p); err != nil {
		t.Fatal(err)
	}
	if _, err := dist.SetRelease(p, "2.0.0", agentproto.SignRelease(priv, p.OS, p.Arch, "2.0.0", v2sum), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SetAgentPolicy(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "agent.policy", TargetType: "org"},
		e.Org.ID, store.AgentPolicy{Policy: store.AgentPolicyLatest}, time.Now()); err != nil {
		t.Fatal(err)
	}

	state := filepath.Join(dir, "state")
	env, _ := fakeAptGet(t, dir)
	enroll := exec.Command(exe, "enroll", "--state", state, "--server", e.URL, "--token", e.EnrollToken)
	enroll.Env = env
	if out, err := enroll.CombinedOutput(); err != nil {
		t.Fatalf("enroll: %v\n%s", err, out)
	}
	st, err := agent.LoadState(state)
	if err != nil {
		t.Fatal(err)
	}
	id := st.EndpointID
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	logs := &syncLog{}
	var exited chan error
	var agentPID int
	// start runs the agent as a service manager would (and, after the
	// watchdog ended it, runs it again).
	start := func() {
		run := exec.CommandContext(runCtx, exe, "run", "--state", state, "--update-grace", "20s", "--release-check", "1s")
		// This test restarts the agent as systemd does: the watchdog leaves that to it.
		run.Env = append(env, "PATCHD_AGENT_SUPERVISED=1")
		run.Stdout, run.Stderr = logs, logs
		run.WaitDelay = 5 * time.Second
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		agentPID = run.Process.Pid
		ch := make(chan error, 1)
		go func() { ch <- run.Wait() }()
		exited = ch
	}
	start()
	defer func() {
		stop()
		<-exited
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Minute); !cond(); time.Sleep(100 * time.Millisecond) {
			select {
			case err := <-exited:
				t.Fatalf("%s: the agent exited: %v", what, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 3 minutes", what)
			}
		}
	}
	version := func() string {
		d, err := e.Admin.GetEndpoint(ctx, id)
		if err != nil || d.AgentVersion == nil {
			return ""
		}
		return *d.AgentVersion
	}
	// kick ends the agent's long poll (a scan request), so that the next
	// check-in and what follows it come now.
	kick := func() {
		if e.Server.Presence().Polling(id) {
			if err := e.Admin.ScanEndpoint(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}

	waitFor("the tampered release refused", func() bool { kick(); return strings.Contains(logs.String(), "agent update refused: bad signature") })
	if v := version(); v != "1.0.0" {
		t.Fatalf("after the tampered release the endpoint reports %q", v)
	}
	// reported returns whether the server lists the endpoint's last update
	// failure as one for version with reason containing why.
	reported := func(version, why string) bool {
		kick()
		v, err := e.Admin.AgentVersions(ctx)
		return err == nil && len(v.Failures) == 1 && v.Failures[0].EndpointID == id && v.Failures[0].Version == version &&
			strings.Contains(v.Failures[0].Reason, why)
	}
	waitFor("the refusal reported to the server", func() bool { return reported("2.0.0", "bad signature") })
	if sum, _ := agentdist.FileSHA256(exe); sum == v2sum {
		t.Fatal("the binary was replaced")
	}
	// 1.0.0 keeps checking in (scans go through).
	n := strings.Count(logs.String(), "package lists refreshed")
	waitFor("1.0.0 still working", func() bool { kick(); return strings.Count(logs.String(), "package lists refreshed") > n })

	// The genuine release.
	if _, err := dist.Publish(v2, p); err != nil {
		t.Fatal(err)
	}
	if _, err := dist.SetRelease(p, "2.0.0", agentproto.SignRelease(priv, p.OS, p.Arch, "2.0.0", v2sum), []ed25519.PublicKey{pub}); err != nil {
		t.Fatal(err)
	}
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
	v3 := []byte("#!/bin/sh\nif [ \"$1\" = version ]; then echo \"patchd-agent 3.0.0 " + p.String() + "\"; exit 0; fi\nexec sleep 600\n")
	v3file := filepath.Join(dir, "v3")
	os.WriteFile(v3file, v3, 0o755)
	v3sum, _ := agentdist.FileSHA256(v3file)
	servedPath := filepath.Join(agentDir, p.OS+"-"+p.Arch, p.FileName())
	if err := os.Rename(v3file, servedPath); err != nil { // the release tooling refuses a script: put it there
		t.Fatal(err)
	}
	if _, err := dist.SetRelease(p, "3.0.0", agentproto.SignRelease(priv, p.OS, p.Arch, "3.0.0", v3sum), []ed25519.PublicKey{pub}); err != nil {
		t.Fatal(err)
	}
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
