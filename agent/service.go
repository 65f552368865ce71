package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/agent/execute"
	"github.com/patchd/patchd/agentsvc"
)

// Manager is a service manager the agent registers itself with.
type Manager string

// The service managers the agent knows.
const (
	Systemd Manager = "systemd"
	OpenRC  Manager = "openrc"
	SysV    Manager = "sysv"
	Launchd Manager = "launchd"
	WinSCM  Manager = "windows"
)

// ErrNoServiceManager: this computer has none of the service managers the
// agent knows; nothing was written.
var ErrNoServiceManager = errors.New("no service manager found (looked for systemd, OpenRC and SysV init; nothing was changed): " +
	"start `patchd-agent run` from whatever starts programs at boot here (a container's entry point, a supervisor), " +
	"or install the .deb/.rpm package on a system with systemd")

// InstallPath is the fixed place the agent's binary is installed to on
// goos: install.sh, install.ps1 and `patchd-agent install` put it there.
// Packages install theirs to /usr/bin (owned by the package manager).
func InstallPath(goos string) string {
	if goos == "windows" {
		pf := os.Getenv("ProgramFiles")
		if pf == "" {
			pf = `C:\Program Files`
		}
		return pf + `\patchd\patchd-agent.exe`
	}
	return "/usr/local/bin/patchd-agent"
}

// File is a file a plan writes.
type File struct {
	Path    string
	Content string
	Mode    os.FileMode
}

// Plan is what installing or uninstalling the service does: the binary to
// copy, files to write or remove, then commands to run, in order.
type Plan struct {
	// Before runs first, failures tolerated (stopping a running service
	// before its binary is replaced).
	Before []execute.Cmd
	// CopyFrom → CopyTo installs the binary (atomically: a temporary file
	// renamed over the old one). Empty when it is already in place.
	CopyFrom, CopyTo string
	Write            []File
	Remove           []string
	Run              []execute.Cmd
	// Tolerate lists commands (by index in Run) whose failure is fine:
	// stopping a service that is not running.
	Tolerate map[int]bool
}

// windowsBinPath is the service's command line: quoted paths, because
// an unquoted path with blanks is a classic privilege escalation.
func windowsBinPath(exe, stateDir string) string {
	return `"` + exe + `" run --state "` + stateDir + `"`
}

// ProxyVars are the environment variables of a proxy the agent honours.
var ProxyVars = []string{"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"}

// ProxyEnv is the proxy settings of environ ("KEY=value", upper-case
// keys; the lower-case spellings count too), to record for the service.
// Any character a proxy's address or password may hold is kept (quoted
// for the environment file, escaped in the plist); a line break or NUL,
// which no service file can carry, is an error naming the variable.
func ProxyEnv(environ []string) ([]string, error) {
	var out []string
	for _, k := range ProxyVars {
		for _, kv := range environ {
			name, v, _ := strings.Cut(kv, "=")
			if (name == k || name == strings.ToLower(k)) && v != "" {
				if strings.ContainsAny(v, "\n\r\x00") {
					return nil, fmt.Errorf("%s holds a line break or NUL, which the service's configuration cannot carry: set it without", name)
				}
				out = append(out, k+"="+v)
				break
			}
		}
	}
	return out, nil
}

// envFileQuote quotes v for the environment file, which systemd reads as
// an EnvironmentFile and the OpenRC and SysV scripts source with sh: in
// double quotes both take \", \\, \$ and \` as the character itself and
// everything else (a single quote too) as it is.
func envFileQuote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`").Replace(v) + `"`
}

// EnvFile is where the service reads the agent's environment (the proxy)
// on Linux: the systemd unit, the OpenRC and SysV scripts read it.
const EnvFile = "/etc/default/patchd-agent"

// InstallPlan is how the agent is installed with manager m: the binary
// from exe is copied to dest (nothing is copied when they are the same
// file), then the service is written, enabled and (re)started, so that
// running it again upgrades in place.
func InstallPlan(m Manager, exe, dest, stateDir string) Plan {
	return InstallPlanEnv(m, exe, dest, stateDir, nil)
}

