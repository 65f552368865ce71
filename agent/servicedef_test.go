package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/agentsvc"
	"github.com/patchd/patchd/internal/lockedbuf"
)

// TestServiceHistory: the service definitions this version writes are the
// ones recorded here. When one changes, the previous function must go to
// servicedef_history.go and into its serviceFile's past (so that agents
// installed with it are brought up to date), and the sums here change.
func TestServiceHistory(t *testing.T) {
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:8]) }
	exe, state := "/usr/local/bin/patchd-agent", "/var/lib/patchd-agent"
	for name, got := range map[string]string{
		"SystemdUnit":  sum(agentsvc.SystemdUnit(exe, state)),
		"OpenRCScript": sum(agentsvc.OpenRCScript(exe, state)),
		"SysVScript":   sum(agentsvc.SysVScript(exe, state)),
	} {
		want := map[string]string{"SystemdUnit": "d8dfffdd008c89be", "OpenRCScript": "67f2e1de495ea505", "SysVScript": "469d5a35edbf9589"}[name]
		if got != want {
			t.Errorf("%s changed (sum %s, was %s): keep the previous one in servicedef_history.go and its serviceFile's past, then record the new sum", name, got, want)
		}
	}
	// Every past version differs from the current one and from each other.
	for _, f := range []serviceFile{systemdFile, openRCFile, sysVFile} {
		seen := map[string]bool{f.current(exe, state): true}
		for i, old := range f.past {
			if seen[old(exe, state)] {
				t.Errorf("%s: past version %d repeats another", f.manager, i)
			}
			seen[old(exe, state)] = true
		}
	}
}

// TestRefreshServiceFiles: every earlier version of a service definition
// install wrote for this binary and state folder is replaced by the
// current one (atomically, its mode, what changed logged; systemd reads
// units again); once current, nothing more happens; a file edited by
// hand, a package's (another binary) or another state folder's is left.
func TestRefreshServiceFiles(t *testing.T) {
	exe, state := "/usr/local/bin/patchd-agent", "/var/lib/patchd-agent"
	for _, f := range []serviceFile{systemdFile, openRCFile, sysVFile} {
		for i, old := range f.past {
			t.Run(fmt.Sprintf("%s-%d", f.manager, i), func(t *testing.T) {
				root := t.TempDir()
				if f.manager == Systemd {
					os.MkdirAll(filepath.Join(root, "run/systemd/system"), 0o755)
				}
				path := filepath.Join(root, f.path)
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(old(exe, state)), 0o600); err != nil {
					t.Fatal(err)
				}
				var logs bytes.Buffer
				log := slog.New(slog.NewTextHandler(&logs, nil))
				r := &recordRunner{}
				done, err := RefreshServiceFiles(context.Background(), root, exe, state, r, log)
				if err != nil || len(done) != 1 || done[0] != path {
					t.Fatalf("refresh: %v %v\n%s", done, err, logs.String())
				}
				if b, _ := os.ReadFile(path); string(b) != f.current(exe, state) {
					t.Fatalf("not the current definition:\n%s", b)
				}
				if fi, _ := os.Stat(path); fi.Mode().Perm() != f.mode {
					t.Errorf("mode %v, want %v", fi.Mode().Perm(), f.mode)
				}
				if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".patchd-agent-*")); len(left) != 0 {
					t.Errorf("temporary files left: %v", left)
				}
				if !strings.Contains(logs.String(), "service definition brought up to date") || !strings.Contains(logs.String(), "added=") {
					t.Errorf("log:\n%s", logs.String())
				}
				wantCalls := "[]"
				if f.manager == Systemd {
					wantCalls = "[systemctl daemon-reload]"
				}
				if got := fmt.Sprint(r.calls); got != wantCalls {
					t.Errorf("commands %s, want %s", got, wantCalls)
				}
				// The next start: nothing to do, nothing run.
				logs.Reset()
				r.calls = nil
				if done, err := RefreshServiceFiles(context.Background(), root, exe, state, r, log); err != nil || len(done) != 0 || len(r.calls) != 0 {
					t.Fatalf("second refresh: %v %v %v\n%s", done, err, r.calls, logs.String())
				}
			})
		}
	}

	// Left alone: edited by hand (and said so), a package's script for
	// /usr/bin/patchd-agent, another state folder's, a later version's.
	for name, content := range map[string]string{
		"edited":          agentsvc.PastOpenRCScripts[0](exe, state) + "rc_ulimit=\"-n 4096\"\n",
		"package":         agentsvc.PastSysVScripts[0]("/usr/bin/patchd-agent", state),
		"other state":     agentsvc.PastSysVScripts[0](exe, "/srv/agent"),
		"unknown version": strings.Replace(agentsvc.SysVScript(exe, state), "sleep 1", "sleep 2", 1),
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, agentsvc.InitScript)
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, []byte(content), 0o755)
			var logs bytes.Buffer
			done, err := RefreshServiceFiles(context.Background(), root, exe, state, &recordRunner{}, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil || len(done) != 0 {
				t.Fatalf("refresh: %v %v", done, err)
			}
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Fatal("the file was changed")
			}
			if said := strings.Contains(logs.String(), "service definition left alone"); said != strings.Contains(content, "'"+exe+"'") {
				t.Errorf("left alone said %v:\n%s", said, logs.String())
			}
		})
	}
	// The agent of a .deb or .rpm: its init script (a package configuration
	// file, written by an older package) is the package manager's.
	root := t.TempDir()
	pkgScript := filepath.Join(root, agentsvc.InitScript)
	os.MkdirAll(filepath.Dir(pkgScript), 0o755)
	os.WriteFile(pkgScript, []byte(agentsvc.PastSysVScripts[0](agentsvc.PackageBinary, state)), 0o755)
	if done, err := RefreshServiceFiles(context.Background(), root, agentsvc.PackageBinary, state, &recordRunner{}, slog.New(slog.DiscardHandler)); err != nil || len(done) != 0 {
		t.Fatalf("the package's script: %v %v", done, err)
	}
	if b, _ := os.ReadFile(pkgScript); string(b) != agentsvc.PastSysVScripts[0](agentsvc.PackageBinary, state) {
		t.Fatal("the package's script was changed")
	}
	// Nothing installed: nothing done.
	if done, err := RefreshServiceFiles(context.Background(), t.TempDir(), exe, state, &recordRunner{}, slog.New(slog.DiscardHandler)); err != nil || len(done) != 0 {
		t.Fatalf("empty root: %v %v", done, err)
	}
}

