package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/patchd/patchd/agent/execute"
)

// ServiceName names the service on every platform.
const (
	ServiceName  = "patchd-agent"
	LaunchdLabel = "com.patchd.agent"
	SystemdPath  = "/etc/systemd/system/patchd-agent.service"
	LaunchdPath  = "/Library/LaunchDaemons/com.patchd.agent.plist"
)

// Plan is what installing or uninstalling the service does: files to
// write or remove, then commands to run, in order.
type Plan struct {
	Write  map[string]string // path → content
	Remove []string
	Run    []execute.Cmd
	// Tolerate lists commands (by index in Run) whose failure is fine:
	// stopping a service that is not running.
	Tolerate map[int]bool
}

// SystemdUnit is the unit that runs the agent on Linux.
func SystemdUnit(exe, stateDir string) string {
	return `[Unit]
Description=patchd agent
Documentation=https://github.com/patchd/patchd
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart=` + systemdQuote(exe) + ` run --state ` + systemdQuote(stateDir) + `
Restart=on-failure
RestartSec=30
# Exit code 3: the server refused the agent's secret; enroll again.
RestartPreventExitStatus=3
# The agent installs updates and runs administrators' scripts as root.
User=root
KillMode=process
TimeoutStopSec=30

[Install]
WantedBy=multi-user.target
`
}

// systemdQuote quotes a path for ExecStart when it holds blanks.
func systemdQuote(s string) string {
	if !strings.ContainsAny(s, " \t\"\\") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// LaunchdPlist is the launchd daemon that runs the agent on macOS. It is
// kept alive unless it exits cleanly (after uninstalling itself).
func LaunchdPlist(exe, stateDir string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + LaunchdLabel + `</string>
	<key>ProgramArguments</key>
	<array>
		<string>` + xmlEscape(exe) + `</string>
		<string>run</string>
		<string>--state</string>
		<string>` + xmlEscape(stateDir) + `</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ThrottleInterval</key>
	<integer>30</integer>
	<key>StandardOutPath</key>
	<string>/var/log/patchd-agent.log</string>
	<key>StandardErrorPath</key>
	<string>/var/log/patchd-agent.log</string>
</dict>
</plist>
`
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}

// windowsBinPath is the service's command line: quoted paths, because
// an unquoted path with blanks is a classic privilege escalation.
func windowsBinPath(exe, stateDir string) string {
	return `"` + exe + `" run --state "` + stateDir + `"`
}

// InstallPlan is how the service is installed on goos.
func InstallPlan(goos, exe, stateDir string) Plan {
	switch goos {
	case "windows":
		return Plan{Run: []execute.Cmd{
			{Path: "sc.exe", Args: []string{"create", ServiceName, "binPath=", windowsBinPath(exe, stateDir), "start=", "auto", "DisplayName=", "patchd agent"}},
			{Path: "sc.exe", Args: []string{"description", ServiceName, "Checks in with the patchd server, reports inventory and installs updates."}},
			{Path: "sc.exe", Args: []string{"failure", ServiceName, "reset=", "86400", "actions=", "restart/60000/restart/60000/restart/60000"}},
			{Path: "sc.exe", Args: []string{"start", ServiceName}},
		}}
	case "darwin":
		return Plan{Write: map[string]string{LaunchdPath: LaunchdPlist(exe, stateDir)}, Run: []execute.Cmd{
			{Path: "launchctl", Args: []string{"bootstrap", "system", LaunchdPath}},
		}}
	default:
		return Plan{Write: map[string]string{SystemdPath: SystemdUnit(exe, stateDir)}, Run: []execute.Cmd{
			{Path: "systemctl", Args: []string{"daemon-reload"}},
			{Path: "systemctl", Args: []string{"enable", "--now", ServiceName}},
		}}
	}
}

// UninstallPlan removes the service and the state folder. The command
// that stops the running agent comes last: when the agent uninstalls
// itself, that command ends it, and everything else is done by then.
func UninstallPlan(goos, stateDir string) Plan {
	switch goos {
	case "windows":
		// sc.exe delete marks the service; it goes when it stops.
		return Plan{Remove: []string{stateDir}, Run: []execute.Cmd{
			{Path: "sc.exe", Args: []string{"delete", ServiceName}},
			{Path: "sc.exe", Args: []string{"stop", ServiceName}},
		}, Tolerate: map[int]bool{1: true}}
	case "darwin":
		return Plan{Remove: []string{stateDir, LaunchdPath}, Run: []execute.Cmd{
			{Path: "launchctl", Args: []string{"bootout", "system/" + LaunchdLabel}},
		}, Tolerate: map[int]bool{0: true}}
	default:
		return Plan{Remove: []string{stateDir, SystemdPath}, Run: []execute.Cmd{
			{Path: "systemctl", Args: []string{"disable", ServiceName}},
			{Path: "systemctl", Args: []string{"daemon-reload"}},
			{Path: "systemctl", Args: []string{"stop", ServiceName}},
		}, Tolerate: map[int]bool{0: true, 2: true}}
	}
}

// Print writes what the plan would do.
func (p Plan) Print(w io.Writer) {
	for path, content := range p.Write {
		fmt.Fprintf(w, "write %s (mode 0644):\n%s\n", path, content)
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

// Apply carries the plan out: files first, then the commands.
func (p Plan) Apply(ctx context.Context, r execute.Runner, log *slog.Logger) error {
	for path, content := range p.Write {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
		log.Info("wrote", "path", path)
	}
	for _, path := range p.Remove {
		if err := os.RemoveAll(path); err != nil {
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

// SelfUninstall removes the agent's service and state. The binary stays:
// it belongs to whoever installed it (a package, a deployment tool).
func SelfUninstall(ctx context.Context, stateDir string, log *slog.Logger) error {
	return UninstallPlan(goosForPlans(), stateDir).Apply(ctx, execute.ExecRunner{}, log)
}
