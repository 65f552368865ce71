package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// ReleaseKey is the release public key built into the agent (base64 of an
// Ed25519 public key), set at build time:
//
//	go build -ldflags "-X github.com/patchd/patchd/agent.ReleaseKey=BASE64" ./cmd/patchd-agent
//
// Without one (and without a key pinned at enrollment) the agent never
// updates itself.
var ReleaseKey = ""

// DefaultUpdateGrace is how long a new agent has to check in before the
// old binary is put back.
const DefaultUpdateGrace = 5 * time.Minute

// DefaultReleaseCheckEvery is how often the published release is read
// while the target stays the same: a fleet does not ask at every check-in.
const DefaultReleaseCheckEvery = 15 * time.Minute

// PendingUpdate is a self-update whose new binary has not checked in yet.
type PendingUpdate struct {
	From   string    `json:"from"`
	To     string    `json:"to"`
	SHA256 string    `json:"sha256"`
	Exe    string    `json:"exe"` // the agent's binary, now the new one
	Old    string    `json:"old"` // the previous binary, kept until the new one checks in
	At     time.Time `json:"at"`
	// Deadline is when the new agent must have checked in (At plus the
	// grace period): then the watchdog, or the new agent itself, puts the
	// old binary back.
	Deadline time.Time `json:"deadline"`
	// Supervised: a service manager starts the agent again when its
	// process ends (systemd, OpenRC's supervise-daemon: Supervised). Else
	// (SysV init, OpenRC without a supervisor) the watchdog that ends the
	// new agent starts the old one itself, with Args, and writes its pid
	// into PIDFile (the init script's, PATCHD_AGENT_PIDFILE) when set.
	Supervised bool     `json:"supervised,omitempty"`
	Args       []string `json:"args,omitempty"`
	PIDFile    string   `json:"pidFile,omitempty"`
	// AgentPID is the process that made the update and started the
	// watchdog (WatchdogPID), its child: the agent that runs on in that
	// process after the re-execution (the new one, or the old one again)
	// reaps the watchdog when it ends.
	AgentPID    int `json:"agentPid,omitempty"`
	WatchdogPID int `json:"watchdogPid,omitempty"`
	// PID is the new agent's process, written by the new agent as it
	// starts; Stopped, written as it ends on a stop request, tells the
	// watchdog that it did not crash. A new agent's process that ends
	// otherwise before it checked in is rolled back at once.
	PID     int  `json:"pid,omitempty"`
	Stopped bool `json:"stopped,omitempty"`
	// Ended is why the watchdog rolled back before the deadline, for the
	// old agent to report.
	Ended string `json:"ended,omitempty"`
}

// Supervised tells whether a service manager starts this agent again when
// its process ends: under systemd (INVOCATION_ID, the unit has
// Restart=on-failure) or where the service says so
// (PATCHD_AGENT_SUPERVISED=1: the OpenRC script under supervise-daemon).
func Supervised() bool {
	return os.Getenv("INVOCATION_ID") != "" || os.Getenv("PATCHD_AGENT_SUPERVISED") == "1" || runsAsWindowsService()
}

// ErrRestart ends Run so that the service manager starts the agent again
// (on Windows, where a process cannot replace its own image): the new
// binary after a self-update, the old one after a rollback. Windows' service
// manager restarts the agent's service on its failing exit (its recovery).
var ErrRestart = errors.New("the agent ends for the service manager to start it again (self-update)")

// maxRefused bounds State.RefusedReleases.
const maxRefused = 20

// releaseKeys are the keys this agent trusts releases from.
func (r *runner) releaseKeys() []ed25519.PublicKey {
	var keys []ed25519.PublicKey
	for _, s := range []string{ReleaseKey, r.state.ReleaseKey} {
		if s == "" {
			continue
		}
		k, err := agentproto.ParseReleaseKey(s)
		if err != nil {
			r.log.Error("release key ignored", "err", err)
			continue
		}
		keys = append(keys, k)
	}
	return keys
}

