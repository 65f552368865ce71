package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// TestUpdateRolledBackWhenNewAgentDoesNotCheckIn: the new agent of an
// update that cannot check in within the grace period puts the old binary
// back and restarts into it; the old agent then records the release as
// refused and goes on.
func TestUpdateRolledBackWhenNewAgentDoesNotCheckIn(t *testing.T) {
	f, srv := newFakeServer(t)
	dir := enroll(t, srv)
	exe, _ := pendingUpdate(t, dir, time.Now().Add(-time.Hour), time.Now().Add(-time.Minute)) // this is the new agent

	f.down.Store(true) // it cannot check in
	var collects atomic.Int32
	cfg := testConfig(t, dir, &collects)
	cfg.Executable = exe
	cfg.UpdateGrace = time.Minute
	restarted := make(chan string, 1)
	cfg.Restart = func(exe string) error {
		restarted <- exe
		return nil
	}
	stop, _ := start(t, cfg)
	select {
	case got := <-restarted:
		if got != exe {
			t.Fatalf("restarted into %s", got)
		}
	case <-time.After(waitLimit):
		t.Fatal("no rollback")
	}
	stop()
	if b, _ := os.ReadFile(exe); string(b) != "old agent" {
		t.Fatalf("the binary after the rollback: %q", b)
	}

	// The old agent starts: it notes the failure and does not try again.
	Version = "1.0.0"
	f.down.Store(false)
	stop, _ = start(t, cfg)
	eventually(t, "the old agent's check-ins", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.checkins > 2
	})
	stop()
	st, _ := LoadState(dir)
	if st.Update != nil || !slices.Contains(st.RefusedReleases, "abc") {
		t.Fatalf("state after the rollback: update %+v, refused %v", st.Update, st.RefusedReleases)
	}
	// The rollback was reported once (the check-ins after the answered
	// one do not repeat it), and the state no longer holds it.
	f.mu.Lock()
	failures := f.failures
	f.mu.Unlock()
	if len(failures) != 1 || failures[0].Version != "2.0.0" || !strings.Contains(failures[0].Reason, "rolled back") || failures[0].At.IsZero() {
		t.Fatalf("failures reported: %+v", failures)
	}
	if st.UpdateFailure != nil {
		t.Fatalf("reported failure still kept: %+v", st.UpdateFailure)
	}
}

// TestUpdateConfirmedAtCheckIn: the new agent that checks in removes the
// old binary and clears the update.
func TestUpdateConfirmedAtCheckIn(t *testing.T) {
	f, srv := newFakeServer(t)
	dir := enroll(t, srv)
	exe, old := pendingUpdate(t, dir, time.Now(), time.Now().Add(time.Hour))
	var collects atomic.Int32
	cfg := testConfig(t, dir, &collects)
	cfg.Executable = exe
	cfg.Restart = func(string) error { t.Error("restarted"); return nil }
	stop, _ := start(t, cfg)
	eventually(t, "the confirmation", func() bool {
		_, err := os.Stat(old)
		return os.IsNotExist(err)
	})
	stop()
	if st, _ := LoadState(dir); st.Update != nil {
		t.Fatalf("update still pending: %+v", st.Update)
	}
	_ = f
}

// TestTrial: a new binary that does not start, or is another version
// than its release says, is not put in place.
func TestTrial(t *testing.T) {
	dir := t.TempDir()
	write := func(name, script string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755)
		return p
	}
	ctx := context.Background()
	if err := trial(ctx, write("good", "echo patchd-agent 2.0.0 linux/amd64"), "2.0.0"); err != nil {
		t.Fatalf("good binary: %v", err)
	}
	for name, script := range map[string]string{"crash": "exit 2", "liar": "echo patchd-agent 1.0.0 linux/amd64", "prefix": "echo patchd-agent 2.0.0.1 linux/amd64"} {
		if err := trial(ctx, write(name, script), "2.0.0"); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestReleaseReadThrottled: while the server asks for the same target the
// release is read once per ReleaseCheckEvery, not at every check-in; a new
// target is read at once; an agent without a release key reads nothing.
func TestReleaseReadThrottled(t *testing.T) {
	f, srv := newFakeServer(t)
	f.agentTarget = "latest"
	dir := enroll(t, srv)
	var collects atomic.Int32
	cfg := testConfig(t, dir, &collects)
	cfg.Executable = filepath.Join(t.TempDir(), "patchd-agent")
	cfg.ReleaseCheckEvery = time.Hour
	checkins := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.checkins
	}

	// No key: nothing read.
	stop, _ := start(t, cfg)
	eventually(t, "three check-ins", func() bool { return checkins() >= 3 })
	stop()
	if n := f.releaseGets.Load(); n != 0 {
		t.Fatalf("an agent without a release key read the release %d times", n)
	}

	st, _ := LoadState(dir)
	st.ReleaseKey = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
	st.Save(dir)
	stop, _ = start(t, cfg)
	before := checkins()
	eventually(t, "four more check-ins", func() bool { return checkins() >= before+4 })
	if n := f.releaseGets.Load(); n != 1 {
		t.Fatalf("the release was read %d times in 4 check-ins; want once", n)
	}
	f.mu.Lock()
	f.agentTarget = "2.0.0"
	f.mu.Unlock()
	eventually(t, "the new target read", func() bool { return f.releaseGets.Load() == 2 })
	before = checkins()
	eventually(t, "two more check-ins", func() bool { return checkins() >= before+2 })
	stop()
	if n := f.releaseGets.Load(); n != 2 {
		t.Fatalf("read %d times", n)
	}
}