// TestRunRefreshesServiceAfterCheckin: the running agent brings its old
// init script up to date after it checked in; after a self-update only
// once the new agent is confirmed.
func TestRunRefreshesServiceAfterCheckin(t *testing.T) {
	if os.PathSeparator != '/' {
		t.Skip("service files are Linux's")
	}
	_, srv := newFakeServer(t)
	dir := enroll(t, srv)
	bin := t.TempDir()
	exe := filepath.Join(bin, "patchd-agent")
	os.WriteFile(exe, []byte("agent"), 0o755)
	os.WriteFile(exe+".old", []byte("old agent"), 0o755)
	st, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Update = &PendingUpdate{From: "1.0.0", To: Version, SHA256: "abc", Exe: exe, Old: exe + ".old", At: time.Now(), Deadline: time.Now().Add(time.Hour)}
	if err := st.Save(dir); err != nil {
		t.Fatal(err)
	}
	var collects atomic.Int32
	cfg := testConfig(t, dir, &collects)
	cfg.Executable = exe
	var logs lockedbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	abs, _ := filepath.Abs(dir)
	script := filepath.Join(cfg.ServiceRoot, agentsvc.InitScript)
	os.MkdirAll(filepath.Dir(script), 0o755)
	os.WriteFile(script, []byte(agentsvc.PastOpenRCScripts[0](exe, abs)), 0o755)
	stop, _ := start(t, cfg)
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(script); string(b) == agentsvc.OpenRCScript(exe, abs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the init script was not brought up to date:\n%s", logs.String())
		}
	}
	stop()
	l := logs.String()
	confirmed, refreshed := strings.Index(l, "agent update confirmed"), strings.Index(l, "service definition brought up to date")
	if confirmed < 0 || refreshed < confirmed {
		t.Fatalf("the definition was replaced before the new agent was confirmed:\n%s", l)
	}
	if !strings.Contains(l, `removed="command_background=true`) || !strings.Contains(l, "supervisor=supervise-daemon") {
		t.Errorf("what changed is not logged:\n%s", l)
	}
}

// TestServiceExe: the program of a Windows service's command line.
func TestServiceExe(t *testing.T) {
	for in, want := range map[string]string{
		`"C:\Program Files\patchd\patchd-agent.exe" run --state "C:\ProgramData\patchd-agent"`: `C:\Program Files\patchd\patchd-agent.exe`,
		`C:\patchd\patchd-agent.exe run`: `C:\patchd\patchd-agent.exe`,
		`  "C:\a b\x.exe"`:               `C:\a b\x.exe`,
	} {
		if got := ServiceExe(in); got != want {
			t.Errorf("ServiceExe(%q) = %q, want %q", in, got, want)
		}
	}
}