// refuse notes a release (its SHA-256) as refused, not tried again, and
// keeps the failure to report with the next check-in.
func (r *runner) refuse(sum, version, why string, args ...any) {
	r.log.Error("agent update refused: "+why, append([]any{"version", version}, args...)...)
	if sum != "" && !slices.Contains(r.state.RefusedReleases, sum) {
		r.state.UpdateFailure = &agentproto.UpdateFailure{Version: version, Reason: why, At: time.Now().UTC()}
		r.state.RefusedReleases = append(r.state.RefusedReleases, sum)
		if n := len(r.state.RefusedReleases); n > maxRefused {
			r.state.RefusedReleases = r.state.RefusedReleases[n-maxRefused:]
		}
		r.save()
	}
}

// refuseDowngrade notes a release refused under "latest" for not being
// newer (not tried again under "latest", still followed when a policy
// names its version) and keeps the failure to report.
func (r *runner) refuseDowngrade(sum, version, why string) {
	r.log.Error("agent update refused: "+why, "version", version, "running", Version)
	if slices.Contains(r.state.RefusedDowngrades, sum) {
		return
	}
	r.state.UpdateFailure = &agentproto.UpdateFailure{Version: version, Reason: why, At: time.Now().UTC()}
	r.state.RefusedDowngrades = append(r.state.RefusedDowngrades, sum)
	if n := len(r.state.RefusedDowngrades); n > maxRefused {
		r.state.RefusedDowngrades = r.state.RefusedDowngrades[n-maxRefused:]
	}
	r.save()
}

// selfUpdate follows the server's agentTarget: it reads the release
// published for this platform and, when it is the target and another
// version than this one (under "latest": a newer one), downloads it, checks its SHA-256 and its
// signature by a trusted release key, checks that it starts, puts it in
// place of this binary (keeping the old one) and restarts into it. It
// returns only when nothing was done or the update failed (the old agent
// keeps running).
func (r *runner) selfUpdate(ctx context.Context, target string) {
	if target == "" || r.state.Update != nil {
		return
	}
	keys := r.releaseKeys()
	if len(keys) == 0 {
		if !r.warnedNoKey {
			r.log.Warn("the server asks for an agent update, but this agent has no release key: it does not update itself", "target", target)
			r.warnedNoKey = true
		}
		return
	}
	if r.cfg.Executable == "" {
		return
	}
	if target == r.releaseTarget && time.Since(r.releaseAt) < r.cfg.ReleaseCheckEvery {
		return
	}
	r.releaseTarget, r.releaseAt = target, time.Now()
	rel, err := r.fetchRelease(ctx)
	if err != nil {
		r.log.Warn("agent release not read", "err", err)
		return
	}
	if rel == nil || rel.Version == Version || target != "latest" && rel.Version != target ||
		slices.Contains(r.state.RefusedReleases, rel.SHA256) {
		return
	}
	if target == "latest" && slices.Contains(r.state.RefusedDowngrades, rel.SHA256) {
		return
	}
	if rel.OS != runtime.GOOS || rel.Arch != runtime.GOARCH {
		r.refuse(rel.SHA256, rel.Version, "the release is for another platform", "release", rel.OS+"/"+rel.Arch)
		return
	}
	if err := agentproto.VerifyRelease(keys, *rel); err != nil {
		r.refuse(rel.SHA256, rel.Version, "bad signature", "err", err)
		return
	}
	// Under "latest" an agent only goes up: a validly signed older
	// release (served again, by mistake or by whoever can write the
	// server's agent folder) is refused. A policy that names the version
	// (pinned, or a staged rollout) is an administrator's explicit,
	// audited choice and is followed even downwards.
	if cmp, err := agentproto.CompareVersions(rel.Version, Version); target == "latest" && (err != nil || cmp < 0) {
		why := "older than this agent (" + Version + "): under the policy latest an agent never goes back; pin the version to roll back"
		if err != nil {
			why = "the versions cannot be ordered (" + err.Error() + "): under the policy latest an agent only goes to a newer semantic version"
		}
		r.refuseDowngrade(rel.SHA256, rel.Version, why)
		return
	} else if err == nil && cmp < 0 {
		r.log.Warn("agent update to an older version: the server's policy names it", "from", Version, "to", rel.Version)
	}
	exe := r.cfg.Executable
	dir := filepath.Dir(exe)
	newFile, err := r.download(ctx, dir, *rel)
	if err != nil {
		if errors.Is(err, errTampered) {
			r.refuse(rel.SHA256, rel.Version, "the download does not match the signed release", "err", err)
		} else {
			r.log.Warn("agent update not downloaded; tried again later", "version", rel.Version, "err", err)
		}
		return
	}
	defer os.Remove(newFile)
	if err := trial(ctx, newFile, rel.Version); err != nil {
		r.refuse(rel.SHA256, rel.Version, "the new agent does not start", "err", err)
		return
	}
	old := exe + ".old"
	os.Remove(old)
	if err := os.Rename(exe, old); err != nil {
		r.log.Error("agent update: cannot move the running binary aside", "err", err)
		return
	}
	if err := os.Rename(newFile, exe); err != nil {
		os.Rename(old, exe)
		r.log.Error("agent update: cannot put the new binary in place", "err", err)
		return
	}
	now := time.Now().UTC()
	r.state.Update = &PendingUpdate{From: Version, To: rel.Version, SHA256: rel.SHA256, Exe: exe, Old: old, At: now, Deadline: now.Add(r.cfg.UpdateGrace),
		Supervised: Supervised(), Args: slices.Clone(os.Args[1:]), PIDFile: os.Getenv("PATCHD_AGENT_PIDFILE"), AgentPID: os.Getpid()}
	r.save()
	// The watchdog runs from the old binary (known to work): a new agent
	// that hangs or crashes before it checks in cannot roll itself back.
	if pid, err := r.cfg.StartWatchdog(old, r.cfg.StateDir, os.Getpid()); err != nil {
		r.log.Warn("agent update: no watchdog; the new agent rolls back itself if it runs but cannot check in", "err", err)
	} else if pid > 0 {
		r.state.Update.WatchdogPID = pid
		r.save()
	}
	r.log.Info("agent updated; restarting into it", "from", Version, "to", rel.Version)
	if err := r.cfg.Restart(exe); errors.Is(err, ErrRestart) {
		r.restart = true
	} else if err != nil {
		r.log.Error("agent update: restart failed; the old agent stays", "err", err)
		r.rollback()
	}
}