// InstallPlanEnv is InstallPlan recording env (ProxyEnv) for the service.
func InstallPlanEnv(m Manager, exe, dest, stateDir string, env []string) Plan {
	p := Plan{CopyFrom: exe, CopyTo: dest}
	if exe == dest {
		p.CopyFrom, p.CopyTo = "", ""
	}
	switch m {
	case WinSCM:
		bin := windowsBinPath(dest, stateDir)
		p.Before = []execute.Cmd{{Path: "sc.exe", Args: []string{"stop", agentsvc.ServiceName}}}
		p.Run = []execute.Cmd{
			{Path: "sc.exe", Args: []string{"create", agentsvc.ServiceName, "binPath=", bin, "start=", "auto", "DisplayName=", "patchd agent"}},
			{Path: "sc.exe", Args: []string{"config", agentsvc.ServiceName, "binPath=", bin, "start=", "auto"}},
			{Path: "sc.exe", Args: []string{"description", agentsvc.ServiceName, "Checks in with the patchd server, reports inventory and installs updates."}},
			// Recovery: restart when the agent ends without being stopped or
			// stops with a failing exit code (failureflag 1).
			{Path: "sc.exe", Args: []string{"failure", agentsvc.ServiceName, "reset=", strconv.Itoa(int(agentsvc.RecoveryReset / time.Second)), "actions=", scRecoveryActions()}},
			{Path: "sc.exe", Args: []string{"failureflag", agentsvc.ServiceName, "1"}},
			{Path: "sc.exe", Args: []string{"start", agentsvc.ServiceName}},
		}
		if len(env) > 0 {
			reg := execute.Cmd{Path: "reg.exe", Args: []string{"add", `HKLM\SYSTEM\CurrentControlSet\Services\` + agentsvc.ServiceName,
				"/v", "Environment", "/t", "REG_MULTI_SZ", "/d", strings.Join(env, `\0`), "/f"}}
			p.Run = append(p.Run[:5:5], reg, p.Run[5])
		}
		// create fails when the service exists (an upgrade): config sets it.
		p.Tolerate = map[int]bool{0: true}
	case Launchd:
		// The proxy's address may hold a password: then only root reads it.
		mode := os.FileMode(0o644)
		if len(env) > 0 {
			mode = 0o600
		}
		p.Write = []File{{agentsvc.LaunchdPath, agentsvc.LaunchdPlist(dest, stateDir, env), mode}}
		p.Run = []execute.Cmd{
			{Path: "launchctl", Args: []string{"bootout", "system/" + agentsvc.LaunchdLabel}},
			{Path: "launchctl", Args: []string{"bootstrap", "system", agentsvc.LaunchdPath}},
		}
		p.Tolerate = map[int]bool{0: true}
	case OpenRC:
		p.Write = []File{{agentsvc.InitScript, agentsvc.OpenRCScript(dest, stateDir), 0o755}}
		p.Run = []execute.Cmd{
			{Path: "rc-update", Args: []string{"add", agentsvc.ServiceName, "default"}},
			{Path: "rc-service", Args: []string{agentsvc.ServiceName, "restart"}},
		}
	case SysV:
		p.Write = []File{{agentsvc.InitScript, agentsvc.SysVScript(dest, stateDir), 0o755}}
		p.Run = []execute.Cmd{sysvEnable(), {Path: agentsvc.InitScript, Args: []string{"restart"}}}
	default:
		p.Write = []File{{agentsvc.SystemdPath, agentsvc.SystemdUnit(dest, stateDir), 0o644}}
		p.Run = []execute.Cmd{
			{Path: "systemctl", Args: []string{"daemon-reload"}},
			{Path: "systemctl", Args: []string{"enable", agentsvc.ServiceName}},
			{Path: "systemctl", Args: []string{"restart", agentsvc.ServiceName}},
		}
	}
	if len(env) > 0 && (m == Systemd || m == OpenRC || m == SysV) {
		var b strings.Builder
		b.WriteString("# The patchd agent's environment, written by patchd-agent install.\n")
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			b.WriteString(k + "=" + envFileQuote(v) + "\n")
		}
		// The proxy's address may hold a password: only root reads it
		// (systemd and the init scripts run as root).
		p.Write = append([]File{{EnvFile, b.String(), 0o600}}, p.Write...)
	}
	return p
}

// sysvEnable links the init script into the runlevels with the tool this
// distribution has: update-rc.d (Debian), chkconfig (Red Hat, SUSE).
func sysvEnable() execute.Cmd {
	if _, err := lookPath("update-rc.d"); err != nil {
		if _, err := lookPath("chkconfig"); err == nil {
			return execute.Cmd{Path: "chkconfig", Args: []string{"--add", agentsvc.ServiceName}}
		}
	}
	return execute.Cmd{Path: "update-rc.d", Args: []string{agentsvc.ServiceName, "defaults"}}
}

func sysvDisable() execute.Cmd {
	if _, err := lookPath("update-rc.d"); err != nil {
		if _, err := lookPath("chkconfig"); err == nil {
			return execute.Cmd{Path: "chkconfig", Args: []string{"--del", agentsvc.ServiceName}}
		}
	}
	return execute.Cmd{Path: "update-rc.d", Args: []string{"-f", agentsvc.ServiceName, "remove"}}
}

// UninstallPlan removes the service registered with m and the state
// folder (unless stateDir is empty), and the binary when binary is not
// empty. The command that stops the running agent comes last: when the
// agent uninstalls itself, that command ends it, and everything else is
// done by then.
func UninstallPlan(m Manager, stateDir, binary string) Plan {
	var p Plan
	if stateDir != "" {
		p.Remove = append(p.Remove, stateDir)
	}
	switch m {
	case WinSCM:
		// sc.exe delete marks the service; it goes when it stops. A
		// running binary cannot be deleted on Windows: Apply then has it
		// deleted at the next restart.
		if binary != "" {
			p.Remove = append(p.Remove, binary, filepath.Dir(binary))
		}
		p.Run = []execute.Cmd{
			{Path: "sc.exe", Args: []string{"delete", agentsvc.ServiceName}},
			{Path: "sc.exe", Args: []string{"stop", agentsvc.ServiceName}},
		}
		p.Tolerate = map[int]bool{1: true}
		return p
	case Launchd:
		p.Remove = append(p.Remove, agentsvc.LaunchdPath)
		p.Run = []execute.Cmd{{Path: "launchctl", Args: []string{"bootout", "system/" + agentsvc.LaunchdLabel}}}
		p.Tolerate = map[int]bool{0: true}
	case OpenRC:
		// rc-service needs the script to stop the agent (and its
		// supervise-daemon, which removes its pid file): it stops first,
		// then the script goes with its runlevel link.
		p.Before = []execute.Cmd{{Path: "rc-service", Args: []string{agentsvc.ServiceName, "stop"}}}
		p.Remove = append(p.Remove, agentsvc.InitScript)
		p.Run = []execute.Cmd{{Path: "rc-update", Args: []string{"del", agentsvc.ServiceName, "default"}}}
		p.Tolerate = map[int]bool{0: true}
	case SysV:
		// The script stops the agent, then goes with the links.
		p.Before = []execute.Cmd{{Path: agentsvc.InitScript, Args: []string{"stop"}}}
		p.Remove = append(p.Remove, agentsvc.InitScript)
		p.Run = []execute.Cmd{sysvDisable()}
		p.Tolerate = map[int]bool{0: true}
	default:
		p.Remove = append(p.Remove, agentsvc.SystemdPath)
		p.Run = []execute.Cmd{
			{Path: "systemctl", Args: []string{"disable", agentsvc.ServiceName}},
			{Path: "systemctl", Args: []string{"daemon-reload"}},
			{Path: "systemctl", Args: []string{"stop", agentsvc.ServiceName}},
		}
		p.Tolerate = map[int]bool{0: true, 1: true, 2: true}
	}
	if m != Launchd {
		p.Remove = append(p.Remove, EnvFile)
	}
	if binary != "" {
		p.Remove = append(p.Remove, binary)
	}
	return p
}

// Print writes what the plan would do.
func (p Plan) Print(w io.Writer) {
	for _, c := range p.Before {
		fmt.Fprintf(w, "run %s (failure ignored)\n", quoteArgv(c))
	}
	if p.CopyTo != "" {
		fmt.Fprintf(w, "copy %s to %s (mode 0755)\n", p.CopyFrom, p.CopyTo)
	}
	for _, f := range p.Write {
		fmt.Fprintf(w, "write %s (mode %04o):\n%s\n", f.Path, f.Mode, f.Content)
	}
	for _, path := range p.Remove {
		fmt.Fprintf(w, "remove %s\n", path)
	}
	for _, c := range p.Run {
		fmt.Fprintf(w, "run %s\n", quoteArgv(c))
	}
}

func quoteArgv(c execute.Cmd) string {
	parts := []string{c.Path}
	for _, a := range c.Args {
		if a == "" || strings.ContainsAny(a, " \t\"") {
			a = fmt.Sprintf("%q", a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// Apply carries the plan out: the commands before, the binary, the
// files, the removals, then the commands.
func (p Plan) Apply(ctx context.Context, r execute.Runner, log *slog.Logger) error {
	for _, c := range p.Before {
		if res, err := r.Run(ctx, c); err != nil || res.ExitCode != 0 {
			log.Info("ignored", "cmd", quoteArgv(c), "exit_code", res.ExitCode, "err", err)
		} else {
			log.Info("ran", "cmd", quoteArgv(c))
		}
	}
	if p.CopyTo != "" {
		if err := copyBinary(p.CopyFrom, p.CopyTo); err != nil {
			return err
		}
		log.Info("installed", "path", p.CopyTo)
	}
	for _, f := range p.Write {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			return err
		}
		// A new file renamed over the old one: content meant for 0600
		// (the proxy's password) is never readable under an older file's
		// wider mode.
		if err := replaceFile(f.Path, f.Content, f.Mode); err != nil {
			return err
		}
		log.Info("wrote", "path", f.Path)
	}
	for _, path := range p.Remove {
		if err := os.RemoveAll(path); err != nil {
			if removeAtReboot(path) == nil {
				log.Info("in use: removed at the next restart", "path", path)
				continue
			}
			log.Warn("could not remove", "path", path, "err", err)
		} else {
			log.Info("removed", "path", path)
		}
	}
	for i, c := range p.Run {
		res, err := r.Run(ctx, c)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit code %d: %s", res.ExitCode, strings.TrimSpace(res.Output))
		}
		if err != nil {
			if p.Tolerate[i] {
				log.Info("ignored", "cmd", quoteArgv(c), "err", err)
				continue
			}
			return fmt.Errorf("%s: %w", quoteArgv(c), err)
		}
		log.Info("ran", "cmd", quoteArgv(c))
	}
	return nil
}

// copyBinary copies from to a temporary file beside to and renames it
// over to: a running agent keeps its old file, the next start the new one.
func copyBinary(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("install the binary: %w", err)
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return fmt.Errorf("install the binary: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(to), ".patchd-agent-*")
	if err != nil {
		return fmt.Errorf("install the binary: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return fmt.Errorf("install the binary: %w", err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return fmt.Errorf("install the binary: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("install the binary: %w", err)
	}
	// On Windows the old binary stays locked until the stopped service's
	// process has exited: sc.exe stop does not wait for it.
	var rerr error
	for i := 0; i < 60; i++ {
		if rerr = os.Rename(tmp.Name(), to); rerr == nil || runtime.GOOS != "windows" {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if rerr != nil {
		return fmt.Errorf("install the binary: %w", rerr)
	}
	return nil
}

// Install copies the running binary to the fixed place and registers and
// starts the service. Without a service manager it fails before writing
// anything (ErrNoServiceManager).
func Install(ctx context.Context, stateDir string, log *slog.Logger) error {
	p, err := LocalInstallPlan(stateDir)
	if err != nil {
		return err
	}
	return p.Apply(ctx, execute.ExecRunner{}, log)
}

// LocalInstallPlan is Install's plan for this computer.
func LocalInstallPlan(stateDir string) (Plan, error) {
	m, err := DetectManager("/")
	if err != nil {
		return Plan{}, err
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return Plan{}, fmt.Errorf("locate this program: %w", err)
	}
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return Plan{}, err
	}
	dest := InstallPath(goosForPlans())
	if d, err := filepath.EvalSymlinks(dest); err == nil && d == exe {
		dest = exe
	}
	env, err := ProxyEnv(os.Environ())
	if err != nil {
		return Plan{}, err
	}
	return InstallPlanEnv(m, exe, dest, abs, env), nil
}

// LocalUninstallPlan removes what Install (or the package's service)
// registered on this computer; the state unless keepState, the binary at
// the fixed place when removeBinary.
func LocalUninstallPlan(stateDir string, keepState, removeBinary bool) Plan {
	m := InstalledManager("/")
	if keepState {
		stateDir = ""
	}
	bin := ""
	if removeBinary {
		if _, err := os.Stat(InstallPath(goosForPlans())); err == nil {
			bin = InstallPath(goosForPlans())
		}
	}
	return UninstallPlan(m, stateDir, bin)
}
