package agentsvc

import "strings"

// What earlier versions of patchd-agent install wrote, exactly (the
// functions as they were at the commits named, generated from the git
// history): a service definition that is one of these for this agent's
// binary and state folder was written by the agent and is brought up to
// date (RefreshServiceFiles); anything else (edited by hand, written by a
// package or another tool) is left alone. When SystemdUnit, OpenRCScript
// or SysVScript changes, the old function goes here and into
// its Past list below (TestServiceHistory fails until it does).

// systemdUnit902a177 is SystemdUnit as of 902a177.
func systemdUnit902a177(exe, stateDir string) string {
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
# The agent installs updates and runs administrators' scripts as root.
User=root
KillMode=process
TimeoutStopSec=30

[Install]
WantedBy=multi-user.target
`
}

// systemdUnit009d8be is SystemdUnit as of 009d8be.
func systemdUnit009d8be(exe, stateDir string) string {
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

// openRCScriptc72658b is OpenRCScript as of c72658b.
func openRCScriptc72658b(exe, stateDir string) string {
	return `#!/sbin/openrc-run
# patchd agent: checks in with the patchd server, reports inventory and installs updates.
description="patchd agent"
command=` + shQuote(exe) + `
command_args="run --state ` + strings.ReplaceAll(shQuote(stateDir), `"`, `\"`) + `"
command_background=true
pidfile="/run/patchd-agent.pid"
output_log="/var/log/patchd-agent.log"
error_log="/var/log/patchd-agent.log"
[ -r /etc/default/patchd-agent ] && . /etc/default/patchd-agent && export HTTPS_PROXY HTTP_PROXY NO_PROXY 2>/dev/null

depend() {
	need net
	after firewall
}
`
}

// openRCScriptfd21f1e is OpenRCScript as of fd21f1e.
func openRCScriptfd21f1e(exe, stateDir string) string {
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

depend() {
	need net
	after firewall
}
`
}

// sysVScriptc72658b is SysVScript as of c72658b.
func sysVScriptc72658b(exe, stateDir string) string {
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
	nohup "$EXE" run --state "$STATE" >>"$LOG" 2>&1 </dev/null &
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

// The earlier versions of each definition, oldest first.
var (
	PastSystemdUnits  = []func(exe, stateDir string) string{systemdUnit902a177, systemdUnit009d8be}
	PastOpenRCScripts = []func(exe, stateDir string) string{openRCScriptc72658b, openRCScriptfd21f1e}
	PastSysVScripts   = []func(exe, stateDir string) string{sysVScriptc72658b}
)