var errTampered = errors.New("tampered")

func (r *runner) fetchRelease(ctx context.Context) (*agentproto.Release, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.state.Server+fmt.Sprintf(agentproto.PathRelease, runtime.GOOS, runtime.GOARCH), nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.cfg.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil // nothing published (signed) for this platform
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET release: %s", resp.Status)
	}
	var rel agentproto.Release
	if err := json.NewDecoder(io.LimitReader(resp.Body, agentproto.MaxOtherBytes)).Decode(&rel); err != nil {
		return nil, fmt.Errorf("GET release: %w", err)
	}
	return &rel, nil
}

// maxAgentBytes bounds a downloaded agent.
const maxAgentBytes = 512 << 20

// download writes the release's binary into dir (where it will replace
// this one: a rename stays on one file system) and checks its SHA-256.
func (r *runner) download(ctx context.Context, dir string, rel agentproto.Release) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.state.Server+fmt.Sprintf(agentproto.PathDownload, runtime.GOOS, runtime.GOARCH), nil)
	if err != nil {
		return "", err
	}
	resp, err := r.cfg.HTTP.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download: %s", resp.Status)
	}
	// On Windows a program runs from a file whose name ends in .exe.
	f, err := os.CreateTemp(dir, ".patchd-agent-new-*"+filepath.Ext(r.cfg.Executable))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(resp.Body, maxAgentBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > maxAgentBytes {
		err = fmt.Errorf("download: larger than %d bytes", maxAgentBytes)
	}
	if err == nil {
		if verr := agentproto.VerifyDownload(rel, h.Sum(nil)); verr != nil {
			err = fmt.Errorf("%w: %w", errTampered, verr)
		}
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o755)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// trial runs the new binary's `version` and checks that it answers the
// release's version: a binary that cannot start on this computer (another
// architecture, a broken build) is not put in place.
func trial(ctx context.Context, file, version string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, file, "version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s version: %v: %s", file, err, strings.TrimSpace(string(out)))
	}
	if f := strings.Fields(string(out)); len(f) < 2 || f[0] != "patchd-agent" || f[1] != version {
		return fmt.Errorf("%s version answered %q, not %s", file, strings.TrimSpace(string(out)), version)
	}
	return nil
}