// TestUpdateEndsForServiceManager: where the agent cannot re-execute in
// place (Windows: Restart answers ErrRestart), the verified new binary is
// put in place of the running one, the old kept beside it, the update
// recorded, the watchdog started, and Run ends with ErrRestart for the
// service manager to start the new binary; a new agent that then cannot
// check in puts the old binary back and ends the same way.
func TestUpdateEndsForServiceManager(t *testing.T) {
	f, srv := newFakeServer(t)
	dir := enroll(t, srv)
	newAgent, _ := offerRelease(t, f, dir, "latest", "2.0.0")

	exe := filepath.Join(t.TempDir(), "patchd-agent")
	os.WriteFile(exe, []byte("old agent"), 0o755)
	var collects atomic.Int32
	cfg := testConfig(t, dir, &collects)
	cfg.Executable = exe
	cfg.Restart = func(string) error { return ErrRestart }
	var watchdog atomic.Value
	cfg.StartWatchdog = func(old, stateDir string, pid int) (int, error) { watchdog.Store(old); return 0, nil }
	_, done := start(t, cfg)
	endsForRestart(t, done, "Run")
	if b, _ := os.ReadFile(exe); string(b) != string(newAgent) {
		t.Fatalf("the binary is not the new agent: %q", b)
	}
	if b, _ := os.ReadFile(exe + ".old"); string(b) != "old agent" {
		t.Fatalf("the old binary is not kept: %q", b)
	}
	if got, _ := watchdog.Load().(string); got != exe+".old" {
		t.Errorf("watchdog started from %q", got)
	}
	st, _ := LoadState(dir)
	if st.Update == nil || st.Update.To != "2.0.0" || st.Update.Old != exe+".old" {
		t.Fatalf("the pending update: %+v", st.Update)
	}

	// The new agent, started by the service manager, cannot check in
	// before its deadline: the old binary is back and Run ends again.
	runningAs(t, "2.0.0")
	st.Update.Deadline = time.Now().Add(-time.Second)
	st.Save(dir)
	f.down.Store(true)
	_, done = start(t, cfg)
	endsForRestart(t, done, "the rolled-back new agent")
	if b, _ := os.ReadFile(exe); string(b) != "old agent" {
		t.Fatalf("after the rollback the binary is %q", b)
	}
}

