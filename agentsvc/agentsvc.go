// Package agentsvc is what patchd-agent and the server that packages it
// must agree on about the agent as a service: its names and paths, the
// service definitions it runs under (the systemd unit, the OpenRC and
// SysV init scripts, the launchd daemon), the earlier versions of those
// definitions, and the Windows service's recovery. The agent writes them
// when it installs itself (patchd-agent install); the server's .deb,
// .rpm and .msi carry the same. It imports nothing of either, so the
// server links none of the agent's code.
package agentsvc

import (
	"strings"
	"time"
)

// ServiceName names the service on every platform.
const (
	ServiceName  = "patchd-agent"
	LaunchdLabel = "com.patchd.agent"
	SystemdPath  = "/etc/systemd/system/patchd-agent.service"
	LaunchdPath  = "/Library/LaunchDaemons/com.patchd.agent.plist"
	InitScript   = "/etc/init.d/patchd-agent"
	// PackageBinary is where the .deb and .rpm put the agent: their
	// service files belong to the package manager.
	PackageBinary = "/usr/bin/patchd-agent"
	// PackageUnitPath is the .deb's and .rpm's systemd unit.
	PackageUnitPath = "/usr/lib/systemd/system/patchd-agent.service"
)

// The Windows service's recovery: the service manager starts the agent
// again after 5 s when its process ends without being stopped, or stops
// with a failing exit code (a self-update's restart, an error), then after
// 30 s, then every minute; a day without failures resets the count.
// patchd-agent install (sc.exe), the MSI (MsiServiceConfigFailureActions)
// and the agent itself at each start (when the service's actions differ)
// set the same.
var (
	RecoveryDelays = []time.Duration{5 * time.Second, 30 * time.Second, time.Minute}
	RecoveryReset  = 24 * time.Hour
)

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
# HTTPS_PROXY, HTTP_PROXY and NO_PROXY for the agent, when it needs them.
EnvironmentFile=-/etc/default/patchd-agent
EnvironmentFile=-/etc/sysconfig/patchd-agent
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

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// OpenRCScript is the OpenRC service (Alpine, Gentoo) that runs the agent.
func OpenRCScript(exe, stateDir string) string {
	return `#!/sbin/openrc-run
# patchd agent: checks in with the patchd server, reports inventory and installs updates.
description="patchd agent"
command=` + shQuote(exe) + `
command_args="run --state ` + strings.ReplaceAll(shQuote(stateDir), `"`, `\"`) + `"
supervisor=supervise-daemon
respawn_delay=5
respawn_max=0
pidfile="/run/patchd-agent.pid"
output_log="/var/log/patchd-agent.log"
error_log="/var/log/patchd-agent.log"
[ -r /etc/default/patchd-agent ] && . /etc/default/patchd-agent && export HTTPS_PROXY HTTP_PROXY NO_PROXY 2>/dev/null
# supervise-daemon starts the agent again when its process ends (a self-update's watchdog ended it).
export PATCHD_AGENT_SUPERVISED=1

# use, not need: Debian's OpenRC has no service net (its LSB networking
# script may be absent), and the agent waits for the network itself.
depend() {
	use net
	after firewall
}
`
}

// SysVScript is the SysV init script that runs the agent where neither
// systemd nor OpenRC is (older distributions, containers with sysvinit).
// It needs nothing but a POSIX shell and kill; it uses start-stop-daemon
// where Debian's is present.
func SysVScript(exe, stateDir string) string {
	return `#!/bin/sh
### BEGIN INIT INFO
# Provides:          patchd-agent
# Required-Start:    $network $remote_fs
# Required-Stop:     $network $remote_fs
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: patchd agent
# Description:       Checks in with the patchd server, reports inventory and installs updates.
### END INIT INFO
# chkconfig: 2345 90 10

EXE=` + shQuote(exe) + `
STATE=` + shQuote(stateDir) + `
PIDFILE=/run/patchd-agent.pid
LOG=/var/log/patchd-agent.log
[ -d /run ] || PIDFILE=/var/run/patchd-agent.pid
[ -r /etc/default/patchd-agent ] && . /etc/default/patchd-agent
[ -r /etc/sysconfig/patchd-agent ] && . /etc/sysconfig/patchd-agent
export HTTPS_PROXY HTTP_PROXY NO_PROXY 2>/dev/null || true

running() {
	[ -f "$PIDFILE" ] || return 1
	pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

start() {
	if running; then echo "patchd-agent is running"; return 0; fi
	echo "Starting patchd-agent"
	# Nothing restarts the agent here: a self-update's watchdog that ends a
	# new agent starts the old one itself and writes its pid here.
	PATCHD_AGENT_PIDFILE="$PIDFILE" nohup "$EXE" run --state "$STATE" >>"$LOG" 2>&1 </dev/null &
	echo $! >"$PIDFILE"
}

stop() {
	if ! running; then rm -f "$PIDFILE"; echo "patchd-agent is not running"; return 0; fi
	echo "Stopping patchd-agent"
	pid=$(cat "$PIDFILE")
	kill "$pid" 2>/dev/null
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 30 ]; do sleep 1; i=$((i+1)); done
	kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
	rm -f "$PIDFILE"
	return 0
}

case "$1" in
	start) start ;;
	stop) stop ;;
	restart|force-reload|reload) stop; start ;;
	status) if running; then echo "patchd-agent is running"; exit 0; else echo "patchd-agent is not running"; exit 3; fi ;;
	*) echo "usage: $0 {start|stop|restart|status}" >&2; exit 2 ;;
esac
`
}

// LaunchdPlist is the launchd daemon that runs the agent on macOS, with
// env ("KEY=value": a proxy) in its environment. It is kept alive unless
// it exits cleanly (after uninstalling itself).
func LaunchdPlist(exe, stateDir string, env []string) string {
	envDict := ""
	if len(env) > 0 {
		envDict = "\t<key>EnvironmentVariables</key>\n\t<dict>\n"
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			envDict += "\t\t<key>" + xmlEscape(k) + "</key>\n\t\t<string>" + xmlEscape(v) + "</string>\n"
		}
		envDict += "\t</dict>\n"
	}
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
` + envDict + `	<key>RunAtLoad</key>
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