// resumeUpdate runs at start. The new agent of an update (Version is its
// target) has until the grace period's end to check in (confirmUpdate),
// else rollback; the old agent after a rollback (Version is where it came
// from) notes the release as refused.
func (r *runner) resumeUpdate() {
	u := r.state.Update
	if u == nil {
		return
	}
	if u.WatchdogPID > 0 && u.AgentPID == os.Getpid() {
		// This process started the watchdog before it re-executed: the
		// watchdog is its child, to be waited for when it ends.
		go reapChild(u.WatchdogPID)
	}
	switch Version {
	case u.To:
		r.log.Info("agent update: this is the new agent; it must check in to stay", "from", u.From, "to", u.To,
			"by", u.Deadline.Round(time.Second))
		u.PID, u.Stopped = os.Getpid(), false
		r.save()
	default:
		os.Remove(u.Exe + ".failed") // the new agent's, set aside when it rolled back itself on Windows
		r.log.Error("agent update failed: the previous agent runs again", "from", u.From, "to", u.To, "running", Version)
		why := "rolled back: the new agent did not check in in time"
		if u.Ended != "" {
			why = "rolled back: " + u.Ended
		}
		r.state.Update = nil
		r.refuse(u.SHA256, u.To, why)
		r.save()
	}
}

// updateStopped notes that the new agent of an update ends on a stop
// request (the service stopped or restarted), not a crash: its watchdog
// waits for the deadline instead of rolling back at once.
func (r *runner) updateStopped() {
	if u := r.state.Update; u != nil && Version == u.To && u.PID == os.Getpid() && !u.Stopped {
		u.Stopped = true
		r.save()
	}
}

// confirmUpdate: the new agent checked in; the old binary goes.
func (r *runner) confirmUpdate() {
	u := r.state.Update
	if u == nil || Version != u.To {
		return
	}
	os.Remove(u.Old)
	r.state.Update = nil
	r.save()
	r.log.Info("agent update confirmed: the new agent checked in", "from", u.From, "to", u.To)
}

// updateOverdue tells whether the new agent missed its grace period.
func (r *runner) updateOverdue() bool {
	u := r.state.Update
	return u != nil && Version == u.To && time.Now().After(u.Deadline)
}

// rollback puts the old binary back and restarts into it (when this is
// the new agent); the old agent then records the failure.
func (r *runner) rollback() {
	u := r.state.Update
	if u == nil {
		return
	}
	if err := putBack(u.Old, u.Exe); err != nil {
		r.log.Error("agent update: cannot put the old binary back", "err", err)
		return
	}
	if Version != u.To {
		// This is the old agent (its restart failed): it keeps running.
		r.state.Update = nil
		r.refuse(u.SHA256, u.To, "the restart into the new agent failed")
		return
	}
	r.save()
	r.log.Error("agent update: the new agent did not check in in time; restarting the old one", "to", u.To, "deadline", u.Deadline)
	if err := r.cfg.Restart(u.Exe); errors.Is(err, ErrRestart) {
		r.restart = true
	} else if err != nil {
		r.log.Error("agent update: restart into the old agent failed", "err", err)
	}
}

// putBack puts the old binary back in place of exe. A running program's
// file cannot be replaced on Windows, but it can be renamed: exe (this
// agent, when it rolls back itself) goes aside to exe.failed first, which
// a later start removes.
func putBack(old, exe string) error {
	if runtime.GOOS != "windows" {
		return os.Rename(old, exe)
	}
	failed := exe + ".failed"
	os.Remove(failed)
	if err := os.Rename(exe, failed); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.Rename(old, exe); err != nil {
		os.Rename(failed, exe)
		return err
	}
	return nil
}

// watchdogSlack is how long after the deadline the watchdog waits for the
// new agent to roll back by itself.
const watchdogSlack = 15 * time.Second