// TestUpdateRefusesDowngradeUnderLatest: under the policy "latest" a
// validly signed release older than the running agent is refused — not
// downloaded, reported once, the binary left alone — while a policy that
// names exactly that version (an administrator's pin) is followed down.
func TestUpdateRefusesDowngradeUnderLatest(t *testing.T) {
	f, srv := newFakeServer(t)
	dir := enroll(t, srv)
	runningAs(t, "2.0.0")
	older, sumHex := offerRelease(t, f, dir, "latest", "1.9.0")

	exe := filepath.Join(t.TempDir(), "patchd-agent")
	os.WriteFile(exe, []byte("agent 2.0.0"), 0o755)
	var collects atomic.Int32
	cfg := testConfig(t, dir, &collects)
	cfg.Executable = exe
	cfg.ReleaseCheckEvery = time.Millisecond // read the release at every check-in
	cfg.Restart = func(string) error { return ErrRestart }
	cfg.StartWatchdog = func(old, stateDir string, pid int) (int, error) { return 0, nil }
	stop, done := start(t, cfg)
	eventually(t, "the downgrade reported", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.failures) > 0
	})
	reads := f.releaseGets.Load()
	eventually(t, "the release read again", func() bool { return f.releaseGets.Load() > reads+2 })
	select {
	case err := <-done:
		t.Fatalf("the agent ended (%v): it took the older release", err)
	default:
	}
	f.mu.Lock()
	failures := slices.Clone(f.failures)
	f.mu.Unlock()
	if len(failures) != 1 || failures[0].Version != "1.9.0" || !strings.Contains(failures[0].Reason, "older than this agent (2.0.0)") {
		t.Fatalf("failures reported: %+v", failures)
	}
	if b, _ := os.ReadFile(exe); string(b) != "agent 2.0.0" {
		t.Fatalf("the binary was replaced under latest: %q", b)
	}
	if _, err := os.Stat(exe + ".old"); !os.IsNotExist(err) {
		t.Fatalf("an update was started under latest: %v", err)
	}
	stop()
	st, _ := LoadState(dir)
	if !slices.Contains(st.RefusedDowngrades, sumHex) || slices.Contains(st.RefusedReleases, sumHex) {
		t.Fatalf("state: refused downgrades %v, refused releases %v", st.RefusedDowngrades, st.RefusedReleases)
	}

	// The administrator pins 1.9.0: the agent follows it down.
	f.mu.Lock()
	f.agentTarget = "1.9.0"
	f.mu.Unlock()
	_, done = start(t, cfg)
	endsForRestart(t, done, "Run")
	if b, _ := os.ReadFile(exe); string(b) != string(older) {
		t.Fatalf("the binary is not the pinned 1.9.0: %q", b)
	}
	if st, _ := LoadState(dir); st.Update == nil || st.Update.From != "2.0.0" || st.Update.To != "1.9.0" {
		t.Fatalf("the pending update: %+v", st.Update)
	}
}

// pendingUpdate makes this test's agent the new 2.0.0 of an update from
// 1.0.0 started at at, to be confirmed by deadline: the new binary exe and
// the old kept beside it, old, and the update in the state of dir.
func pendingUpdate(t *testing.T, dir string, at, deadline time.Time) (exe, old string) {
	t.Helper()
	bin := t.TempDir()
	exe, old = filepath.Join(bin, "patchd-agent"), filepath.Join(bin, "patchd-agent.old")
	os.WriteFile(exe, []byte("new agent"), 0o755)
	os.WriteFile(old, []byte("old agent"), 0o755)
	st, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Update = &PendingUpdate{From: "1.0.0", To: "2.0.0", SHA256: "abc", Exe: exe, Old: old, At: at, Deadline: deadline}
	if err := st.Save(dir); err != nil {
		t.Fatal(err)
	}
	runningAs(t, "2.0.0")
	return exe, old
}

// runningAs makes this test's agent the given version.
func runningAs(t *testing.T, version string) {
	saved := Version
	t.Cleanup(func() { Version = saved })
	Version = version
}

// offerRelease has the agent of dir trust a new release key and f offer,
// under the policy target, a release of version signed with it; it answers
// the release's binary (a script that prints its version) and its SHA-256.
func offerRelease(t *testing.T, f *fakeServer, dir, target, version string) ([]byte, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := LoadState(dir)
	st.ReleaseKey = base64.StdEncoding.EncodeToString(pub)
	st.Save(dir)
	bin := []byte("#!/bin/sh\necho patchd-agent " + version + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n")
	sum := sha256.Sum256(bin)
	sumHex := hex.EncodeToString(sum[:])
	f.mu.Lock()
	defer f.mu.Unlock()
	f.agentTarget = target
	f.release = &agentproto.Release{OS: runtime.GOOS, Arch: runtime.GOARCH, Version: version, SHA256: sumHex, Size: int64(len(bin)),
		Signature: agentproto.SignRelease(priv, runtime.GOOS, runtime.GOARCH, version, sumHex)}
	f.download = bin
	return bin, sumHex
}

// endsForRestart waits for Run (done) to end with ErrRestart, the end that
// hands the agent to its service manager.
func endsForRestart(t *testing.T, done <-chan error, who string) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, ErrRestart) {
			t.Fatalf("%s ended with %v, want ErrRestart", who, err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("%s did not end for the restart", who)
	}
}
