package agentdist

import (
	"strings"

	"github.com/patchd/patchd/agentsvc"
)

// The maintainer scripts of the .deb follow what debhelper generates
// (dh_installsystemd, dh_installinit): deb-systemd-helper and
// deb-systemd-invoke for the unit, update-rc.d and invoke-rc.d for the
// init script, whose links stay until purge. Those of the .rpm follow the
// %systemd_* macros, with chkconfig (or update-rc.d) where systemd does not
// run. Both enroll once and start the agent only on an enrolled computer.

// enrollFunction is the shell function both packages' scripts call after
// installing: it creates the state folder and enrolls once, with
// PATCHD_SERVER and PATCHD_TOKEN from the environment or PackageConf.
func enrollFunction(server string) string {
	return `STATE=` + PackageState + `
CONF=` + PackageConf + `

enroll() {
	(umask 077 && mkdir -p "$STATE")
	# Enroll once: PATCHD_SERVER and PATCHD_TOKEN from the environment or
	# ` + PackageConf + ` (written by config management before installing).
	DEFAULT_SERVER='` + server + `'
	if [ -r "$CONF" ]; then . "$CONF"; fi
	PATCHD_SERVER=${PATCHD_SERVER:-$DEFAULT_SERVER}
	if [ ! -f "$STATE/state.json" ] && [ -n "${PATCHD_TOKEN:-}" ] && [ -n "$PATCHD_SERVER" ]; then
		if ! patchd-agent enroll --server "$PATCHD_SERVER" --token "$PATCHD_TOKEN" --state "$STATE"; then
			echo "patchd-agent: enrollment failed; enroll with: patchd-agent enroll --server URL --token TOKEN, then start the service" >&2
		fi
	fi
	if [ ! -f "$STATE/state.json" ]; then
		echo "patchd-agent: not enrolled yet: run patchd-agent enroll --server URL --token TOKEN, then start the patchd-agent service"
	fi
}

# After the start: an enrolled computer where the agent does not run is
# told so on stderr, with the command that runs it.
# Under systemd, the restart's own status (START_FAILED) tells.
agent_running() {
	if [ -d /run/systemd/system ]; then
		[ -z "${START_FAILED:-}" ]
		return
	fi
	for p in /run/patchd-agent.pid /var/run/patchd-agent.pid; do
		if [ -r "$p" ] && kill -0 "$(cat "$p")" 2>/dev/null; then return 0; fi
	done
	return 1
}
service_manager_runs() {
	[ -d /run/systemd/system ] || [ -f /run/openrc/softlevel ] || { command -v runlevel >/dev/null && runlevel >/dev/null 2>&1; }
}
say_if_not_running() {
	if [ ! -f "$STATE/state.json" ] || agent_running; then return 0; fi
	RUN="` + PackageBin + ` run --state $STATE"
	if service_manager_runs; then
		echo "patchd-agent: enrolled, but the patchd-agent service did not start, so the agent is not running: start the service, or run: $RUN" >&2
	else
		echo "patchd-agent: enrolled, but no service manager runs here, so the agent is not running: run it with: $RUN (from what starts programs here)" >&2
	fi
}
`
}

func debPostinst(server string) string {
	return `#!/bin/sh
set -e

` + enrollFunction(server) + `
case "$1" in
configure | abort-upgrade | abort-deconfigure | abort-remove)
	enroll
	deb-systemd-helper unmask patchd-agent.service >/dev/null || true
	if deb-systemd-helper --quiet was-enabled patchd-agent.service; then
		deb-systemd-helper enable patchd-agent.service >/dev/null || true
	else
		deb-systemd-helper update-state patchd-agent.service >/dev/null || true
	fi
	update-rc.d patchd-agent defaults >/dev/null
	if [ -f "$STATE/state.json" ]; then
		if [ -d /run/systemd/system ]; then
			systemctl --system daemon-reload >/dev/null || true
			deb-systemd-invoke restart patchd-agent.service >/dev/null || START_FAILED=1
		else
			invoke-rc.d --skip-systemd-native patchd-agent restart || true
		fi
	fi
	say_if_not_running
	;;
esac
exit 0
`
}

