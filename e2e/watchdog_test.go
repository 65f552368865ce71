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
	"syscall"
	"testing"
	"time"

	"github.com/patchd/patchd/agent"
	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
)

// TestRealAgentWatchdogStartsOldAgent: the real agent runs as SysV init or
// OpenRC without a supervisor run it (in the background, its pid in a pid
// file, nothing to start it again). It updates itself to a release that
// starts but never checks in; the watchdog puts the old binary back, ends
// the new agent and, as no service manager will, starts the old agent
// itself and writes its pid into the pid file. The old agent refuses the
// release, reports the rollback and goes on checking in.
func TestRealAgentWatchdogStartsOldAgent(t *testing.T) {
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
	exe := filepath.Join(dir, "bin", "patchd-agent")
	os.MkdirAll(filepath.Dir(exe), 0o755)
	buildVersion(t, exe, "2.0.0", base64.StdEncoding.EncodeToString(pub))
	v2sum, err := agentdist.FileSHA256(exe)
	if err != nil {
		t.Fatal(err)
	}
	p := agentdist.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	dist, err := agentdist.NewStore(agentDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dist.Publish(exe, p); err != nil {
		t.Fatal(err)
	}
	// 3.0.0 answers its version but never checks in.
	v3 := []byte("#!/bin/sh\nif [ \"$1\" = version ]; then echo \"patchd-agent 3.0.0 " + p.String() + "\"; exit 0; fi\nexec sleep 600\n")
	v3file := filepath.Join(dir, "v3")
	os.WriteFile(v3file, v3, 0o755)
	v3sum, _ := agentdist.FileSHA256(v3file)
	if err := os.Rename(v3file, filepath.Join(agentDir, p.OS+"-"+p.Arch, p.FileName())); err != nil { // the release tooling refuses a script
		t.Fatal(err)
	}
	if _, err := dist.SetRelease(p, "3.0.0", agentproto.SignRelease(priv, p.OS, p.Arch, "3.0.0", v3sum), []ed25519.PublicKey{pub}); err != nil {
		t.Fatal(err)
	}

	state := filepath.Join(dir, "state")
	env, _ := fakeAptGet(t, dir)
	env = slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "INVOCATION_ID=") || strings.HasPrefix(kv, "PATCHD_AGENT_SUPERVISED=")
	})
	pidFile := filepath.Join(dir, "patchd-agent.pid")
	env = append(env, "PATCHD_AGENT_PIDFILE="+pidFile)
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

	// As the SysV script does: in the background, output to a log file,
	// the pid into the pid file.
	logFile := filepath.Join(dir, "patchd-agent.log")
	lf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	run := exec.Command(exe, "run", "--state", state, "--update-grace", "10s", "--release-check", "1s")
	run.Env = env
	run.Stdout, run.Stderr = lf, lf
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(pidFile, []byte(strconv.Itoa(run.Process.Pid)+"\n"), 0o644)
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	// The agent the watchdog starts is no child of this test: it is ended
	// by the pid it wrote.
	defer func() {
		run.Process.Kill()
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid != run.Process.Pid {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("agent log:\n%s", b)
		}
	}()
	logs := func() string { b, _ := os.ReadFile(logFile); return string(b) }
	kick := func() {
		if e.Server.Presence().Polling(id) {
			if err := e.Admin.ScanEndpoint(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Minute); !cond(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 3 minutes", what)
			}
		}
	}

	if err := e.Store.SetAgentPolicy(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "agent.policy", TargetType: "org"},
		e.Org.ID, store.AgentPolicy{Policy: store.AgentPolicyLatest}, time.Now()); err != nil {
		t.Fatal(err)
	}
	waitFor("the update to 3.0.0", func() bool { kick(); return strings.Contains(logs(), "restarting into it") })
	waitFor("the watchdog ending 3.0.0", func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	})
	if sum, _ := agentdist.FileSHA256(exe); sum != v2sum {
		t.Fatal("the watchdog did not put 2.0.0 back")
	}
	var pid int
	waitFor("the old agent started by the watchdog, its pid in the pid file", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0 && pid != run.Process.Pid && syscall.Kill(pid, 0) == nil
	})
	if cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); !strings.Contains(string(cmdline), "run\x00--state\x00"+state) {
		t.Fatalf("the pid file's process: %q", cmdline)
	}
	waitFor("2.0.0 back, 3.0.0 refused and the rollback reported", func() bool {
		kick()
		st, err := agent.LoadState(state)
		v, verr := e.Admin.AgentVersions(ctx)
		return err == nil && st.Update == nil && slices.Contains(st.RefusedReleases, v3sum) && verr == nil && len(v.Failures) == 1 &&
			v.Failures[0].Version == "3.0.0" && strings.Contains(v.Failures[0].Reason, "rolled back")
	})
	for _, want := range []string{"the watchdog started the old one", "agent update failed: the previous agent runs again"} {
		if !strings.Contains(logs(), want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	d, err := e.Admin.GetEndpoint(ctx, id)
	if err != nil || d.AgentVersion == nil || *d.AgentVersion != "2.0.0" {
		t.Fatalf("the endpoint reports %v %v", d.AgentVersion, err)
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
	exe := filepath.Join(dir, "bin", "patchd-agent")
	os.MkdirAll(filepath.Dir(exe), 0o755)
	buildVersion(t, exe, "2.0.0", base64.StdEncoding.EncodeToString(pub))
	v2sum, err := agentdist.FileSHA256(exe)
	if err != nil {
		t.Fatal(err)
	}
	p := agentdist.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	dist, err := agentdist.NewStore(agentDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dist.Publish(exe, p); err != nil {
		t.Fatal(err)
	}
	// 3.0.0 answers its version, and fails as soon as it runs.
	v3 := []byte("#!/bin/sh\nif [ \"$1\" = version ]; then echo \"patchd-agent 3.0.0 " + p.String() + "\"; exit 0; fi\necho 'patchd-agent 3.0.0: crashed' >&2\nexit 2\n")
	v3file := filepath.Join(dir, "v3")
	os.WriteFile(v3file, v3, 0o755)
	v3sum, _ := agentdist.FileSHA256(v3file)
	if err := os.Rename(v3file, filepath.Join(agentDir, p.OS+"-"+p.Arch, p.FileName())); err != nil { // the release tooling refuses a script
		t.Fatal(err)
	}
	if _, err := dist.SetRelease(p, "3.0.0", agentproto.SignRelease(priv, p.OS, p.Arch, "3.0.0", v3sum), []ed25519.PublicKey{pub}); err != nil {
		t.Fatal(err)
	}

	state := filepath.Join(dir, "state")
	env, _ := fakeAptGet(t, dir)
	env = slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "INVOCATION_ID=") || strings.HasPrefix(kv, "PATCHD_AGENT_SUPERVISED=")
	})
	pidFile := filepath.Join(dir, "patchd-agent.pid")
	env = append(env, "PATCHD_AGENT_PIDFILE="+pidFile)
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

	logFile := filepath.Join(dir, "patchd-agent.log")
	lf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	// The deadline (an hour) cannot be what rolls the update back here.
	run := exec.Command(exe, "run", "--state", state, "--update-grace", "1h", "--release-check", "1s")
	run.Env = env
	run.Stdout, run.Stderr = lf, lf
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(pidFile, []byte(strconv.Itoa(run.Process.Pid)+"\n"), 0o644)
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	defer func() {
		run.Process.Kill()
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid != run.Process.Pid {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("agent log:\n%s", b)
		}
	}()
	logs := func() string { b, _ := os.ReadFile(logFile); return string(b) }
	kick := func() {
		if e.Server.Presence().Polling(id) {
			if err := e.Admin.ScanEndpoint(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Minute); !cond(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 3 minutes", what)
			}
		}
	}

	if err := e.Store.SetAgentPolicy(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "agent.policy", TargetType: "org"},
		e.Org.ID, store.AgentPolicy{Policy: store.AgentPolicyLatest}, time.Now()); err != nil {
		t.Fatal(err)
	}
	waitFor("the update to 3.0.0", func() bool { kick(); return strings.Contains(logs(), "restarting into it") })
	waitFor("3.0.0 exiting", func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	})
	if !strings.Contains(logs(), "3.0.0: crashed") {
		t.Fatal("3.0.0 did not run")
	}
	var pid int
	waitFor("the old agent started again by the watchdog, its pid in the pid file", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0 && pid != run.Process.Pid && syscall.Kill(pid, 0) == nil
	})
	if sum, _ := agentdist.FileSHA256(exe); sum != v2sum {
		t.Fatal("the watchdog did not put 2.0.0 back")
	}
	waitFor("3.0.0 refused and the crash reported", func() bool {
		kick()
		st, err := agent.LoadState(state)
		v, verr := e.Admin.AgentVersions(ctx)
		return err == nil && st.Update == nil && slices.Contains(st.RefusedReleases, v3sum) && verr == nil && len(v.Failures) == 1 &&
			v.Failures[0].Version == "3.0.0" && strings.Contains(v.Failures[0].Reason, "ended before it checked in")
	})
	d, err := e.Admin.GetEndpoint(ctx, id)
	if err != nil || d.AgentVersion == nil || *d.AgentVersion != "2.0.0" {
		t.Fatalf("the endpoint reports %v %v", d.AgentVersion, err)
	}
}
