package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/patchd/patchd/agent/execute"
	"github.com/patchd/patchd/agentsvc"
)

// serviceFile is a service definition patchd-agent install writes on
// Linux: where, what this version writes for a binary and state folder,
// and what earlier versions wrote (agentsvc's Past lists).
type serviceFile struct {
	manager Manager
	path    string
	mode    os.FileMode
	current func(exe, stateDir string) string
	past    []func(exe, stateDir string) string
}

var (
	systemdFile = serviceFile{Systemd, agentsvc.SystemdPath, 0o644, agentsvc.SystemdUnit, agentsvc.PastSystemdUnits}
	openRCFile  = serviceFile{OpenRC, agentsvc.InitScript, 0o755, agentsvc.OpenRCScript, agentsvc.PastOpenRCScripts}
	sysVFile    = serviceFile{SysV, agentsvc.InitScript, 0o755, agentsvc.SysVScript, agentsvc.PastSysVScripts}
)

// RefreshServiceFiles brings the service definitions that patchd-agent
// install wrote for this agent (the binary exe, the state folder
// stateDir) under root up to date: the systemd unit and the OpenRC or
// SysV init script. Nothing is done for the packages' binary
// (agentsvc.PackageBinary). A file is replaced only when it is exactly what an
// earlier version of install wrote for this binary and state folder; one
// edited by hand, written by a package (another binary) or by a later
// version is left alone (and said so when it names this binary). The new
// file is written beside the old one and renamed over it; what changed is
// logged. Under systemd the manager reads the unit again (systemctl
// daemon-reload); nothing is restarted: the new definition takes effect
// at the service's next start, so a running agent is never ended by it
// and a file rewritten once is the current one at the next start. It
// answers the files it replaced.
func RefreshServiceFiles(ctx context.Context, root, exe, stateDir string, r execute.Runner, log *slog.Logger) ([]string, error) {
	if exe == "" || !filepath.IsAbs(exe) || !filepath.IsAbs(stateDir) {
		return nil, nil
	}
	if exe == agentsvc.PackageBinary {
		// A .deb or .rpm installed this agent and its service files (the
		// init script is a package configuration file): the package
		// manager updates them with the package.
		log.Debug("service definition left to the package manager", "exe", exe)
		return nil, nil
	}
	var done []string
	var errs []error
	for _, f := range []serviceFile{systemdFile, initScriptFile(root)} {
		path := filepath.Join(root, f.path)
		b, err := os.ReadFile(path)
		if err != nil {
			if !os.IsNotExist(err) {
				errs = append(errs, fmt.Errorf("service definition %s: %w", path, err))
			}
			continue
		}
		have, want := string(b), f.current(exe, stateDir)
		if have == want {
			log.Debug("service definition up to date", "path", path)
			continue
		}
		if !slices.ContainsFunc(f.past, func(old func(string, string) string) bool { return old(exe, stateDir) == have }) {
			if strings.Contains(have, exe) {
				log.Info("service definition left alone: it is not what an earlier patchd-agent install wrote for this agent (edited, or written by another version or tool); run patchd-agent install to replace it",
					"path", path, "manager", f.manager)
			}
			continue
		}
		if err := replaceFile(path, want, f.mode); err != nil {
			errs = append(errs, fmt.Errorf("service definition %s: %w", path, err))
			continue
		}
		removed, added := lineChanges(have, want)
		log.Info("service definition brought up to date; it takes effect at the service's next start", "path", path, "manager", f.manager,
			"removed", strings.Join(removed, "\n"), "added", strings.Join(added, "\n"))
		done = append(done, path)
		if f.manager == Systemd && isDir(filepath.Join(root, "run/systemd/system")) {
			c := execute.Cmd{Path: "systemctl", Args: []string{"daemon-reload"}}
			if res, err := r.Run(ctx, c); err != nil || res.ExitCode != 0 {
				errs = append(errs, fmt.Errorf("systemctl daemon-reload: exit code %d: %v %s", res.ExitCode, err, strings.TrimSpace(res.Output)))
			} else {
				log.Info("ran", "cmd", quoteArgv(c))
			}
		}
	}
	return done, errors.Join(errs...)
}

// initScriptFile is the kind of init script at agentsvc.InitScript under root:
// OpenRC's by its interpreter line, else SysV.
func initScriptFile(root string) serviceFile {
	b, _ := os.ReadFile(filepath.Join(root, agentsvc.InitScript))
	if strings.HasPrefix(string(b), "#!/sbin/openrc-run") {
		return openRCFile
	}
	return sysVFile
}

// replaceFile writes content with mode to a new file beside path (made
// readable by its owner only until it is complete), syncs it and renames
// it over path: a reader sees the old file or the new one, never a part.
func replaceFile(path, content string, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".patchd-agent-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return err
	}
	// (On Windows a file's mode is its read-only flag at most.)
	if err := tmp.Chmod(mode); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// lineChanges answers the lines of old that new lacks and those of new
// that old lacks, in their order.
func lineChanges(old, new string) (removed, added []string) {
	o, n := strings.Split(old, "\n"), strings.Split(new, "\n")
	for _, l := range o {
		if l != "" && !slices.Contains(n, l) {
			removed = append(removed, l)
		}
	}
	for _, l := range n {
		if l != "" && !slices.Contains(o, l) {
			added = append(added, l)
		}
	}
	return removed, added
}

// PastServiceDefinitions are the definitions earlier versions of
// patchd-agent install wrote for manager m (systemd, OpenRC, SysV), this
// binary and state folder, oldest first: those RefreshServiceFiles replaces.
func PastServiceDefinitions(m Manager, exe, stateDir string) []string {
	var out []string
	for _, f := range []serviceFile{systemdFile, openRCFile, sysVFile} {
		if f.manager == m {
			for _, old := range f.past {
				out = append(out, old(exe, stateDir))
			}
		}
	}
	return out
}