// debPrerm stops the agent on removal; on upgrade the new postinst
// restarts it.
const debPrerm = `#!/bin/sh
set -e
if [ "$1" = remove ]; then
	if [ -d /run/systemd/system ]; then
		deb-systemd-invoke stop patchd-agent.service >/dev/null || true
	elif [ -x /etc/init.d/patchd-agent ]; then
		invoke-rc.d --skip-systemd-native patchd-agent stop || true
	fi
fi
exit 0
`

// debPostrm: on removal the init script (a conffile) and its links stay
// (the script does nothing without the binary); purge removes them, the
// state, the enrollment configuration and the log.
const debPostrm = `#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload >/dev/null || true
fi
if [ "$1" = remove ] && command -v deb-systemd-helper >/dev/null; then
	deb-systemd-helper mask patchd-agent.service >/dev/null || true
fi
if [ "$1" = purge ]; then
	if command -v deb-systemd-helper >/dev/null; then
		deb-systemd-helper purge patchd-agent.service >/dev/null || true
		deb-systemd-helper unmask patchd-agent.service >/dev/null || true
	fi
	update-rc.d patchd-agent remove >/dev/null
	rm -rf ` + PackageState + ` /etc/patchd-agent /var/log/patchd-agent.log
fi
exit 0
`

// rpmPost: $1 is 1 on installation, 2 on upgrade. The service is enabled
// on installation (a distribution's presets would leave it disabled) and
// restarted when the computer is enrolled and the service enabled.
func rpmPost(server string) string {
	return `#!/bin/sh
` + enrollFunction(server) + `
enroll
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
	if [ "$1" -eq 1 ]; then systemctl enable patchd-agent.service >/dev/null 2>&1 || :; fi
	if [ -f "$STATE/state.json" ] && systemctl --quiet is-enabled patchd-agent.service 2>/dev/null; then
		systemctl restart patchd-agent.service || START_FAILED=1
	fi
elif command -v chkconfig >/dev/null 2>&1; then
	chkconfig --add patchd-agent || :
	if [ -f "$STATE/state.json" ]; then service patchd-agent restart || :; fi
elif command -v update-rc.d >/dev/null 2>&1; then
	update-rc.d patchd-agent defaults >/dev/null || :
	if [ -f "$STATE/state.json" ]; then invoke-rc.d patchd-agent restart || :; fi
fi
say_if_not_running
exit 0
`
}

// rpmPreun: $1 is 0 on erase, 1 on upgrade (the new %post restarts).
const rpmPreun = `#!/bin/sh
if [ "$1" -eq 0 ]; then
	if [ -d /run/systemd/system ]; then
		systemctl --no-reload disable --now patchd-agent.service >/dev/null 2>&1 || :
	elif command -v service >/dev/null 2>&1; then
		service patchd-agent stop || :
	elif command -v invoke-rc.d >/dev/null 2>&1; then
		invoke-rc.d patchd-agent stop || :
	fi
fi
exit 0
`

// rpmPostun: $1 is 0 on erase: the service's registration goes; the
// state stays (rpm -e is apt remove, not purge).
const rpmPostun = `#!/bin/sh
if [ "$1" -eq 0 ]; then
	if command -v chkconfig >/dev/null 2>&1; then chkconfig --del patchd-agent >/dev/null 2>&1 || :
	elif command -v update-rc.d >/dev/null 2>&1; then update-rc.d patchd-agent remove >/dev/null 2>&1 || :; fi
	if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || :; fi
fi
exit 0
`

// packageInitScript is the SysV init script patchd-agent install writes,
// with two lines after its header for a package: it does nothing once
// the package is removed (its links stay until purge), and on Debian it
// sources init-functions, which hands it to systemctl when systemd runs.
func packageInitScript() string {
	script := agentsvc.SysVScript(PackageBin, PackageState)
	add := `# Removed but not purged: nothing to run.
[ -x ` + PackageBin + ` ] || exit 0
# Debian: under systemd, init-functions hands the action to systemctl.
[ -r /lib/lsb/init-functions ] && . /lib/lsb/init-functions
`
	lines := strings.SplitAfter(script, "\n")
	at := 1 // after the #! line when the script has no LSB header
	for i, l := range lines {
		if strings.HasPrefix(l, "### END INIT INFO") {
			at = i + 1
			for at < len(lines) && strings.HasPrefix(lines[at], "#") {
				at++
			}
			break
		}
	}
	return strings.Join(lines[:at], "") + add + strings.Join(lines[at:], "")
}
