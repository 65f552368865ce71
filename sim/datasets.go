package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/patchd/patchd/agent/collect"
)

// datasetColumns lists every dataset the simulator sends and the keys of
// its rows, in the order DATASETS.md documents them. Every row of a dataset
// carries exactly these keys (a value may be null).
var datasetColumns = []struct {
	name string
	keys []string
}{
	{"services", []string{"name", "displayName", "state", "startMode", "account"}},
	{"processes", []string{"name", "pid", "user", "memoryMB", "cpuPercent", "path"}},
	{"network-adapters", []string{"name", "description", "macAddress", "ipAddress", "subnetMask", "gateway", "dnsServers", "dhcpEnabled", "speedMbps", "status"}},
	{"routing-tables", []string{"destination", "netmask", "gateway", "interface", "metric"}},
	{"network-connections", []string{"process", "protocol", "localAddress", "localPort", "remoteAddress", "remotePort", "remoteHost", "state"}},
	{"local-users", []string{"name", "fullName", "enabled", "lastLogonAt", "passwordLastSetAt", "description"}},
	{"local-groups", []string{"name", "description", "members"}},
	{"local-administrators", []string{"account", "type", "source"}},
	{"logged-on-users", []string{"user", "sessionType", "logonAt", "clientAddress"}},
	{"logon-history", []string{"user", "logonType", "logonAt", "success"}},
	{"profiles", []string{"user", "path", "sizeMB", "lastUsedAt"}},
	{"time-zone", []string{"timeZone", "ianaName", "utcOffset", "daylightSaving"}},
	{"environment-variables", []string{"name", "value", "scope"}},
	{"startup-items", []string{"name", "command", "location", "user"}},
	{"logical-disks", []string{"drive", "driveType", "fileSystem", "volumeName", "sizeGB", "freeGB"}},
	{"disk-partitions", []string{"disk", "partition", "type", "sizeGB", "bootable"}},
	{"disk-volumes", []string{"device", "mountPoint", "label", "fileSystem", "sizeGB", "freeGB"}},
	{"bitlocker", []string{"drive", "protectionStatus", "encryptionMethod", "encryptionPercent", "keyProtectors", "recoveryKeyId", "recoveryPassword"}},
	{"disk-encryption", []string{"volume", "method", "encrypted", "status"}},
	{"firmware", []string{"vendor", "version", "releaseDate", "mode", "secureBoot"}},
	{"boot-configuration", []string{"entry", "description", "device", "path", "isDefault"}},
	{"processors", []string{"name", "manufacturer", "cores", "logicalProcessors", "maxClockMHz", "socket", "architecture"}},
	{"physical-memory", []string{"slot", "capacityGB", "speedMHz", "memoryType", "manufacturer", "partNumber"}},
	{"motherboards", []string{"manufacturer", "product", "serialNumber", "version"}},
	{"monitors", []string{"name", "manufacturer", "serialNumber", "resolution", "manufactureYear"}},
	{"printers", []string{"name", "driver", "port", "isDefault", "isShared", "isNetwork"}},
	{"sound-devices", []string{"name", "manufacturer", "status"}},
	{"scsi-controllers", []string{"name", "manufacturer", "driver"}},
	{"usb-devices", []string{"name", "manufacturer", "vendorId", "productId", "deviceClass", "serialNumber"}},
	{"windows-drivers", []string{"deviceName", "deviceClass", "manufacturer", "driverVersion", "driverDate", "infName", "signed"}},
	{"shared-folders", []string{"name", "path", "description", "type"}},
	{"applied-gpo", []string{"name", "scope", "linkLocation", "appliedAt"}},
	{"windows-update-settings", []string{"updateSource", "wsusServer", "automaticUpdates", "activeHoursStart", "activeHoursEnd", "deferQualityUpdatesDays", "deferFeatureUpdatesDays", "lastSearchAt", "lastInstallAt"}},
	{"installed-updates", []string{"kb", "title", "type", "installedAt", "installedBy"}},
	{"event-log-summary", []string{"log", "level", "count", "lastEventAt", "topSource"}},
	{"os-information", []string{"name", "edition", "version", "build", "kernel", "architecture", "installDate", "lastBootAt", "locale"}},
	{"disk-quotas", []string{"volume", "user", "limitMB", "warningMB", "usedMB", "status"}},
}

var datasetKeys = func() map[string][]string {
	m := make(map[string][]string, len(datasetColumns))
	for _, d := range datasetColumns {
		m[d.name] = d.keys
	}
	return m
}()

// windowsOnlyDatasets are not sent by Linux and macOS endpoints.
var windowsOnlyDatasets = map[string]bool{"disk-quotas": true, "bitlocker": true, "windows-drivers": true, "applied-gpo": true, "windows-update-settings": true}

type dsBuilder struct {
	out map[string][]map[string]any
}