// Watchdog is `patchd-agent update-watchdog`, started from the old binary
// by an update: it waits until the new agent checked in (the state's
// update cleared), its process ended before that (looked at every
// second), or its deadline passed; then it puts the old binary back and
// ends the new agent's process (pid), which the service manager starts
// again, now the old agent. It answers whether it rolled back.
func Watchdog(ctx context.Context, stateDir string, pid int, log *slog.Logger) (bool, error) {
	st, err := LoadState(stateDir)
	if err != nil {
		return false, err
	}
	u := st.Update
	if u == nil {
		return false, nil
	}
	ended, seen := 0, 0 // the new agent's process found gone (twice, once)
	for {
		st, err := LoadState(stateDir)
		if err == nil && (st.Update == nil || st.Update.SHA256 != u.SHA256) {
			return false, nil // confirmed (or rolled back by the new agent)
		}
		if time.Now().After(u.Deadline.Add(watchdogSlack)) {
			break
		}
		if err == nil {
			// Ended on two looks a second apart: a rollback is not made
			// on one reading of the process table.
			e := endedAgent(pid, st.Update)
			if e != 0 && e == seen {
				ended = e
				break
			}
			seen = e
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if _, err := os.Stat(u.Old); err != nil {
		return false, nil // the new agent put it back itself
	}
	if ended != 0 {
		return true, rollbackEnded(stateDir, ended, log)
	}
	// The new agent's process: the same as the old one's where the update
	// re-executed in place; on Windows the service's process now.
	pid = agentPID(pid)
	if runtime.GOOS == "windows" {
		// A running program's file cannot be replaced there: end it first
		// (the service manager starts it again after its recovery delay).
		log.Error("agent update: the new agent did not check in in time; ending it and putting the old binary back", "to", u.To, "pid", pid)
		endProcess(pid)
		var err error
		for i := 0; i < 60; i++ {
			if err = os.Rename(u.Old, u.Exe); err == nil {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			return false, fmt.Errorf("watchdog: put the old agent back: %w", err)
		}
		return true, nil
	}
	if err := os.Rename(u.Old, u.Exe); err != nil {
		return false, fmt.Errorf("watchdog: put the old agent back: %w", err)
	}
	log.Error("agent update: the new agent did not check in in time; the old binary is back, ending the new agent", "to", u.To, "pid", pid)
	endProcess(pid)
	return true, startOld(u, log)
}

// endedAgent answers the new agent's process when it has ended before
// checking in without being asked to stop (a crash, a failing exit), else
// 0. The new agent writes its process as it starts (u.PID); before that
// it is the process that made the update, which re-executes in place on
// Unix (on Windows the service manager starts another process later).
func endedAgent(pid int, u *PendingUpdate) int {
	if u.Stopped {
		return 0
	}
	if u.PID != 0 {
		pid = u.PID
	} else if runtime.GOOS == "windows" {
		return 0
	}
	if pid <= 0 || processAlive(pid) {
		return 0
	}
	return pid
}

// rollbackEnded puts the old binary back after the new agent's process
// ended before it checked in, and has the old agent started: by the
// service manager where one restarts the agent, else by starting it here.
func rollbackEnded(stateDir string, pid int, log *slog.Logger) error {
	st, err := LoadState(stateDir)
	if err != nil {
		return fmt.Errorf("watchdog: %w", err)
	}
	u := st.Update
	if u == nil {
		return nil
	}
	// No agent runs now: the state is the watchdog's to write. The old
	// agent reports why it was put back.
	u.Ended = "the new agent's process ended before it checked in"
	if err := st.Save(stateDir); err != nil {
		log.Warn("agent update: the reason of the rollback is not recorded", "err", err)
	}
	if err := os.Rename(u.Old, u.Exe); err != nil {
		return fmt.Errorf("watchdog: put the old agent back: %w", err)
	}
	log.Error("agent update: the new agent's process ended before it checked in; the old binary is back", "to", u.To, "pid", pid)
	return startOld(u, log)
}

// startOld starts the old agent after a rollback where no service manager
// does (SysV init, OpenRC without a supervisor) and writes its pid into
// the init script's pid file.
func startOld(u *PendingUpdate, log *slog.Logger) error {
	if u.Supervised || len(u.Args) == 0 {
		return nil // the service manager starts the old agent
	}
	newPID, err := startAgent(u.Exe, u.Args)
	if err != nil {
		return fmt.Errorf("watchdog: start the old agent again: %w", err)
	}
	log.Info("agent update: no service manager restarts the agent; the watchdog started the old one", "pid", newPID)
	if u.PIDFile != "" {
		if err := os.WriteFile(u.PIDFile, []byte(strconv.Itoa(newPID)+"\n"), 0o644); err != nil {
			log.Warn("agent update: the pid file keeps the ended agent's pid", "file", u.PIDFile, "err", err)
		}
	}
	return nil
}

// endProcess kills pid and waits up to 10 s for it to end.
func endProcess(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
		waitEnded(p, 10*time.Second)
	}
}