// add appends a row whose values follow the dataset's key order.
func (d *dsBuilder) add(name string, vals ...any) {
	keys := datasetKeys[name]
	if len(keys) != len(vals) {
		panic(fmt.Sprintf("sim: dataset %s: %d values for %d keys", name, len(vals), len(keys)))
	}
	row := make(map[string]any, len(keys))
	for i, k := range keys {
		row[k] = vals[i]
	}
	d.out[name] = append(d.out[name], row)
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func (g *generator) datasets() map[string][]map[string]any {
	p := g.p
	d := &dsBuilder{out: make(map[string][]map[string]any, len(datasetColumns))}
	for _, c := range datasetColumns {
		if p.platform != "windows" && windowsOnlyDatasets[c.name] {
			continue
		}
		if p.platform == "windows" && c.name == "disk-encryption" {
			continue
		}
		d.out[c.name] = []map[string]any{}
	}
	r := newRand(p.seed, p.index, "datasets")
	g.dsServicesAndProcesses(d, r)
	g.dsNetwork(d, r)
	g.dsAccounts(d, r)
	g.dsSystem(d, r)
	g.dsStorage(d, r)
	g.dsHardware(d, r)
	g.dsUpdatesAndLogs(d, r)
	g.dsOS(d)
	if p.platform == "windows" {
		g.dsWindows(d, r)
	}
	return d.out
}

// service is a background service and the process it runs as.
type service struct {
	name, display, start, account, image string
	memMB                                int
}

var windowsServices = []service{
	{"BFE", "Base Filtering Engine", "auto", "NT AUTHORITY\\LocalService", "svchost.exe", 9},
	{"BITS", "Background Intelligent Transfer Service", "manual", "LocalSystem", "svchost.exe", 12},
	{"CryptSvc", "Cryptographic Services", "auto", "NT Authority\\NetworkService", "svchost.exe", 14},
	{"Dhcp", "DHCP Client", "auto", "NT Authority\\LocalService", "svchost.exe", 6},
	{"Dnscache", "DNS Client", "auto", "NT AUTHORITY\\NetworkService", "svchost.exe", 11},
	{"EventLog", "Windows Event Log", "auto", "NT AUTHORITY\\LocalService", "svchost.exe", 22},
	{"gpsvc", "Group Policy Client", "auto", "LocalSystem", "svchost.exe", 8},
	{"iphlpsvc", "IP Helper", "auto", "LocalSystem", "svchost.exe", 7},
	{"LanmanServer", "Server", "auto", "LocalSystem", "svchost.exe", 6},
	{"LanmanWorkstation", "Workstation", "auto", "NT AUTHORITY\\NetworkService", "svchost.exe", 7},
	{"mpssvc", "Windows Defender Firewall", "auto", "NT Authority\\LocalService", "svchost.exe", 10},
	{"Netlogon", "Netlogon", "auto", "LocalSystem", "lsass.exe", 0},
	{"RpcSs", "Remote Procedure Call (RPC)", "auto", "NT AUTHORITY\\NetworkService", "svchost.exe", 13},
	{"Schedule", "Task Scheduler", "auto", "LocalSystem", "svchost.exe", 15},
	{"Spooler", "Print Spooler", "auto", "LocalSystem", "spoolsv.exe", 18},
	{"TermService", "Remote Desktop Services", "manual", "NT Authority\\NetworkService", "svchost.exe", 11},
	{"W32Time", "Windows Time", "manual", "NT AUTHORITY\\LocalService", "svchost.exe", 5},
	{"WinDefend", "Microsoft Defender Antivirus Service", "auto", "LocalSystem", "MsMpEng.exe", 210},
	{"Winmgmt", "Windows Management Instrumentation", "auto", "localSystem", "svchost.exe", 28},
	{"WinRM", "Windows Remote Management (WS-Management)", "auto", "NT AUTHORITY\\NetworkService", "svchost.exe", 9},
	{"wuauserv", "Windows Update", "manual", "LocalSystem", "svchost.exe", 24},
	{"UsoSvc", "Update Orchestrator Service", "auto", "LocalSystem", "svchost.exe", 16},
	{"SamSs", "Security Accounts Manager", "auto", "LocalSystem", "lsass.exe", 0},
	{"PlugPlay", "Plug and Play", "manual", "LocalSystem", "svchost.exe", 5},
	{"Power", "Power", "auto", "LocalSystem", "svchost.exe", 4},
	{"ProfSvc", "User Profile Service", "auto", "LocalSystem", "svchost.exe", 8},
	{"SENS", "System Event Notification Service", "auto", "LocalSystem", "svchost.exe", 6},
	{"TrustedInstaller", "Windows Modules Installer", "manual", "localSystem", "TrustedInstaller.exe", 19},
	{"VSS", "Volume Shadow Copy", "manual", "LocalSystem", "vssvc.exe", 7},
	{"RemoteRegistry", "Remote Registry", "disabled", "NT AUTHORITY\\LocalService", "svchost.exe", 0},
	{"patchd-agent", "patchd Agent", "auto", "LocalSystem", "patchd-agent.exe", 24},
}

var windowsWorkstationServices = []service{
	{"Audiosrv", "Windows Audio", "auto", "NT AUTHORITY\\LocalService", "svchost.exe", 9},
	{"WSearch", "Windows Search", "auto", "LocalSystem", "SearchIndexer.exe", 48},
	{"WlanSvc", "WLAN AutoConfig", "auto", "LocalSystem", "svchost.exe", 7},
	{"bthserv", "Bluetooth Support Service", "manual", "NT AUTHORITY\\LocalService", "svchost.exe", 4},
	{"TabletInputService", "Touch Keyboard and Handwriting Panel Service", "manual", "LocalSystem", "svchost.exe", 6},
	{"SysMain", "SysMain", "auto", "LocalSystem", "svchost.exe", 31},
	{"ClickToRunSvc", "Microsoft Office Click-to-Run Service", "auto", "LocalSystem", "OfficeClickToRun.exe", 42},
	{"edgeupdate", "Microsoft Edge Update Service (edgeupdate)", "auto", "LocalSystem", "MicrosoftEdgeUpdate.exe", 0},
}

var windowsRoleServices = map[string][]service{
	"DC": {{"NTDS", "Active Directory Domain Services", "auto", "LocalSystem", "lsass.exe", 0},
		{"DNS", "DNS Server", "auto", "LocalSystem", "dns.exe", 180}, {"DFSR", "DFS Replication", "auto", "LocalSystem", "dfsrs.exe", 60},
		{"Kdc", "Kerberos Key Distribution Center", "auto", "LocalSystem", "lsass.exe", 0}, {"IsmServ", "Intersite Messaging", "auto", "LocalSystem", "ismserv.exe", 6}},
	"FS": {{"DFSR", "DFS Replication", "auto", "LocalSystem", "dfsrs.exe", 60}, {"Dfs", "DFS Namespace", "auto", "LocalSystem", "dfssvc.exe", 14},
		{"srmsvc", "File Server Resource Manager", "auto", "LocalSystem", "svchost.exe", 12}},
	"SQL": {{"MSSQLSERVER", "SQL Server (MSSQLSERVER)", "auto", "NT Service\\MSSQLSERVER", "sqlservr.exe", 12288},
		{"SQLSERVERAGENT", "SQL Server Agent (MSSQLSERVER)", "auto", "NT Service\\SQLSERVERAGENT", "SQLAGENT.EXE", 96},
		{"SQLBrowser", "SQL Server Browser", "disabled", "NT AUTHORITY\\LOCALSERVICE", "sqlbrowser.exe", 0},
		{"SQLWriter", "SQL Server VSS Writer", "auto", "LocalSystem", "sqlwriter.exe", 8}},
	"WEB": {{"W3SVC", "World Wide Web Publishing Service", "auto", "localSystem", "svchost.exe", 18}, {"WAS", "Windows Process Activation Service", "manual", "LocalSystem", "svchost.exe", 9},
		{"IISADMIN", "IIS Admin Service", "auto", "LocalSystem", "inetinfo.exe", 14}},
	"APP": {{"W3SVC", "World Wide Web Publishing Service", "auto", "localSystem", "svchost.exe", 18}, {"WAS", "Windows Process Activation Service", "manual", "LocalSystem", "svchost.exe", 9},
		{"MSMQ", "Message Queuing", "auto", "NT AUTHORITY\\NetworkService", "mqsvc.exe", 22}},
	"RDS": {{"TermServLicensing", "Remote Desktop Licensing", "auto", "NT AUTHORITY\\NetworkService", "svchost.exe", 11},
		{"Tssdis", "Remote Desktop Connection Broker", "auto", "NT AUTHORITY\\NetworkService", "tssdis.exe", 48}},
	"BKP": {{"VeeamTransportSvc", "Veeam Installer Service", "auto", "LocalSystem", "Veeam.Backup.Transport.exe", 120}},
}

var linuxServices = []service{
	{"systemd-journald.service", "Journal Service", "static", "root", "/usr/lib/systemd/systemd-journald", 38},
	{"systemd-logind.service", "User Login Management", "static", "root", "/usr/lib/systemd/systemd-logind", 7},
	{"systemd-udevd.service", "Rule-based Manager for Device Events and Files", "static", "root", "/usr/lib/systemd/systemd-udevd", 9},
	{"dbus.service", "D-Bus System Message Bus", "static", "messagebus", "/usr/bin/dbus-daemon", 5},
	{"ssh.service", "OpenBSD Secure Shell server", "enabled", "root", "/usr/sbin/sshd", 8},
	{"cron.service", "Regular background program processing daemon", "enabled", "root", "/usr/sbin/cron", 3},
	{"rsyslog.service", "System Logging Service", "enabled", "syslog", "/usr/sbin/rsyslogd", 6},
	{"systemd-timesyncd.service", "Network Time Synchronization", "enabled", "systemd-timesync", "/usr/lib/systemd/systemd-timesyncd", 7},
	{"systemd-networkd.service", "Network Configuration", "enabled", "systemd-network", "/usr/lib/systemd/systemd-networkd", 8},
	{"systemd-resolved.service", "Network Name Resolution", "enabled", "systemd-resolve", "/usr/lib/systemd/systemd-resolved", 12},
	{"unattended-upgrades.service", "Unattended Upgrades Shutdown", "enabled", "root", "/usr/bin/python3", 22},
	{"getty@tty1.service", "Getty on tty1", "enabled", "root", "/sbin/agetty", 2},
	{"apt-daily.timer", "Daily apt download activities", "enabled", "root", "", 0},
	{"patchd-agent.service", "patchd Agent", "enabled", "root", "/usr/bin/patchd-agent", 21},
}

var rpmServices = []service{
	{"systemd-journald.service", "Journal Service", "static", "root", "/usr/lib/systemd/systemd-journald", 38},
	{"systemd-logind.service", "User Login Management", "static", "root", "/usr/lib/systemd/systemd-logind", 7},
	{"systemd-udevd.service", "Rule-based Manager for Device Events and Files", "static", "root", "/usr/lib/systemd/systemd-udevd", 9},
	{"dbus-broker.service", "D-Bus System Message Bus", "enabled", "dbus", "/usr/bin/dbus-broker-launch", 4},
	{"sshd.service", "OpenSSH server daemon", "enabled", "root", "/usr/sbin/sshd", 8},
	{"crond.service", "Command Scheduler", "enabled", "root", "/usr/sbin/crond", 3},
	{"rsyslog.service", "System Logging Service", "enabled", "root", "/usr/sbin/rsyslogd", 6},
	{"chronyd.service", "NTP client/server", "enabled", "chrony", "/usr/sbin/chronyd", 4},
	{"NetworkManager.service", "Network Manager", "enabled", "root", "/usr/sbin/NetworkManager", 18},
	{"firewalld.service", "firewalld - dynamic firewall daemon", "enabled", "root", "/usr/bin/python3", 42},
	{"tuned.service", "Dynamic System Tuning Daemon", "enabled", "root", "/usr/bin/python3", 30},
	{"auditd.service", "Security Auditing Service", "enabled", "root", "/sbin/auditd", 4},
	{"polkit.service", "Authorization Manager", "static", "polkitd", "/usr/lib/polkit-1/polkitd", 11},
	{"patchd-agent.service", "patchd Agent", "enabled", "root", "/usr/bin/patchd-agent", 21},
}

var linuxRoleServices = map[string][]service{
	"web":        {{"nginx.service", "A high performance web server and a reverse proxy server", "enabled", "www-data", "/usr/sbin/nginx", 14}, {"php8.2-fpm.service", "The PHP 8.2 FastCGI Process Manager", "enabled", "www-data", "/usr/sbin/php-fpm8.2", 64}},
	"db":         {{"postgresql@15-main.service", "PostgreSQL Cluster 15-main", "enabled", "postgres", "/usr/lib/postgresql/15/bin/postgres", 2048}, {"redis-server.service", "Advanced key-value store", "enabled", "redis", "/usr/bin/redis-server", 96}},
	"app":        {{"app.service", "Order service (Java)", "enabled", "app", "/usr/bin/java", 1536}, {"node-api.service", "Customer API (Node.js)", "enabled", "node", "/usr/bin/node", 310}},
	"docker":     {{"docker.service", "Docker Application Container Engine", "enabled", "root", "/usr/bin/dockerd", 160}, {"containerd.service", "containerd container runtime", "enabled", "root", "/usr/bin/containerd", 72}},
	"monitoring": {{"prometheus.service", "Monitoring system and time series database", "enabled", "prometheus", "/usr/bin/prometheus", 1800}, {"grafana-server.service", "Grafana instance", "enabled", "grafana", "/usr/share/grafana/bin/grafana", 220}},
	"files":      {{"smbd.service", "Samba SMB Daemon", "enabled", "root", "/usr/sbin/smbd", 30}, {"nfs-server.service", "NFS server and services", "enabled", "root", "", 0}},
	"intranet":   {{"apache2.service", "The Apache HTTP Server", "enabled", "www-data", "/usr/sbin/apache2", 45}},
}

var macServices = []service{
	{"com.apple.WindowServer", "WindowServer", "auto", "_windowserver", "/System/Library/PrivateFrameworks/SkyLight.framework/Resources/WindowServer", 420},
	{"com.apple.mds", "Spotlight", "auto", "root", "/System/Library/Frameworks/CoreServices.framework/Frameworks/Metadata.framework/Support/mds", 90},
	{"com.apple.softwareupdated", "Software Update", "auto", "_softwareupdate", "/System/Library/PrivateFrameworks/SoftwareUpdate.framework/Resources/softwareupdated", 36},
	{"com.apple.backupd", "Time Machine", "auto", "root", "/System/Library/CoreServices/backupd.bundle/Contents/Resources/backupd", 22},
	{"com.apple.bluetoothd", "Bluetooth", "auto", "root", "/usr/sbin/bluetoothd", 18},
	{"com.apple.airportd", "Wi-Fi", "auto", "root", "/usr/libexec/airportd", 14},
	{"com.apple.syspolicyd", "Gatekeeper", "auto", "root", "/usr/libexec/syspolicyd", 25},
	{"com.apple.XProtect.daemon.scan", "XProtect", "auto", "root", "/Library/Apple/System/Library/CoreServices/XProtect.app/Contents/MacOS/XProtect", 30},
	{"com.apple.opendirectoryd", "Open Directory", "auto", "root", "/usr/libexec/opendirectoryd", 16},
	{"com.apple.securityd", "Security Server", "auto", "root", "/usr/sbin/securityd", 12},
	{"com.apple.locationd", "Location Services", "auto", "_locationd", "/usr/libexec/locationd", 20},
	{"com.apple.screensharing", "Screen Sharing", "disabled", "root", "", 0},
	{"com.apple.smbd", "File Sharing", "manual", "root", "", 0},
	{"com.patchd.agent", "patchd Agent", "auto", "root", "/Library/patchd/patchd-agent", 21},
}

// userProcesses run in a user's session, by platform.
var userProcesses = map[string][][2]string{
	"windows": {{"explorer.exe", "C:\\Windows\\explorer.exe"}, {"chrome.exe", "C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe"},
		{"msedge.exe", "C:\\Program Files (x86)\\Microsoft\\Edge\\Application\\msedge.exe"}, {"OUTLOOK.EXE", "C:\\Program Files\\Microsoft Office\\root\\Office16\\OUTLOOK.EXE"},
		{"ms-teams.exe", "C:\\Program Files\\WindowsApps\\MSTeams_24295.605.3225.8804_x64__8wekyb3d8bbwe\\ms-teams.exe"},
		{"OneDrive.exe", "C:\\Program Files\\Microsoft OneDrive\\OneDrive.exe"}, {"EXCEL.EXE", "C:\\Program Files\\Microsoft Office\\root\\Office16\\EXCEL.EXE"},
		{"WINWORD.EXE", "C:\\Program Files\\Microsoft Office\\root\\Office16\\WINWORD.EXE"}, {"Slack.exe", "C:\\Program Files\\Slack\\Slack.exe"},
		{"SearchHost.exe", "C:\\Windows\\SystemApps\\MicrosoftWindows.Client.CBS_cw5n1h2txyewy\\SearchHost.exe"}, {"Zoom.exe", "C:\\Program Files\\Zoom\\bin\\Zoom.exe"}},
	"macos": {{"Finder", "/System/Library/CoreServices/Finder.app/Contents/MacOS/Finder"}, {"Dock", "/System/Library/CoreServices/Dock.app/Contents/MacOS/Dock"},
		{"Google Chrome", "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"}, {"Slack", "/Applications/Slack.app/Contents/MacOS/Slack"},
		{"Microsoft Outlook", "/Applications/Microsoft Outlook.app/Contents/MacOS/Microsoft Outlook"}, {"zoom.us", "/Applications/zoom.us.app/Contents/MacOS/zoom.us"},
		{"Terminal", "/System/Applications/Utilities/Terminal.app/Contents/MacOS/Terminal"}, {"Safari", "/Applications/Safari.app/Contents/MacOS/Safari"}},
}

func (g *generator) servicesFor() []service {
	p := g.p
	var list []service
	switch p.platform {
	case "windows":
		list = append(list, windowsServices...)
		if p.kind == kindWorkstation {
			list = append(list, windowsWorkstationServices...)
		}
		list = append(list, windowsRoleServices[p.role]...)
		if p.hw.manufacturer == "VMware, Inc." {
			list = append(list, service{"VMTools", "VMware Tools", "auto", "LocalSystem", "vmtoolsd.exe", 26})
		}
		if p.antivirus == "CrowdStrike Falcon Sensor" {
			list = append(list, service{"CSFalconService", "CrowdStrike Falcon Sensor Service", "auto", "LocalSystem", "CSFalconService.exe", 95})
		}
	case "linux":
		if p.os.family == "rpm" {
			list = append(list, rpmServices...)
		} else {
			list = append(list, linuxServices...)
		}
		list = append(list, linuxRoleServices[p.role]...)
	case "macos":
		list = append(list, macServices...)
	}
	return list
}

func (g *generator) dsServicesAndProcesses(d *dsBuilder, r *rand.Rand) {
	p := g.p
	pid := 4
	nextPID := func() int {
		pid += between(r, 4, 400)
		return pid
	}
	if p.platform == "windows" {
		d.add("processes", "System", 4, "NT AUTHORITY\\SYSTEM", 0.1, 0.1, nil)
		for _, n := range []string{"smss.exe", "csrss.exe", "wininit.exe", "services.exe", "lsass.exe", "winlogon.exe", "dwm.exe"} {
			d.add("processes", n, nextPID(), "NT AUTHORITY\\SYSTEM", round1(2+r.Float64()*40), round1(r.Float64()*0.8), "C:\\Windows\\System32\\"+n)
		}
	}
	for _, s := range g.servicesFor() {
		state := "running"
		switch {
		case s.start == "disabled":
			state = "stopped"
		case s.start == "manual" && chance(r, 0.5):
			state = "stopped"
		case strings.HasSuffix(s.name, ".timer"):
			state = "waiting"
		}
		d.add("services", s.name, s.display, state, s.start, s.account)
		if state == "running" && s.memMB > 0 && s.image != "" {
			path := s.image
			name := s.image
			if p.platform == "windows" {
				if !strings.Contains(path, "\\") {
					path = "C:\\Windows\\System32\\" + s.image
				}
			} else {
				name = s.image[strings.LastIndex(s.image, "/")+1:]
			}
			mem := float64(s.memMB) * (0.7 + r.Float64()*0.6)
			user := s.account
			if p.platform == "windows" {
				user = "NT AUTHORITY\\SYSTEM"
			}
			d.add("processes", name, nextPID(), user, round1(mem), round1(r.Float64()*3), path)
		}
	}
	if p.hasUser {
		for _, up := range userProcesses[p.platform] {
			if chance(r, 0.8) {
				d.add("processes", up[0], nextPID(), p.loginName(), round1(40+r.Float64()*600), round1(r.Float64()*8), up[1])
			}
		}
	}
	if p.platform == "linux" {
		d.add("processes", "bash", nextPID(), "root", 4.2, 0.0, "/usr/bin/bash")
	}
}

func (g *generator) dsNetwork(d *dsBuilder, r *rand.Rand) {
	p := g.p
	dns := fmt.Sprintf("10.%d.0.10, 10.%d.0.11", datacenter.octet, datacenter.octet)
	name, desc, speed := "Ethernet", "Intel(R) Ethernet Connection (17) I219-LM", 1000
	switch {
	case p.hw.manufacturer == "VMware, Inc.":
		name, desc, speed = "Ethernet0", "vmxnet3 Ethernet Adapter", 10000
	case p.hw.manufacturer == "QEMU":
		name, desc, speed = "Ethernet", "Red Hat VirtIO Ethernet Adapter", 10000
	case p.hw.virtual:
		name, desc, speed = "Ethernet", "Microsoft Hyper-V Network Adapter", 10000
	case p.hw.laptop && p.platform == "windows":
		name, desc, speed = "Wi-Fi", "Intel(R) Wi-Fi 6E AX211 160MHz", 1201
	case p.platform == "macos":
		name, desc, speed = "en0", "Wi-Fi", 1200
	case !p.hw.laptop && p.isServer():
		name, desc, speed = "Ethernet", "Broadcom NetXtreme E-Series Advanced Dual-port 25Gb", 25000
	}
	iface := name
	if p.platform == "linux" {
		iface = map[bool]string{true: "ens192", false: "enp1s0"}[p.hw.manufacturer == "VMware, Inc."]
		if p.os.family == "rpm" && p.hw.manufacturer == "QEMU" {
			iface = "eth0"
		}
		name = iface
	}
	dhcp := !p.isServer()
	d.add("network-adapters", name, desc, p.mac, p.ip, "255.255.255.0", p.gateway, dns, dhcp, speed, "Up")
	loop := map[string]string{"windows": "Loopback Pseudo-Interface 1", "linux": "lo", "macos": "lo0"}[p.platform]
	d.add("network-adapters", loop, "Software Loopback Interface", nil, "127.0.0.1", "255.0.0.0", nil, nil, false, nil, "Up")
	if p.platform == "windows" && p.kind == kindWorkstation && chance(r, 0.5) {
		d.add("network-adapters", "Bluetooth Network Connection", "Bluetooth Device (Personal Area Network)", randomMAC(r), nil, nil, nil, nil, true, 3, "Disconnected")
	}
	if p.role == "docker" {
		d.add("network-adapters", "docker0", "Linux bridge", randomMAC(r), "172.17.0.1", "255.255.0.0", nil, nil, false, nil, "Up")
	}
	subnet := p.gateway[:strings.LastIndex(p.gateway, ".")] + ".0"
	d.add("routing-tables", "0.0.0.0", "0.0.0.0", p.gateway, iface, 25)
	d.add("routing-tables", subnet, "255.255.255.0", "0.0.0.0", iface, 281)
	d.add("routing-tables", "127.0.0.0", "255.0.0.0", "0.0.0.0", loop, 331)
	if p.kind == kindWorkstation && chance(r, 0.3) {
		d.add("routing-tables", "10.0.0.0", "255.0.0.0", "10.255.0.1", "Cisco Secure Client", 1)
	}

	// outbound connections, for the to-internet-domains report
	remotes := [][3]string{{"20.190.151.7", "443", "login.microsoftonline.com"}, {"52.112.238.155", "443", "teams.microsoft.com"},
		{"142.250.185.78", "443", "www.google.com"}, {"13.107.42.14", "443", "officeclient.microsoft.com"},
		{"52.123.129.14", "443", "outlook.office365.com"}, {"104.18.32.115", "443", "slack.com"}, {"170.114.52.2", "443", "zoom.us"},
		{"185.199.108.133", "443", "raw.githubusercontent.com"}, {"151.101.2.132", "443", "deb.debian.org"}, {"91.189.91.83", "80", "archive.ubuntu.com"}}
	server := fmt.Sprintf("10.%d.0.20", datacenter.octet)
	agentProc := map[string]string{"windows": "patchd-agent.exe", "linux": "patchd-agent", "macos": "patchd-agent"}[p.platform]
	d.add("network-connections", agentProc, "tcp", p.ip, between(r, 49152, 65000), server, 443, "patchd.corp.example.com", "ESTABLISHED")
	for i := 0; i < between(r, 2, 6); i++ {
		rm := pick(r, remotes)
		proc := map[string]string{"windows": "chrome.exe", "linux": "apt", "macos": "Google Chrome"}[p.platform]
		if p.isServer() && p.platform == "windows" {
			proc = "svchost.exe"
		}
		d.add("network-connections", proc, "tcp", p.ip, between(r, 49152, 65000), rm[0], atoi(rm[1]), rm[2], "ESTABLISHED")
	}
	listen := map[string]int{"windows": 3389, "linux": 22, "macos": 5900}[p.platform]
	d.add("network-connections", map[string]string{"windows": "svchost.exe", "linux": "sshd", "macos": "screensharingd"}[p.platform], "tcp", "0.0.0.0", listen, nil, nil, nil, "LISTEN")
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func randomMAC(r *rand.Rand) string {
	return fmt.Sprintf("%02X:%02X:%02X:%02X:%02X:%02X", r.IntN(256)&0xfe|0x02, r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(256))
}

func (g *generator) dsAccounts(d *dsBuilder, r *rand.Rand) {
	p := g.p
	day := func(maxAgo int) string {
		return ts(Epoch.Add(-time.Duration(r.IntN(maxAgo*24*3600)) * time.Second))
	}
	fullName := p.user.first + " " + p.user.last
	switch p.platform {
	case "windows":
		admin := "Administrator"
		if p.kind == kindWorkstation {
			admin = "LocalAdmin"
		}
		d.add("local-users", admin, nil, true, day(40), day(30), "Built-in account for administering the computer/domain")
		d.add("local-users", "Guest", nil, false, nil, nil, "Built-in account for guest access to the computer/domain")
		d.add("local-users", "DefaultAccount", nil, false, nil, nil, "A user account managed by the system.")
		d.add("local-users", "WDAGUtilityAccount", nil, false, nil, day(200), "A user account managed and used by the system for Windows Defender Application Guard scenarios.")
		members := []string{p.hostname + "\\" + admin}
		if p.domain != "" {
			members = append(members, "CORP\\Domain Admins")
			if p.kind == kindWorkstation {
				members = append(members, "CORP\\Workstation Admins")
			} else {
				members = append(members, "CORP\\Server Admins")
			}
		}
		localAdminUser := p.kind == kindWorkstation && chance(r, 0.18)
		if localAdminUser {
			members = append(members, p.loginName())
		}
		d.add("local-groups", "Administrators", "Administrators have complete and unrestricted access to the computer/domain", strings.Join(members, ", "))
		users := "NT AUTHORITY\\INTERACTIVE, NT AUTHORITY\\Authenticated Users"
		if p.domain != "" {
			users += ", CORP\\Domain Users"
		}
		d.add("local-groups", "Users", "Users are prevented from making accidental or intentional system-wide changes and can run most applications", users)
		d.add("local-groups", "Guests", "Guests have the same access as members of the Users group by default, except for the Guest account which is further restricted", p.hostname+"\\Guest")
		rdu := ""
		if p.kind == kindWindowsServer && p.domain != "" {
			rdu = "CORP\\Server Operators"
		}
		d.add("local-groups", "Remote Desktop Users", "Members in this group are granted the right to logon remotely", rdu)
		d.add("local-groups", "Remote Management Users", "Members of this group can access WMI resources over management protocols", "")
		d.add("local-groups", "Backup Operators", "Backup Operators can override security restrictions for the sole purpose of backing up or restoring files", "")
		for _, m := range members {
			typ, src := "User", "Local"
			if strings.HasPrefix(m, "CORP\\") {
				src = "Domain"
				if strings.Contains(m, "Admins") {
					typ = "Group"
				}
			}
			d.add("local-administrators", m, typ, src)
		}
	case "linux":
		d.add("local-users", "root", "root", true, day(20), day(300), nil)
		d.add("local-users", "daemon", "daemon", false, nil, nil, nil)
		d.add("local-users", "nobody", "nobody", false, nil, nil, nil)
		d.add("local-users", "ansible", "Ansible automation", true, day(2), day(180), "automation account")
		d.add("local-users", p.user.login, fullName, true, day(30), day(120), nil)
		admGroup := "sudo"
		if p.os.family == "rpm" {
			admGroup = "wheel"
		}
		d.add("local-groups", admGroup, nil, "ansible, "+p.user.login)
		d.add("local-groups", "adm", nil, "syslog, "+p.user.login)
		d.add("local-groups", "users", nil, p.user.login)
		if p.role == "docker" {
			d.add("local-groups", "docker", nil, "ansible")
		}
		d.add("local-administrators", "root", "User", "Local")
		d.add("local-administrators", "ansible", "User", "Local")
		d.add("local-administrators", p.user.login, "User", "Local")
		if p.domain != "" {
			d.add("local-administrators", "linux-admins@corp.example.com", "Group", "Domain")
		}
	case "macos":
		d.add("local-users", p.user.login, fullName, true, day(3), day(150), nil)
		d.add("local-users", "itadmin", "IT Admin", true, day(90), day(200), "management account")
		d.add("local-users", "root", "System Administrator", false, nil, nil, nil)
		admins := "root, itadmin"
		if chance(r, 0.4) {
			admins += ", " + p.user.login
			d.add("local-administrators", p.user.login, "User", "Local")
		}
		d.add("local-administrators", "itadmin", "User", "Local")
		d.add("local-groups", "admin", "Administrators", admins)
		d.add("local-groups", "staff", "Staff", p.user.login+", itadmin")
		d.add("local-groups", "_lpadmin", "Printer Administrators", "")
	}

	// sessions, logons and profiles
	logon := Epoch.Add(-time.Duration(between(r, 1, 30)) * time.Hour)
	if p.hasUser {
		session := map[string]string{"windows": "console", "macos": "console"}[p.platform]
		var client any
		if p.kind == kindWindowsServer {
			session, client = "rdp", fmt.Sprintf("10.%d.%d.%d", pick(r, sites).octet, between(r, 16, 40), between(r, 4, 250))
		}
		d.add("logged-on-users", p.loginName(), session, ts(logon), client)
		if p.role == "RDS" {
			for i := 0; i < between(r, 3, 12); i++ {
				u := strings.ToLower(pick(r, firstNames)[:1] + pick(r, lastNames))
				d.add("logged-on-users", "CORP\\"+u, "rdp", ts(logon.Add(time.Duration(r.IntN(7200))*time.Second)), fmt.Sprintf("10.%d.%d.%d", pick(r, sites).octet, between(r, 16, 40), between(r, 4, 250)))
			}
		}
	} else if p.platform == "linux" && chance(r, 0.3) {
		d.add("logged-on-users", p.user.login, "ssh", ts(logon), fmt.Sprintf("10.%d.16.%d", sites[0].octet, between(r, 4, 250)))
	}
	logonType := map[string]string{"windows": "Interactive", "linux": "ssh", "macos": "Interactive"}[p.platform]
	if p.kind == kindWindowsServer {
		logonType = "RemoteInteractive"
	}
	for i := 0; i < between(r, 3, 8); i++ {
		at := Epoch.Add(-time.Duration(r.IntN(14*24*3600)) * time.Second)
		d.add("logon-history", p.loginName(), logonType, ts(at), !chance(r, 0.08))
	}

	profileRoot := map[string]string{"windows": "C:\\Users\\", "linux": "/home/", "macos": "/Users/"}[p.platform]
	if p.hasUser || p.platform == "linux" {
		d.add("profiles", p.loginName(), profileRoot+p.user.login, between(r, 800, 48000), ts(logon))
	}
	if p.platform == "windows" {
		d.add("profiles", "NT AUTHORITY\\SYSTEM", "C:\\Windows\\system32\\config\\systemprofile", between(r, 40, 400), ts(Epoch.Add(-time.Hour)))
		d.add("profiles", p.hostname+"\\LocalAdmin", "C:\\Users\\LocalAdmin", between(r, 60, 900), day(60))
	}
}

func utcOffset(tz string) (string, bool) {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return "+00:00", false
	}
	t := Epoch.In(loc)
	_, off := t.Zone()
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	return fmt.Sprintf("%s%02d:%02d", sign, off/3600, off%3600/60), t.IsDST()
}

func (g *generator) dsSystem(d *dsBuilder, r *rand.Rand) {
	p := g.p
	off, dst := utcOffset(p.site.tz)
	tzName := p.site.tz
	if p.platform == "windows" {
		tzName = p.site.windowsTZ
	}
	d.add("time-zone", tzName, p.site.tz, off, dst)

	switch p.platform {
	case "windows":
		vars := [][3]string{{"ComSpec", "%SystemRoot%\\system32\\cmd.exe", "system"}, {"DriverData", "C:\\Windows\\System32\\Drivers\\DriverData", "system"},
			{"NUMBER_OF_PROCESSORS", fmt.Sprint(p.cpu.threads), "system"}, {"OS", "Windows_NT", "system"},
			{"Path", "%SystemRoot%\\system32;%SystemRoot%;%SystemRoot%\\System32\\Wbem;%SYSTEMROOT%\\System32\\WindowsPowerShell\\v1.0\\;%SYSTEMROOT%\\System32\\OpenSSH\\", "system"},
			{"PATHEXT", ".COM;.EXE;.BAT;.CMD;.VBS;.VBE;.JS;.JSE;.WSF;.WSH;.MSC", "system"}, {"PROCESSOR_ARCHITECTURE", "AMD64", "system"},
			{"PSModulePath", "%ProgramFiles%\\WindowsPowerShell\\Modules;%SystemRoot%\\system32\\WindowsPowerShell\\v1.0\\Modules", "system"},
			{"TEMP", "%SystemRoot%\\TEMP", "system"}, {"TMP", "%SystemRoot%\\TEMP", "system"}, {"USERNAME", "SYSTEM", "system"}, {"windir", "%SystemRoot%", "system"}}
		if p.hasUser {
			vars = append(vars, [3]string{"OneDrive", "C:\\Users\\" + p.user.login + "\\OneDrive - Example Corp", "user"},
				[3]string{"TEMP", "%USERPROFILE%\\AppData\\Local\\Temp", "user"}, [3]string{"TMP", "%USERPROFILE%\\AppData\\Local\\Temp", "user"})
		}
		for _, v := range vars {
			d.add("environment-variables", v[0], v[1], v[2])
		}
		d.add("startup-items", "SecurityHealth", "%windir%\\system32\\SecurityHealthSystray.exe", "HKLM\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Run", "Public")
		if p.kind == kindWorkstation {
			d.add("startup-items", "OneDrive", "\"C:\\Program Files\\Microsoft OneDrive\\OneDrive.exe\" /background", "HKU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run", p.loginName())
			d.add("startup-items", "Teams", "\"C:\\Program Files\\WindowsApps\\MSTeams_24295.605.3225.8804_x64__8wekyb3d8bbwe\\ms-teams.exe\" msteams:system-initiated", "HKU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run", p.loginName())
			if p.hw.laptop {
				d.add("startup-items", "RtkAudUService", "\"C:\\Windows\\System32\\DriverStore\\FileRepository\\realtekservice.inf_amd64_8b2ae7f7e9b9e1b4\\RtkAudUService64.exe\" -background", "HKLM\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Run", "Public")
			}
			if chance(r, 0.4) {
				d.add("startup-items", "Send to OneNote", "C:\\PROGRA~1\\MICROS~1\\root\\Office16\\ONENOTEM.EXE /tsr", "Startup", p.loginName())
			}
		}
	case "linux":
		for _, v := range [][2]string{{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, {"LANG", "en_US.UTF-8"}, {"SHELL", "/bin/bash"}, {"HOME", "/root"}, {"TERM", "xterm-256color"}, {"EDITOR", "vim"}} {
			d.add("environment-variables", v[0], v[1], "system")
		}
		if p.role == "app" {
			d.add("environment-variables", "JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64", "system")
		}
		d.add("startup-items", "patchd-agent.service", "/usr/bin/patchd-agent run", "/etc/systemd/system/multi-user.target.wants", "root")
		d.add("startup-items", "logrotate", "/usr/sbin/logrotate /etc/logrotate.conf", "/etc/cron.daily", "root")
		if chance(r, 0.4) {
			d.add("startup-items", "backup.sh", "/opt/scripts/backup.sh", "/var/spool/cron/crontabs/root", "root")
		}
	case "macos":
		for _, v := range [][2]string{{"PATH", "/opt/homebrew/bin:/opt/homebrew/sbin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}, {"SHELL", "/bin/zsh"}, {"LANG", "en_US.UTF-8"}, {"HOME", "/Users/" + p.user.login}, {"TMPDIR", "/var/folders/4x/ghp3k1qd5bq_5hqcl2m0b7zc0000gn/T/"}} {
			d.add("environment-variables", v[0], v[1], "user")
		}
		d.add("startup-items", "com.patchd.agent", "/Library/patchd/patchd-agent run", "/Library/LaunchDaemons", "root")
		d.add("startup-items", "com.microsoft.update.agent", "/Library/Application Support/Microsoft/MAU2.0/Microsoft AutoUpdate.app/Contents/MacOS/Microsoft Update Assistant.app/Contents/MacOS/Microsoft Update Assistant", "/Library/LaunchAgents", "all users")
		d.add("startup-items", "Slack", "/Applications/Slack.app", "Login Items", p.user.login)
	}

	// firmware, boot
	mode, secure := "UEFI", true
	if p.hw.manufacturer == "QEMU" || p.kind == kindWindowsServer && p.os.id == "srv2019" && p.hw.virtual && chance(r, 0.5) {
		mode, secure = "Legacy", false
	}
	if p.hw.manufacturer == "VMware, Inc." {
		secure = chance(r, 0.6)
	}
	d.add("firmware", p.hw.biosVendor, p.hw.biosVersion, p.hw.biosDate, mode, secure)
	switch p.platform {
	case "windows":
		d.add("boot-configuration", "{bootmgr}", "Windows Boot Manager", "partition=\\Device\\HarddiskVolume1", "\\EFI\\Microsoft\\Boot\\bootmgfw.efi", false)
		d.add("boot-configuration", "{current}", strings.TrimPrefix(p.osName, "Microsoft "), "partition=C:", "\\WINDOWS\\system32\\winload.efi", true)
	case "linux":
		d.add("boot-configuration", "0", fmt.Sprintf("%s, with Linux %s", p.osName, p.os.newBuild), "/dev/sda1", "/boot/vmlinuz-"+p.os.newBuild, g.osPatched)
		d.add("boot-configuration", "1", fmt.Sprintf("%s, with Linux %s", p.osName, p.os.oldBuild), "/dev/sda1", "/boot/vmlinuz-"+p.os.oldBuild, !g.osPatched)
	case "macos":
		d.add("boot-configuration", "Macintosh HD", "macOS "+p.os.version, "/dev/disk3s1s1", "/System/Library/CoreServices/boot.efi", true)
	}
}

func (g *generator) dsStorage(d *dsBuilder, r *rand.Rand) {
	p := g.p
	layout := p.diskLayout()
	total := 0.0
	for _, v := range layout {
		if p.platform != "macos" || v.mount == "/" {
			total += v.sizeGB
		}
	}
	switch p.platform {
	case "windows":
		d.add("disk-partitions", 0, 0, "GPT: System", 0.1, true)
		d.add("disk-partitions", 0, 1, "GPT: Basic Data", round1(p.diskGB), false)
		d.add("disk-partitions", 0, 2, "GPT: Unknown", 0.7, false)
		for i, v := range layout {
			d.add("logical-disks", v.mount, "Local Disk", v.fs, v.label, v.sizeGB, v.freeGB)
			d.add("disk-volumes", v.device, v.mount+"\\", v.label, v.fs, v.sizeGB, v.freeGB)
			if i > 0 {
				d.add("disk-partitions", i, 0, "GPT: Basic Data", v.sizeGB, false)
			}
		}
		d.add("disk-volumes", `\\?\Volume{`+machineUID(p.seed, p.index+1<<20)+`}`, nil, "SYSTEM", "FAT32", 0.1, 0.07)
		d.add("disk-volumes", `\\?\Volume{`+machineUID(p.seed, p.index+2<<20)+`}`, nil, "Windows RE tools", "NTFS", 0.7, 0.1)
		if p.kind == kindWorkstation && chance(r, 0.25) {
			d.add("logical-disks", "E:", "Removable Disk", "exFAT", "USB DRIVE", 58.6, round1(5+r.Float64()*50))
		}
		d.add("logical-disks", "Z:", "Network Connection", "NTFS", "Home", 500.0, round1(100+r.Float64()*350))
	default:
		for i, v := range layout {
			d.add("logical-disks", v.mount, "Local Disk", v.fs, v.label, v.sizeGB, v.freeGB)
			d.add("disk-volumes", v.device, v.mount, v.label, v.fs, v.sizeGB, v.freeGB)
			if p.platform == "linux" {
				disk := 0
				if strings.HasPrefix(v.device, "/dev/sdb") {
					disk = 1
				}
				d.add("disk-partitions", disk, i, map[string]string{"vfat": "EFI System", "ext4": "Linux filesystem", "xfs": "Linux LVM"}[v.fs], v.sizeGB, v.mount == "/boot/efi")
			}
		}
		if p.platform == "macos" {
			d.add("disk-partitions", 0, 0, "Apple_APFS_ISC", 0.5, false)
			d.add("disk-partitions", 0, 1, "Apple_APFS", p.diskGB, true)
			d.add("disk-partitions", 0, 2, "Apple_APFS_Recovery", 5.4, false)
		}
	}

	// encryption
	switch {
	case p.platform == "windows":
		for _, v := range layout {
			on := (p.kind == kindWorkstation && chance(r, 0.9)) || (p.kind == kindWindowsServer && chance(r, 0.25))
			if !on {
				d.add("bitlocker", v.mount, "Off", nil, 0, nil, nil, nil)
				continue
			}
			groups := make([]string, 8)
			for i := range groups {
				groups[i] = fmt.Sprintf("%06d", r.IntN(90909)*11) // each group of a recovery password is a multiple of 11
			}
			protectors := "Tpm, NumericalPassword"
			if p.kind == kindWindowsServer {
				protectors = "NumericalPassword"
			}
			d.add("bitlocker", v.mount, "On", "XtsAes128", 100, protectors, "{"+strings.ToUpper(machineUID(p.seed, p.index+3<<20+len(v.mount)))+"}", strings.Join(groups, "-"))
		}
	case p.platform == "macos":
		fv := chance(r, 0.92)
		d.add("disk-encryption", "/", "FileVault", fv, map[bool]string{true: "FileVault is On.", false: "FileVault is Off."}[fv])
	default:
		for _, v := range layout {
			if v.mount == "/boot/efi" {
				continue
			}
			enc := v.mount != "/" && chance(r, 0.3)
			status := "not encrypted"
			var method any
			if enc {
				method, status = "LUKS2", "unlocked"
			}
			d.add("disk-encryption", v.mount, method, enc, status)
		}
	}

	// shares
	if p.platform == "windows" {
		d.add("shared-folders", "ADMIN$", "C:\\Windows", "Remote Admin", "Special")
		d.add("shared-folders", "C$", "C:\\", "Default share", "Special")
		d.add("shared-folders", "IPC$", nil, "Remote IPC", "IPC")
		switch p.role {
		case "DC":
			d.add("shared-folders", "NETLOGON", "C:\\Windows\\SYSVOL\\sysvol\\corp.example.com\\SCRIPTS", "Logon server share", "Disk")
			d.add("shared-folders", "SYSVOL", "C:\\Windows\\SYSVOL\\sysvol", "Logon server share", "Disk")
		case "FS":
			d.add("shared-folders", "Departments", "D:\\Shares\\Departments", "Department data", "Disk")
			d.add("shared-folders", "Home$", "D:\\Shares\\Home", "User home folders", "Disk")
			d.add("shared-folders", "Public", "D:\\Shares\\Public", nil, "Disk")
		case "SQL":
			d.add("shared-folders", "SQLBackup$", "D:\\SQLBackup", "SQL Server backups", "Disk")
		}
		if p.kind == kindWorkstation && chance(r, 0.05) {
			d.add("shared-folders", "Scans", "C:\\Users\\"+p.user.login+"\\Documents\\Scans", nil, "Disk")
		}
	} else if p.role == "files" {
		d.add("shared-folders", "data", "/srv/data", "Samba share", "Disk")
		d.add("shared-folders", "/srv/exports", "/srv/exports", "NFS export to 10.100.0.0/16", "NFS")
	}
}

func (g *generator) dsHardware(d *dsBuilder, r *rand.Rand) {
	p := g.p
	cpuMaker := "GenuineIntel"
	switch {
	case strings.HasPrefix(p.cpu.name, "AMD"):
		cpuMaker = "AuthenticAMD"
	case strings.HasPrefix(p.cpu.name, "Apple"):
		cpuMaker = "Apple"
	}
	socket := "U3E1"
	switch {
	case p.hw.virtual:
		socket = "None"
	case p.isServer():
		socket = "CPU1"
	case p.kind == kindMac:
		socket = "SoC"
	}
	sockets := 1
	cores := p.cpu.cores
	if p.isServer() && !p.hw.virtual {
		sockets, cores = 2, p.cpu.cores/2
	}
	for s := 0; s < sockets; s++ {
		sock := socket
		if sockets > 1 {
			sock = fmt.Sprintf("CPU%d", s+1)
		}
		threads := p.cpu.threads / sockets
		d.add("processors", p.cpu.name, cpuMaker, cores, threads, p.cpu.mhz, sock, p.arch())
	}

	// memory modules
	modules := 2
	switch {
	case p.hw.virtual || p.kind == kindMac:
		modules = 1
	case p.isServer():
		modules = 8
	case p.ramGB <= 8:
		modules = 1
	}
	memType, speed, maker, part := "DDR5", 5600, "Samsung", "M425R2GA3BB0-CQKOD"
	switch {
	case p.kind == kindMac:
		memType, speed, maker, part = "LPDDR5", 6400, "Apple", ""
	case p.hw.virtual:
		memType, speed, maker, part = "DRAM", 0, p.hw.manufacturer, ""
	case p.isServer():
		memType, speed, maker, part = "DDR4", 3200, "Micron Technology", "36ASF4G72PZ-3G2E1"
	case strings.Contains(p.cpu.name, "8365U"):
		memType, speed, maker, part = "DDR4", 2667, "SK Hynix", "HMA81GS6CJR8N-VK"
	}
	for i := 0; i < modules; i++ {
		var sp, pn any = speed, part
		if speed == 0 {
			sp = nil
		}
		if part == "" {
			pn = nil
		}
		d.add("physical-memory", fmt.Sprintf("DIMM %d", i), float64(p.ramGB)/float64(modules), sp, memType, maker, pn)
	}

	board := map[string][2]string{
		"Dell Inc.": {"Dell Inc.", "0M5DDR"}, "HP": {"HP", "8B41"}, "LENOVO": {"LENOVO", p.hw.model}, "HPE": {"HPE", "ProLiant DL380 Gen10 Plus"},
		"Microsoft Corporation": {"Microsoft Corporation", "Virtual Machine"}, "VMware, Inc.": {"Intel Corporation", "440BX Desktop Reference Platform"},
		"QEMU": {"QEMU", "Standard PC (Q35 + ICH9, 2009)"}, "Apple Inc.": {"Apple Inc.", p.hw.model},
	}[p.hw.manufacturer]
	if p.hw.manufacturer == "Microsoft Corporation" && !p.hw.virtual {
		board[1] = "Surface Laptop 5"
	}
	var boardSerial any = "/" + p.serial + "/CNFCW00" + fmt.Sprint(between(r, 10, 99)) + "G000" + fmt.Sprint(between(r, 10, 99)) + "/"
	if p.hw.virtual {
		boardSerial = nil
	}
	d.add("motherboards", board[0], board[1], boardSerial, map[bool]string{true: "None", false: "A00"}[p.hw.virtual])

	// screens, printers, sound and USB belong to desks
	if p.kind == kindWorkstation || p.kind == kindMac {
		if p.hw.laptop {
			name, res := "Built-in Display", "1920x1200"
			if p.kind == kindMac {
				name, res = "Color LCD", "3024x1964"
			}
			d.add("monitors", name, p.hw.manufacturer, nil, res, nil)
		}
		for i := 0; i < weighted(r, 15, 55, 30); i++ {
			m := pick(r, [][3]string{{"DELL P2423D", "Dell", "2560x1440"}, {"DELL U2723QE", "Dell", "3840x2160"}, {"HP E24 G5", "HP", "1920x1080"}, {"LG HDR 4K", "LG Electronics", "3840x2160"}, {"ThinkVision T24i-30", "Lenovo", "1920x1080"}})
			d.add("monitors", m[0], m[1], randomString(r, serialAlphabet, 10), m[2], between(r, 2020, 2024))
		}
		printers := [][3]string{{"FOLLOW-ME", "Xerox Global Print Driver PCL6", "\\\\SRV-PRINT01\\FollowMe"}, {fmt.Sprintf("%s-3F-MFP", p.site.code), "HP Universal Printing PCL 6", fmt.Sprintf("10.%d.2.%d", p.site.octet, between(r, 20, 40))}}
		for i, pr := range printers {
			if i > 0 && !chance(r, 0.6) {
				continue
			}
			d.add("printers", pr[0], pr[1], pr[2], i == 0, false, true)
		}
		if p.platform == "windows" {
			d.add("printers", "Microsoft Print to PDF", "Microsoft Print To PDF", "PORTPROMPT:", false, false, false)
		}
		sound := "Realtek(R) Audio"
		if p.kind == kindMac {
			sound = "MacBook Pro Speakers"
			if !p.hw.laptop {
				sound = "Mac mini Speakers"
			}
			d.add("sound-devices", sound, "Apple Inc.", "OK")
		} else {
			d.add("sound-devices", sound, "Realtek", "OK")
			d.add("sound-devices", "Intel(R) Display Audio", intel, "OK")
		}
		usb := [][5]string{{"USB Root Hub (USB 3.0)", "(Standard USB HUBs)", "8086", "A0ED", "Hub"}, {"HID Keyboard Device", "Logitech", "046D", "C31C", "HIDClass"},
			{"HID-compliant mouse", "Logitech", "046D", "C077", "HIDClass"}, {"Integrated Webcam", "Microsoft", "0BDA", "5634", "Camera"}}
		if p.kind == kindMac {
			usb = [][5]string{{"USB3.1 Hub", "Apple Inc.", "05AC", "8104", "Hub"}, {"Magic Keyboard", "Apple Inc.", "05AC", "029C", "HIDClass"}}
		}
		for _, u := range usb {
			d.add("usb-devices", u[0], u[1], u[2], u[3], u[4], nil)
		}
		if chance(r, 0.2) {
			d.add("usb-devices", "SanDisk Ultra USB 3.0 Device", "SanDisk", "0781", "5581", "Mass Storage", randomString(r, "0123456789ABCDEF", 20))
		}
		if p.hw.laptop && p.kind == kindWorkstation && chance(r, 0.1) {
			d.add("usb-devices", "Realtek USB 3.0 Card Reader - SD Card", "Realtek", "0BDA", "0328", "Mass Storage", randomString(r, "0123456789ABCDEF", 12))
		}
		if chance(r, 0.35) {
			d.add("usb-devices", "Logitech Zone Vibe 100", "Logitech", "046D", "0AE1", "AudioEndpoint", nil)
		}
	}

	// storage controllers
	switch {
	case p.hw.manufacturer == "VMware, Inc.":
		d.add("scsi-controllers", "VMware PVSCSI Controller", "VMware, Inc.", "pvscsi")
	case p.hw.manufacturer == "QEMU":
		d.add("scsi-controllers", "Red Hat VirtIO SCSI controller", "Red Hat, Inc.", "vioscsi")
	case p.hw.virtual:
		d.add("scsi-controllers", "Microsoft Hyper-V SCSI Controller", "Microsoft", "storvsc")
	case p.isServer():
		d.add("scsi-controllers", "PERC H755 Front", "Broadcom / LSI", "percsas3")
	case p.kind == kindMac:
		d.add("scsi-controllers", "Apple ANS3 NVMe Controller", "Apple Inc.", "AppleANS3NVMeController")
	default:
		d.add("scsi-controllers", "Standard NVM Express Controller", "Standard NVM Express Controller", "stornvme")
	}
}

func (g *generator) dsUpdatesAndLogs(d *dsBuilder, r *rand.Rand) {
	p := g.p
	by := map[string]string{"windows": "NT AUTHORITY\\SYSTEM", "linux": "root", "macos": "root"}[p.platform]
	switch p.platform {
	case "windows":
		n := between(r, 8, 20)
		for i := n; i > 0; i-- {
			at := Epoch.AddDate(0, -i, 0).Add(time.Duration(between(r, 30, 200)) * time.Hour)
			month := Epoch.AddDate(0, -i, 0).Format("2006-01")
			kb := kbFor(p.os.id, month, "cu")
			d.add("installed-updates", kb, fmt.Sprintf("%s Cumulative Update for %s (%s)", month, p.os.titleName, kb), "Security Update", ts(at), by)
			if i%3 == 0 {
				kb := kbFor(p.os.id, month, "dotnet")
				d.add("installed-updates", kb, fmt.Sprintf("%s Cumulative Update for .NET Framework (%s)", month, kb), "Update", ts(at.Add(time.Hour)), by)
			}
		}
	case "linux":
		for i := 0; i < between(r, 5, 12); i++ {
			pkg := pick(r, linuxCatalog)
			name := g.linuxName(pkg)
			if name == "" || !pkg.updates {
				continue
			}
			at := Epoch.AddDate(0, 0, -between(r, 20, 200))
			d.add("installed-updates", nil, fmt.Sprintf("%s %s", name, linuxVersion(pkg, p.os, latestLevel(pkg, p.os)-2)), "Package Upgrade", ts(at), by)
		}
	case "macos":
		d.add("installed-updates", nil, "macOS "+p.os.version, "OS Update", ts(Epoch.AddDate(0, 0, -between(r, 20, 40))), by)
		d.add("installed-updates", nil, "XProtectPayloads 148", "Definition Update", ts(Epoch.AddDate(0, 0, -between(r, 8, 20))), by)
	}
	for _, u := range g.installedNow {
		typ := "Update"
		if slices := u.Categories; len(slices) > 0 && slices[0] == "Security Updates" {
			typ = "Security Update"
		}
		var kb any
		if u.KB != nil {
			kb = *u.KB
		}
		d.add("installed-updates", kb, u.Title, typ, u.at, "patchd")
	}

	type logLine struct {
		log, level, source string
		max                int
	}
	var lines []logLine
	switch p.platform {
	case "windows":
		lines = []logLine{{"System", "Critical", "Microsoft-Windows-Kernel-Power", 2}, {"System", "Error", "Service Control Manager", 25}, {"System", "Warning", "Microsoft-Windows-Time-Service", 40},
			{"Application", "Error", "Application Error", 30}, {"Application", "Warning", "Microsoft-Windows-User Profiles Service", 60}, {"Security", "Audit Failure", "Microsoft-Windows-Security-Auditing", 120}}
	case "linux":
		lines = []logLine{{"journal", "crit", "kernel", 1}, {"journal", "err", "systemd", 20}, {"journal", "warning", "sshd", 150}, {"auth", "err", "sshd", 80}}
	case "macos":
		lines = []logLine{{"system", "fault", "kernel", 5}, {"system", "error", "WindowServer", 60}, {"system", "error", "softwareupdated", 10}}
	}
	for _, l := range lines {
		n := r.IntN(l.max + 1)
		var last any
		if n > 0 {
			last = ts(Epoch.Add(-time.Duration(r.IntN(24*3600)) * time.Second))
		}
		d.add("event-log-summary", l.log, l.level, n, last, l.source)
	}
}

func (g *generator) dsWindows(d *dsBuilder, r *rand.Rand) {
	p := g.p
	// drivers
	var drivers [][5]string
	switch {
	case p.hw.manufacturer == "VMware, Inc.":
		drivers = [][5]string{{"VMware SVGA 3D", "Display", "VMware, Inc.", "9.17.7.3", "2024-02-15"}, {"vmxnet3 Ethernet Adapter", "Net", "VMware, Inc.", "1.9.17.0", "2024-01-11"},
			{"VMware PVSCSI Controller", "SCSIAdapter", "VMware, Inc.", "1.3.26.0", "2023-06-12"}, {"VMware VMCI Bus Device", "System", "VMware, Inc.", "9.8.18.0", "2023-05-03"}}
	case p.hw.virtual:
		drivers = [][5]string{{"Microsoft Hyper-V Video", "Display", "Microsoft", "10.0.20348.1", "2006-06-21"}, {"Microsoft Hyper-V Network Adapter", "Net", "Microsoft", "10.0.20348.1", "2006-06-21"}}
	default:
		drivers = [][5]string{{"Intel(R) Iris(R) Xe Graphics", "Display", intel, "31.0.101.5186", "2024-01-12"}, {"Intel(R) Wi-Fi 6E AX211 160MHz", "Net", intel, "23.90.0.8", "2024-09-26"},
			{"Intel(R) Ethernet Connection (17) I219-LM", "Net", intel, "12.19.2.60", "2023-11-03"}, {"Realtek(R) Audio", "MEDIA", "Realtek Semiconductor Corp.", "6.0.9688.1", "2024-06-18"},
			{"Intel(R) Smart Sound Technology for USB Audio", "MEDIA", intel, "10.29.0.10215", "2024-03-08"}, {"Intel(R) Serial IO I2C Host Controller - 51E8", "System", intel, "30.100.2405.44", "2024-01-31"},
			{"Intel(R) Management Engine Interface #1", "System", intel, "2406.5.5.0", "2024-02-05"}, {"Standard NVM Express Controller", "SCSIAdapter", "Standard NVM Express Controller", "10.0.26100.1882", "2006-06-21"},
			{"Intel(R) Wireless Bluetooth(R)", "Bluetooth", intel, "23.90.0.8", "2024-09-17"}, {"Integrated Webcam", "Camera", "Microsoft", "10.0.26100.1882", "2006-06-21"}}
		if strings.Contains(p.hw.model, "Latitude") || strings.Contains(p.hw.model, "OptiPlex") {
			drivers = append(drivers, [5]string{"Dell Data Vault", "System", "Dell Inc.", "2.8.1.4", "2024-03-22"})
		}
	}
	drivers = append(drivers, [5]string{"Microsoft ACPI-Compliant System", "System", "Microsoft", "10.0.26100.1", "2006-06-21"},
		[5]string{"High precision event timer", "System", "(Standard system devices)", "10.0.26100.1", "2006-06-21"},
		[5]string{"Microsoft Storage Spaces Controller", "SCSIAdapter", "Microsoft", "10.0.26100.1", "2006-06-21"})
	for _, dr := range drivers {
		inf := "oem" + fmt.Sprint(between(r, 1, 80)) + ".inf"
		if dr[2] == "Microsoft" || strings.HasPrefix(dr[2], "(Standard") {
			inf = strings.ToLower(strings.ReplaceAll(strings.Fields(dr[0])[0], "(R)", "")) + ".inf"
		}
		d.add("windows-drivers", dr[0], dr[1], dr[2], dr[3], dr[4], inf, true)
	}

	// group policy
	if p.domain != "" {
		at := ts(Epoch.Add(-time.Duration(r.IntN(90)) * time.Minute))
		d.add("applied-gpo", "Default Domain Policy", "Computer", "corp.example.com", at)
		ou := "corp.example.com/Servers"
		if p.kind == kindWorkstation {
			ou = "corp.example.com/" + p.site.code + "/Workstations"
			d.add("applied-gpo", "WS - Security Baseline 24H2", "Computer", ou, at)
			d.add("applied-gpo", "WS - BitLocker", "Computer", ou, at)
			d.add("applied-gpo", "WS - Windows Update for Business", "Computer", ou, at)
			d.add("applied-gpo", "USR - Drive Mappings", "User", "corp.example.com/"+p.site.code+"/Users", at)
			d.add("applied-gpo", "USR - Office Settings", "User", "corp.example.com/"+p.site.code+"/Users", at)
		} else {
			if p.role == "DC" {
				ou = "corp.example.com/Domain Controllers"
				d.add("applied-gpo", "Default Domain Controllers Policy", "Computer", ou, at)
			}
			d.add("applied-gpo", "SRV - Security Baseline 2022", "Computer", ou, at)
			d.add("applied-gpo", "SRV - Windows Update (WSUS)", "Computer", ou, at)
		}
		d.add("applied-gpo", "Local Group Policy", "Computer", "Local", at)
	}

	// update settings
	var wsus any
	source, auto, deferQ, deferF := "Windows Update for Business", "Auto download and schedule the install", 7, 180
	if p.kind == kindWindowsServer && p.domain != "" {
		source, auto, deferQ, deferF = "WSUS", "Auto download and notify for install", 0, 0
		wsus = "https://wsus.corp.example.com:8531"
	}
	if p.domain == "" {
		source, auto, deferQ, deferF = "Windows Update", "Not configured", 0, 0
	}
	d.add("windows-update-settings", source, wsus, auto, 8, 17, deferQ, deferF,
		ts(Epoch.Add(-time.Duration(r.IntN(20*3600))*time.Second)), ts(Epoch.AddDate(0, 0, -between(r, 1, 35))))
}

// dsOS sends os-information, and the NTFS quotas of Windows file servers.
// It draws from its own random source so that the other datasets stay as
// they were before it existed.
func (g *generator) dsOS(d *dsBuilder) {
	p := g.p
	r := newRand(p.seed, p.index, "os-information")
	build, version := g.osBuild()
	var edition, kernel any
	buildValue := any(build)
	locale := "en-US"
	switch p.platform {
	case "windows":
		// As the agent reads it ("Enterprise LTSC" of "... LTSC 2019").
		edition = collect.WindowsEdition(p.osName)
		kernel = "10.0." + strings.Split(build, ".")[0]
	case "linux":
		kernel, buildValue, locale = build, nil, "en_US.UTF-8"
		if p.isServer() {
			edition = "Server"
		}
	case "macos":
		if major := atoi(strings.Split(version, ".")[0]); major >= 11 {
			kernel = fmt.Sprintf("Darwin %d", major+9)
		}
		locale = "en_US"
	}
	installed := Epoch.AddDate(0, 0, -between(r, 45, 1400)).Format("2006-01-02")
	d.add("os-information", p.osName, edition, version, buildValue, kernel, p.arch(), installed, ts(Epoch.Add(-p.bootAgo)), locale)

	if p.platform == "windows" && p.role == "FS" {
		users := []string{"CORP\\" + p.user.login}
		for range between(r, 3, 8) {
			users = append(users, "CORP\\"+strings.ToLower(pick(r, firstNames)[:1]+pick(r, lastNames)))
		}
		for _, u := range users {
			limit := float64(pick(r, []int{5120, 10240, 20480}))
			used := round1(limit * r.Float64() * 1.05)
			status := "Ok"
			switch {
			case used >= limit:
				status = "Limit exceeded"
			case used >= limit*0.9:
				status = "Warning"
			}
			d.add("disk-quotas", "D:", u, limit, limit*0.9, used, status)
		}
	}
}
