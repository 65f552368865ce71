package reports

import (
	"strings"
)

// Categories of the catalog.
const (
	catInventory  = "Inventory"
	catSoftware   = "Software"
	catHardware   = "Hardware"
	catUpdates    = "Updates"
	catSecurity   = "Security"
	catVulns      = "Vulnerabilities"
	catCompliance = "Compliance"
	catUsers      = "Users"
	catNetwork    = "Network"
	catSystem     = "System"
	catStorage    = "Storage"
)

// ep is the two columns every per-endpoint report starts with.
var ep = []string{"Endpoint", "Endpoint ID"}

func cols(names ...string) []string { return append(append([]string{}, ep...), names...) }

// Application name patterns (lowercase substrings) of the software reports.
var (
	browsers       = []string{"google chrome", "chromium", "firefox", "microsoft edge", "opera", "brave", "vivaldi", "safari", "tor browser"}
	notBrowsers    = []string{"edge update", "webview2", "firefox esr maintenance", "safari technology"}
	messengers     = []string{"slack", "microsoft teams", "zoom", "skype", "discord", "telegram", "whatsapp", "signal", "webex", "element", "mattermost"}
	notMessengers  = []string{"meeting add-in", "machine-wide installer", "zoom outlook", "zoom plugin"}
	cloudStorage   = []string{"dropbox", "onedrive", "google drive", "box drive", "box sync", "icloud", "nextcloud", "owncloud", "mega sync", "megasync", "sync.com", "pcloud"}
	emailClients   = []string{"outlook", "thunderbird", "mailbird", "em client", "evolution", "mailspring"}
	officeSuites   = []string{"microsoft 365 apps", "microsoft office", "libreoffice", "openoffice", "wps office", "onlyoffice"}
	notOffice      = []string{"click-to-run", "tools for office runtime", "office 16"}
	outlookVersion = []string{"outlook", "microsoft 365 apps", "microsoft office professional", "microsoft office standard"}
)

var catalog = []*Definition{
	// Inventory
	{Key: "endpoints", Title: "Endpoints", Category: catInventory,
		Description: "Every endpoint with its operating system, domain, addresses, last user, agent and connection status.",
		Columns:     cols("Hostname", "Platform", "OS", "OS Version", "Type", "Domain", "IP Addresses", "Last User", "Status", "Agent Version", "Last Seen", "Enrolled"),
		Source:      sql("endpoints", "")},
	{Key: "installed-software", Title: "Installed Software", Category: catSoftware,
		Description: "Every application installed on every endpoint, by application name.",
		Columns:     []string{"Application", "Version", "Publisher", "Endpoint", "Endpoint ID", "Install Date", "Installed For", "Install Type"},
		Source:      sql("software", "")},
	{Key: "web-browsers", Title: "Web Browsers", Category: catSoftware,
		Description: "Web browsers installed on each endpoint, with their versions.",
		Columns:     cols("Browser", "Version", "Publisher", "Install Date", "Installed For", "Install Type"),
		Source:      sqlExcluding("software-by-endpoint", "", browsers, notBrowsers)},
	{Key: "instant-messengers", Title: "Instant Messengers", Category: catSoftware,
		Description: "Chat and meeting applications (Teams, Slack, Zoom…) installed on each endpoint.",
		Columns:     cols("Application", "Version", "Publisher", "Install Date", "Installed For", "Install Type"),
		Source:      sqlExcluding("software-by-endpoint", "", messengers, notMessengers)},
	{Key: "cloud-storage-apps", Title: "Cloud Storage Applications", Category: catSoftware,
		Description: "File-sync clients (OneDrive, Dropbox, Google Drive…) installed on each endpoint.",
		Columns:     cols("Application", "Version", "Publisher", "Install Date", "Installed For", "Install Type"),
		Source:      sql("software-by-endpoint", "", cloudStorage...)},
	{Key: "software-by-endpoint", Title: "Software by Endpoint", Category: catSoftware,
		Description: "Every application installed on every endpoint, grouped by endpoint.",
		Columns:     cols("Application", "Version", "Publisher", "Install Date", "Installed For", "Install Type"),
		Source:      sql("software-by-endpoint", "")},
	{Key: "hardware-inventory", Title: "Hardware Inventory", Category: catHardware,
		Description: "Manufacturer, model, serial number, processor, memory and disk capacity of each endpoint.",
		Columns:     cols("Manufacturer", "Model", "Serial Number", "CPU", "Cores", "RAM (GB)", "Disk Capacity (GB)", "Platform", "Type"),
		Source:      sql("hardware", "")},
	{Key: "disk-drives", Title: "Disk Drives", Category: catStorage,
		Description: "Each drive the inventory reports, with its size, free space and free percentage.",
		Columns:     cols("Drive", "Size (GB)", "Free (GB)", "Free (%)"),
		Source:      sql("disks", "")},
	{Key: "disks-summary", Title: "Disks Summary", Category: catStorage,
		Description: "Per endpoint: number of drives, total capacity, total free space and free percentage.",
		Columns:     cols("Platform", "Drives", "Total Size (GB)", "Total Free (GB)", "Free (%)"),
		Source:      sql("disks-summary", "")},
	{Key: "network-adapters", Title: "Network Adapters", Category: catNetwork,
		Description: "Network adapters with MAC and IPv4 address, gateway, DNS servers, DHCP, speed and link status.",
		Columns:     cols("Adapter", "Description", "MAC Address", "IP Address", "Subnet Mask", "Gateway", "DNS Servers", "DHCP", "Speed (Mbps)", "Status"),
		Source:      dataset("network-adapters", "name", "description", "macAddress", "ipAddress", "subnetMask", "gateway", "dnsServers", "dhcpEnabled", "speedMbps", "status").source()},
	{Key: "monitors", Title: "Monitors", Category: catHardware,
		Description: "Displays attached to workstations and Macs, with serial number, resolution and year of manufacture.",
		Columns:     cols("Monitor", "Manufacturer", "Serial Number", "Resolution", "Year of Manufacture"),
		Source:      dataset("monitors", "name", "manufacturer", "serialNumber", "resolution", "manufactureYear").source()},
	{Key: "physical-memory", Title: "Physical Memory", Category: catHardware,
		Description: "Memory modules by slot with capacity, speed, type, manufacturer and part number.",
		Columns:     cols("Slot", "Capacity (GB)", "Speed (MHz)", "Type", "Manufacturer", "Part Number"),
		Source:      dataset("physical-memory", "slot", "capacityGB", "speedMHz", "memoryType", "manufacturer", "partNumber").source()},
	{Key: "firmware", Title: "Firmware (BIOS/UEFI)", Category: catHardware,
		Description: "BIOS/UEFI vendor, version and release date, boot mode and Secure Boot state of each endpoint.",
		Columns:     cols("Vendor", "Version", "Release Date", "Boot Mode", "Secure Boot"),
		Source:      dataset("firmware", "vendor", "version", "releaseDate", "mode", "secureBoot").source()},
	{Key: "processors", Title: "Processors", Category: catHardware,
		Description: "Processors by socket with cores, logical processors, clock speed and architecture.",
		Columns:     cols("Processor", "Manufacturer", "Cores", "Logical Processors", "Max Clock (MHz)", "Socket", "Architecture"),
		Source:      dataset("processors", "name", "manufacturer", "cores", "logicalProcessors", "maxClockMHz", "socket", "architecture").source()},
	{Key: "motherboards", Title: "Motherboards", Category: catHardware,
		Description: "Motherboard (baseboard) manufacturer, product, serial number and version.",
		Columns:     cols("Manufacturer", "Product", "Serial Number", "Version"),
		Source:      dataset("motherboards", "manufacturer", "product", "serialNumber", "version").source()},
	{Key: "sound-devices", Title: "Sound Devices", Category: catHardware,
		Description: "Audio devices of each endpoint and their status.",
		Columns:     cols("Device", "Manufacturer", "Status"),
		Source:      dataset("sound-devices", "name", "manufacturer", "status").source()},
	{Key: "scsi-controllers", Title: "Storage Controllers", Category: catHardware,
		Description: "SCSI, SATA, NVMe and RAID controllers with their drivers.",
		Columns:     cols("Controller", "Manufacturer", "Driver"),
		Source:      dataset("scsi-controllers", "name", "manufacturer", "driver").source()},
	{Key: "windows-drivers", Title: "Windows Drivers", Category: catHardware,
		Description: "Third-party and in-box device drivers of Windows endpoints with version, date, INF and signature.",
		Columns:     cols("Device", "Class", "Manufacturer", "Driver Version", "Driver Date", "INF", "Signed"),
		Source:      dataset("windows-drivers", "deviceName", "deviceClass", "manufacturer", "driverVersion", "driverDate", "infName", "signed").source()},
	{Key: "printers", Title: "Printers", Category: catHardware,
		Description: "Printers installed on each endpoint with driver, port and whether default, shared or network.",
		Columns:     cols("Printer", "Driver", "Port", "Default", "Shared", "Network"),
		Source:      dataset("printers", "name", "driver", "port", "isDefault", "isShared", "isNetwork").source()},

	// Updates
	{Key: "update-summary", Title: "Update Summary", Category: catUpdates,
		Description: "Per endpoint: missing updates by severity and by source, and whether a reboot is required.",
		Columns:     cols("Platform", "Missing Updates", "Critical", "Important", "OS Updates", "Application Updates", "Reboot Required"),
		Source: mapped(sql("update-counts", ""), func(v []any) ([]any, bool) {
			return []any{v[0], v[1], v[2], v[4], v[5], v[6], v[7], v[8], v[9] == true || v[10] == true}, true
		})},
	{Key: "weekly-update-summary", Title: "Weekly Update Summary", Category: catUpdates,
		Description: "Updates installed per week over the last twelve weeks: how many, how many security updates, on how many endpoints, how many by patchd.",
		Columns:     []string{"Week Starting", "Updates Installed", "Security Updates", "Endpoints Updated", "Installed by patchd"},
		Source:      collect(weeklyUpdates)},
	{Key: "missing-updates", Title: "Missing Updates", Category: catUpdates,
		Description: "Every update missing on every endpoint, with severity, source, versions and approval.",
		Columns:     cols("Update", "KB", "Severity", "Source", "Installed Version", "Latest Version", "Reboot Required", "Release Date", "Detected", "Approval"),
		Source:      sql("updates", "")},
	{Key: "missing-critical-updates", Title: "Missing Critical Updates", Category: catUpdates,
		Description: "Missing updates of severity Critical on each endpoint.",
		Columns:     cols("Update", "KB", "Severity", "Source", "Installed Version", "Latest Version", "Reboot Required", "Release Date", "Detected", "Approval"),
		Source:      sql("updates", "critical")},
	{Key: "missing-third-party", Title: "Missing Third-Party Updates", Category: catUpdates,
		Description: "Application (third-party) updates missing on each endpoint, with installed and latest versions.",
		Columns:     cols("Update", "KB", "Severity", "Source", "Installed Version", "Latest Version", "Reboot Required", "Release Date", "Detected", "Approval"),
		Source:      sql("updates", "third-party")},
	{Key: "installed-updates", Title: "Installed Updates", Category: catUpdates,
		Description: "Update history of each endpoint: hot fixes, package upgrades, OS updates and updates deployed by patchd.",
		Columns:     cols("KB", "Update", "Type", "Installed At", "Installed By"),
		Source:      dataset("installed-updates", "kb", "title", "type", "installedAt", "installedBy").source()},
	{Key: "reboots", Title: "Reboots", Category: catUpdates,
		Description: "Reboots requested through patchd (actions and automations), newest first, with their outcome.",
		Columns:     cols("Run", "Status", "Requested By", "Requested At", "Started At", "Finished At", "Exit Code", "Run ID", "Result"),
		Source:      sql("commands", "REBOOT")},
	{Key: "update-status", Title: "Update Status", Category: catUpdates,
		Description: "Whether each endpoint is up to date, how many updates and critical updates it misses, and whether it awaits a reboot.",
		Columns:     cols("OS", "Status", "Missing Updates", "Critical Missing", "Pending Reboot", "Last Seen"),
		Source: mapped(sql("update-counts", ""), func(v []any) ([]any, bool) {
			status := "Up to date"
			if n, _ := v[5].(int64); n > 0 {
				status = "Critical updates missing"
			} else if n, _ := v[4].(int64); n > 0 {
				status = "Updates missing"
			}
			return []any{v[0], v[1], v[3], status, v[4], v[5], v[10], v[11]}, true
		})},
	{Key: "windows-update-settings", Title: "Windows Update Settings", Category: catUpdates,
		Description: "Update source (WSUS, Windows Update for Business), automatic update policy, active hours and deferrals of Windows endpoints.",
		Columns:     cols("Update Source", "WSUS Server", "Automatic Updates", "Active Hours Start", "Active Hours End", "Quality Deferral (days)", "Feature Deferral (days)", "Last Search", "Last Install"),
		Source:      dataset("windows-update-settings", "updateSource", "wsusServer", "automaticUpdates", "activeHoursStart", "activeHoursEnd", "deferQualityUpdatesDays", "deferFeatureUpdatesDays", "lastSearchAt", "lastInstallAt").source()},
	{Key: "win11-compatibility", Title: "Windows 11 Compatibility", Category: catUpdates,
		Description: "Whether each Windows workstation meets the Windows 11 hardware requirements (64-bit CPU, 2 cores at 1 GHz, 4 GB RAM, 64 GB disk, UEFI, Secure Boot, TPM).",
		Columns:     cols("OS", "CPU", "Architecture", "Cores", "Max Clock (MHz)", "RAM (GB)", "System Disk (GB)", "Boot Mode", "Secure Boot", "TPM", "Compatible", "Issues"),
		Source:      collect(win11)},
	{Key: "windows-update-history", Title: "Windows Update History", Category: catUpdates,
		Description: "Updates installed on Windows endpoints (Windows Update history and patchd deployments), newest data per endpoint.",
		Columns:     cols("KB", "Update", "Type", "Installed At", "Installed By"),
		Source:      dataset("installed-updates", "kb", "title", "type", "installedAt", "installedBy").only("windows").source()},
	{Key: "update-statistic", Title: "Update Deployment Statistics", Category: catUpdates,
		Description: "Per endpoint: update deployments by patchd, how many succeeded, failed, were cancelled or are pending, and the success rate.",
		Columns:     cols("Deployments", "Succeeded", "Failed", "Cancelled", "Pending", "Last Deployment", "Success Rate (%)"),
		Source:      sql("deploy-statistics", "")},

	// Security
	{Key: "antivirus-status", Title: "Antivirus Status", Category: catSecurity,
		Description: "The antivirus product each endpoint reports, or none.",
		Columns:     cols("Platform", "OS", "Antivirus", "Protected", "Status", "Last Seen"),
		Source:      sql("antivirus", "")},
	{Key: "bitlocker-status", Title: "BitLocker Status", Category: catSecurity,
		Description: "BitLocker protection, encryption method and progress and key protectors of each fixed drive of Windows endpoints.",
		Columns:     cols("Drive", "Protection", "Encryption Method", "Encrypted (%)", "Key Protectors"),
		Source:      dataset("bitlocker", "drive", "protectionStatus", "encryptionMethod", "encryptionPercent", "keyProtectors").source()},

	// Users
	{Key: "local-user-accounts", Title: "Local User Accounts", Category: catUsers,
		Description: "Local accounts of each endpoint, enabled or not, with last logon and password age.",
		Columns:     cols("Account", "Full Name", "Enabled", "Last Logon", "Password Last Set", "Description"),
		Source:      dataset("local-users", "name", "fullName", "enabled", "lastLogonAt", "passwordLastSetAt", "description").source()},
	{Key: "local-groups", Title: "Local Groups", Category: catUsers,
		Description: "Local groups of each endpoint with their members.",
		Columns:     cols("Group", "Description", "Members"),
		Source:      dataset("local-groups", "name", "description", "members").source()},
	{Key: "group-membership", Title: "Local Group Membership", Category: catUsers,
		Description: "One row per member of each local group.",
		Columns:     cols("Group", "Member"),
		Source: dataset("local-groups").each(func(row map[string]any) [][]any {
			var out [][]any
			for _, m := range strings.Split(str(row, "members"), ",") {
				if m = strings.TrimSpace(m); m != "" {
					out = append(out, []any{row["name"], m})
				}
			}
			return out
		}).source()},
	{Key: "profiles-by-computer", Title: "User Profiles by Computer", Category: catUsers,
		Description: "User profiles on each endpoint with their size and last use.",
		Columns:     cols("User", "Profile Path", "Size (MB)", "Last Used"),
		Source:      dataset("profiles", "user", "path", "sizeMB", "lastUsedAt").source()},
	{Key: "local-administrators", Title: "Local Administrators", Category: catSecurity,
		Description: "Members of the local Administrators group (sudo/wheel/admin elsewhere): accounts and groups, local or domain.",
		Columns:     cols("Account", "Type", "Source"),
		Source:      dataset("local-administrators", "account", "type", "source").source()},
	{Key: "shared-folders", Title: "Shared Folders", Category: catNetwork,
		Description: "Windows shares, Samba and NFS exports of each endpoint.",
		Columns:     cols("Share", "Path", "Description", "Type"),
		Source:      dataset("shared-folders", "name", "path", "description", "type").source()},
	{Key: "logged-on-users", Title: "Logged-On Users", Category: catUsers,
		Description: "Sessions open when the inventory was collected: console, RDP and SSH, with the client address.",
		Columns:     cols("User", "Session Type", "Logon At", "Client Address"),
		Source:      dataset("logged-on-users", "user", "sessionType", "logonAt", "clientAddress").source()},
	{Key: "offline-endpoints", Title: "Offline Endpoints", Category: catInventory,
		Description: "Endpoints that have not checked in for three check-in intervals, with when they were last seen.",
		Columns:     cols("Platform", "OS", "Last User", "IP Addresses", "Last Seen", "Days Offline"),
		Source:      sql("offline", "")},
	{Key: "low-disk-space", Title: "Low Disk Space", Category: catStorage,
		Description: "Local drives with less than 10% free space.",
		Columns:     cols("Drive", "Volume Name", "File System", "Size (GB)", "Free (GB)", "Free (%)"),
		Source: dataset("logical-disks", "drive", "volumeName", "fileSystem", "sizeGB", "freeGB").
			filter(func(row map[string]any) bool {
				size, free := num(row, "sizeGB"), num(row, "freeGB")
				return str(row, "driveType") != "Network Connection" && size > 0 && free/size < 0.10
			}).
			plus(func(row map[string]any, _ Env) []any {
				return []any{round2(100 * num(row, "freeGB") / num(row, "sizeGB"))}
			}).source()},
	{Key: "computer-ad-domains", Title: "Computers by AD Domain", Category: catInventory,
		Description: "The Active Directory domain and organizational unit of each endpoint.",
		Columns:     cols("Domain", "AD OU", "Platform", "OS", "Type"),
		Source:      sql("ad-domains", "")},
	{Key: "environment-variables", Title: "Environment Variables", Category: catSystem,
		Description: "System and user environment variables of each endpoint, as stored (unexpanded).",
		Columns:     cols("Variable", "Value", "Scope"),
		Source:      dataset("environment-variables", "name", "value", "scope").source()},
	{Key: "to-internet-domains", Title: "Connections to Internet Domains", Category: catNetwork,
		Description: "Open TCP connections whose remote address resolved to a domain name, with the process that holds them.",
		Columns:     cols("Process", "Remote Host", "Remote Address", "Remote Port", "State"),
		Source: dataset("network-connections", "process", "remoteHost", "remoteAddress", "remotePort", "state").
			filter(func(row map[string]any) bool { return str(row, "remoteHost") != "" }).source()},
	{Key: "bitlocker-key", Title: "BitLocker Recovery Keys", Category: catSecurity,
		Description: "BitLocker recovery key ids and recovery passwords of the protected drives of Windows endpoints.",
		Columns:     cols("Drive", "Protection", "Recovery Key ID", "Recovery Password"),
		Source: dataset("bitlocker", "drive", "protectionStatus", "recoveryKeyId", "recoveryPassword").
			filter(func(row map[string]any) bool { return str(row, "recoveryKeyId") != "" }).source()},
	{Key: "logical-disks", Title: "Logical Disks", Category: catStorage,
		Description: "Drives as the operating system mounts them: type, file system, label, size and free space.",
		Columns:     cols("Drive", "Drive Type", "File System", "Volume Name", "Size (GB)", "Free (GB)"),
		Source:      dataset("logical-disks", "drive", "driveType", "fileSystem", "volumeName", "sizeGB", "freeGB").source()},
	{Key: "disk-volumes", Title: "Disk Volumes", Category: catStorage,
		Description: "Volumes including those without a drive letter or mount point (EFI, recovery).",
		Columns:     cols("Device", "Mount Point", "Label", "File System", "Size (GB)", "Free (GB)"),
		Source:      dataset("disk-volumes", "device", "mountPoint", "label", "fileSystem", "sizeGB", "freeGB").source()},
	{Key: "os-information", Title: "Operating System Information", Category: catSystem,
		Description: "Operating system name, edition, version, build, kernel, architecture, install date, last boot and locale.",
		Columns:     cols("OS", "Edition", "Version", "Build", "Kernel", "Architecture", "Install Date", "Last Boot", "Locale"),
		Source:      dataset("os-information", "name", "edition", "version", "build", "kernel", "architecture", "installDate", "lastBootAt", "locale").source()},
	{Key: "os-install-dates", Title: "OS Install Dates", Category: catSystem,
		Description: "When the operating system of each endpoint was installed, and how many days ago.",
		Columns:     cols("OS", "Version", "Install Date", "Age (days)"),
		Source: dataset("os-information", "name", "version", "installDate").
			filter(func(row map[string]any) bool { return str(row, "installDate") != "" }).
			plus(func(row map[string]any, env Env) []any { return []any{daysSince(str(row, "installDate"), env.Now)} }).source()},
	{Key: "computer-time-zones", Title: "Computer Time Zones", Category: catSystem,
		Description: "The time zone of each endpoint, its IANA name, UTC offset and whether daylight saving time was in effect.",
		Columns:     cols("Time Zone", "IANA Name", "UTC Offset", "Daylight Saving"),
		Source:      dataset("time-zone", "timeZone", "ianaName", "utcOffset", "daylightSaving").source()},
	{Key: "running-processes", Title: "Running Processes", Category: catSystem,
		Description: "Processes running when the inventory was collected, with user, memory, CPU and executable.",
		Columns:     cols("Process", "PID", "User", "Memory (MB)", "CPU (%)", "Path"),
		Source:      dataset("processes", "name", "pid", "user", "memoryMB", "cpuPercent", "path").source()},
	{Key: "routing-tables", Title: "Routing Tables", Category: catNetwork,
		Description: "IPv4 routes of each endpoint.",
		Columns:     cols("Destination", "Netmask", "Gateway", "Interface", "Metric"),
		Source:      dataset("routing-tables", "destination", "netmask", "gateway", "interface", "metric").source()},
	{Key: "to-tcp-ip-addresses", Title: "TCP Connections to IP Addresses", Category: catNetwork,
		Description: "Established TCP connections of each endpoint: process, local and remote address and port.",
		Columns:     cols("Process", "Local Address", "Local Port", "Remote Address", "Remote Port", "State"),
		Source: dataset("network-connections", "process", "localAddress", "localPort", "remoteAddress", "remotePort", "state").
			filter(func(row map[string]any) bool { return str(row, "remoteAddress") != "" && str(row, "state") != "LISTEN" }).source()},
	{Key: "services", Title: "Services", Category: catSystem,
		Description: "Windows services, systemd units and launchd jobs with state, start mode and account.",
		Columns:     cols("Service", "Display Name", "State", "Start Mode", "Account"),
		Source:      dataset("services", "name", "displayName", "state", "startMode", "account").source()},
	{Key: "startup-items", Title: "Startup Items", Category: catSystem,
		Description: "Programs started at boot or logon: Run keys, Startup folders, enabled units, cron, launch daemons and agents.",
		Columns:     cols("Name", "Command", "Location", "User"),
		Source:      dataset("startup-items", "name", "command", "location", "user").source()},
	{Key: "applied-gpo", Title: "Applied Group Policy Objects", Category: catSystem,
		Description: "Group Policy Objects applied to domain-joined Windows endpoints, by scope and link.",
		Columns:     cols("GPO", "Scope", "Link Location", "Applied At"),
		Source:      dataset("applied-gpo", "name", "scope", "linkLocation", "appliedAt").source()},
	{Key: "boot-configuration", Title: "Boot Configuration", Category: catSystem,
		Description: "Boot entries (Windows Boot Manager, GRUB menu, macOS startup disk) and the default one.",
		Columns:     cols("Entry", "Description", "Device", "Path", "Default"),
		Source:      dataset("boot-configuration", "entry", "description", "device", "path", "isDefault").source()},
	{Key: "agent-configuration", Title: "Agent Configuration", Category: catSystem,
		Description: "The patchd agent of each endpoint: version, connection status, last check-in and inventory, enrollment, and whether it talks plain HTTP across the network (enrolled with --insecure-http).",
		Columns:     cols("Platform", "Agent Version", "Status", "Last Check-in", "Last Inventory", "Enrolled", "Pending Reboot", "Plain HTTP"),
		Source:      sql("agents", "")},

	// Vulnerabilities
	{Key: "vulnerabilities", Title: "Vulnerabilities", Category: catVulns,
		Description: "CVEs present on the fleet, highest CVSS first, with KEV listing, remediation status and the affected software and endpoints.",
		Columns:     []string{"CVE", "Severity", "CVSS", "CISA KEV", "Ransomware", "Published", "Remediation Status", "Remediation Deadline", "Affected Endpoints", "Software", "NVD"},
		Source:      collect(vulnerabilityList)},
	{Key: "vulnerable-software", Title: "Vulnerable Software", Category: catVulns,
		Description: "Application versions with known vulnerabilities: how many CVEs, on how many endpoints, highest CVSS and fixed version.",
		Columns:     []string{"Software", "Version", "CVEs", "Endpoints", "Highest CVSS", "CISA KEV CVEs", "Fixed In"},
		Source:      sql("vulnerable-software", "")},
	{Key: "compensating-controls", Title: "Compensating Controls", Category: catVulns,
		Description: "Compensating controls recorded for CVEs, whether still active, and how many endpoints have the CVE.",
		Columns:     []string{"CVE", "Control", "Active", "Expires", "Affected Endpoints", "Recorded By", "Recorded At"},
		Source:      collect(compensatingControls)},
	{Key: "moveit-vulnerability", Title: "MOVEit Transfer Vulnerability (CVE-2023-34362)", Category: catVulns,
		Description: "Endpoints with MOVEit Transfer, and whether CVE-2023-34362 (SQL injection, exploited by Cl0p) affects them.",
		Columns:     cols("Platform", "Software", "Version", "Fixed In", "Status", "First Detected"),
		Source:      sql("cve-status", "CVE-2023-34362", "moveit")},
	{Key: "webp-vulnerability", Title: "WebP Vulnerability (CVE-2023-4863)", Category: catVulns,
		Description: "Endpoints with software that bundles libwebp (browsers, Electron apps) and whether CVE-2023-4863 (heap overflow) affects them.",
		Columns:     cols("Platform", "Software", "Version", "Fixed In", "Status", "First Detected"),
		Source:      sql("cve-status", "CVE-2023-4863", "libwebp", "google chrome", "chromium", "firefox", "thunderbird", "microsoft edge", "brave", "opera", "vivaldi", "electron")},
	{Key: "cisa-kev", Title: "CISA Known Exploited Vulnerabilities", Category: catVulns,
		Description: "CVEs of the CISA KEV catalog present on the fleet, with vendor, product, due date and ransomware use.",
		Columns:     []string{"CVE", "Vendor", "Product", "Name", "CVSS", "Date Added", "Due Date", "Ransomware", "Affected Endpoints"},
		Source:      sql("cisa-kev", "")},
	{Key: "vulnerabilities-by-endpoint", Title: "Vulnerabilities by Endpoint", Category: catVulns,
		Description: "Every CVE found on every endpoint, with the software and version it was found in and the fixed version.",
		Columns:     cols("CVE", "Severity", "CVSS", "CISA KEV", "Software", "Version", "Fixed In", "First Detected", "Update Available"),
		Source:      sql("vuln-findings", "")},

	// Compliance
	{Key: "compliance", Title: "Compliance", Category: catCompliance,
		Description: "Per endpoint: missing critical updates, critical vulnerabilities, antivirus and disk encryption, and whether it complies.",
		Columns:     cols("Platform", "OS", "Missing Critical Updates", "Critical Vulnerabilities", "Antivirus", "Disk Encryption", "Compliant", "Issues"),
		Source:      collect(compliance)},
	{Key: "windows-hot-fixes", Title: "Windows Hot Fixes", Category: catUpdates,
		Description: "Hot fixes (KB) installed on Windows endpoints.",
		Columns:     cols("KB", "Update", "Type", "Installed At", "Installed By"),
		Source: dataset("installed-updates", "kb", "title", "type", "installedAt", "installedBy").only("windows").
			filter(func(row map[string]any) bool { return str(row, "kb") != "" }).source()},
	{Key: "cyber-essentials-email", Title: "Cyber Essentials: Email Clients", Category: catCompliance,
		Description: "Email clients on each endpoint and whether they are up to date (no missing update), as Cyber Essentials requires.",
		Columns:     cols("Application", "Version", "Publisher", "Available Version", "Up to Date"),
		Source:      sql("software-currency", "", emailClients...)},
	{Key: "cyber-essentials-office", Title: "Cyber Essentials: Office Suites", Category: catCompliance,
		Description: "Office suites on each endpoint and whether they are up to date (no missing update), as Cyber Essentials requires.",
		Columns:     cols("Application", "Version", "Publisher", "Available Version", "Up to Date"),
		Source:      sqlExcluding("software-currency", "", officeSuites, notOffice)},
	{Key: "cyber-essentials-web-browsers", Title: "Cyber Essentials: Web Browsers", Category: catCompliance,
		Description: "Web browsers on each endpoint and whether they are up to date (no missing update), as Cyber Essentials requires.",
		Columns:     cols("Application", "Version", "Publisher", "Available Version", "Up to Date"),
		Source:      sqlExcluding("software-currency", "", browsers, notBrowsers)},
	{Key: "ms-outlook-versions", Title: "Microsoft Outlook Versions", Category: catSoftware,
		Description: "Microsoft Outlook (standalone, Microsoft 365 Apps or Office) versions installed on each endpoint.",
		Columns:     cols("Application", "Version", "Publisher", "Install Date", "Installed For", "Install Type"),
		Source:      sql("software-by-endpoint", "", outlookVersion...)},
	{Key: "hw-manufacturers", Title: "Hardware Manufacturers", Category: catHardware,
		Description: "Endpoints counted by manufacturer and model, workstations and servers.",
		Columns:     []string{"Manufacturer", "Model", "Endpoints", "Workstations", "Servers"},
		Source:      sql("hw-manufacturers", "")},
	{Key: "logon-statistics", Title: "Logon Statistics", Category: catUsers,
		Description: "Per endpoint and user over the last 14 days: successful and failed logons, logon types and the last logon.",
		Columns:     cols("User", "Logons", "Failed Logons", "Logon Types", "Last Logon"),
		Source:      collect(logonStatistics)},
	{Key: "profiles-by-user", Title: "User Profiles by User", Category: catUsers,
		Description: "User profiles across the fleet, by user: on which endpoints each user has a profile, its size and last use.",
		Columns:     []string{"User", "Endpoint", "Endpoint ID", "Profile Path", "Size (MB)", "Last Used"},
		Source:      collect(profilesByUser)},
	{Key: "sd-card-usage", Title: "SD Card Usage", Category: catSecurity,
		Description: "SD card readers and cards attached to endpoints.",
		Columns:     cols("Device", "Manufacturer", "Vendor ID", "Product ID", "Serial Number"),
		Source: dataset("usb-devices", "name", "manufacturer", "vendorId", "productId", "serialNumber").
			filter(isSDCard).source()},
	{Key: "usb-disk-usage", Title: "USB Disk Usage", Category: catSecurity,
		Description: "USB mass-storage devices (flash drives, external disks) attached to endpoints.",
		Columns:     cols("Device", "Manufacturer", "Vendor ID", "Product ID", "Serial Number"),
		Source: dataset("usb-devices", "name", "manufacturer", "vendorId", "productId", "serialNumber").
			filter(func(row map[string]any) bool { return str(row, "deviceClass") == "Mass Storage" && !isSDCard(row) }).source()},
	{Key: "open-hidden-shares", Title: "Open Hidden Shares", Category: catSecurity,
		Description: "Hidden shares (names ending in $), administrative ones included, open on each endpoint.",
		Columns:     cols("Share", "Path", "Description", "Type"),
		Source: dataset("shared-folders", "name", "path", "description", "type").
			filter(func(row map[string]any) bool { return strings.HasSuffix(str(row, "name"), "$") }).source()},
	{Key: "local-time", Title: "Local Time", Category: catSystem,
		Description: "The local time now on each endpoint, from its time zone, with its UTC offset.",
		Columns:     cols("Time Zone", "IANA Name", "UTC Offset Now", "Local Time Now"),
		Source: dataset("time-zone", "timeZone", "ianaName").
			plus(func(row map[string]any, env Env) []any {
				return localTime(str(row, "ianaName"), str(row, "utcOffset"), env.Now)
			}).source()},
	{Key: "windows-event-logs", Title: "Event Log Summary", Category: catSystem,
		Description: "Problem events of the last 24 hours per log and level (Windows event logs, journal, unified log), with the top source.",
		Columns:     cols("Log", "Level", "Events", "Last Event", "Top Source"),
		Source:      dataset("event-log-summary", "log", "level", "count", "lastEventAt", "topSource").source()},
	{Key: "process-memory-stats", Title: "Process Memory Statistics", Category: catSystem,
		Description: "Running processes across the fleet by name: instances, endpoints, total, average and peak memory.",
		Columns:     []string{"Process", "Instances", "Endpoints", "Total Memory (MB)", "Average Memory (MB)", "Peak Memory (MB)"},
		Source:      collect(processMemory)},
	{Key: "disk-partitions", Title: "Disk Partitions", Category: catStorage,
		Description: "Partitions of each physical disk with type, size and whether bootable.",
		Columns:     cols("Disk", "Partition", "Type", "Size (GB)", "Bootable"),
		Source:      dataset("disk-partitions", "disk", "partition", "type", "sizeGB", "bootable").source()},
	{Key: "disks-without-bitlocker", Title: "Disks Without Encryption", Category: catSecurity,
		Description: "Fixed drives without BitLocker protection (Windows) and volumes without LUKS or FileVault (Linux, macOS).",
		Columns:     cols("Volume", "Encryption", "Status"),
		Source: chain(
			dataset("bitlocker", "drive").filter(func(row map[string]any) bool { return str(row, "protectionStatus") != "On" }).
				plus(func(row map[string]any, _ Env) []any {
					return []any{"BitLocker", "Protection " + strings.ToLower(str(row, "protectionStatus"))}
				}).source(),
			dataset("disk-encryption", "volume").filter(func(row map[string]any) bool { return row["encrypted"] != true }).
				plus(func(row map[string]any, _ Env) []any { return []any{row["method"], row["status"]} }).source())},
	{Key: "ntfs-disk-quotas", Title: "NTFS Disk Quotas", Category: catStorage,
		Description: "NTFS disk quota entries per volume and user: limit, warning level, space used and status.",
		Columns:     cols("Volume", "User", "Quota Limit (MB)", "Warning Level (MB)", "Used (MB)", "Status"),
		Source:      dataset("disk-quotas", "volume", "user", "limitMB", "warningMB", "usedMB", "status").source()},
	{Key: "all-critical-vulnerabilities", Title: "All Critical Vulnerabilities", Category: catVulns,
		Description: "Every critical CVE found on every endpoint, with the software it was found in and the fixed version.",
		Columns:     cols("CVE", "Severity", "CVSS", "CISA KEV", "Software", "Version", "Fixed In", "First Detected", "Update Available"),
		Source:      sql("vuln-findings", "critical")},
	{Key: "vulnerability-summary", Title: "Vulnerability Summary", Category: catVulns,
		Description: "CVEs, findings, affected endpoints and KEV-listed CVEs by severity.",
		Columns:     []string{"Severity", "CVEs", "Findings", "Affected Endpoints", "CISA KEV CVEs"},
		Source:      collect(vulnerabilitySummary)},
	{Key: "cve-2025-5480-status", Title: "CVE-2025-5480 Status", Category: catVulns,
		Description: "Endpoints with the Action1 agent, and whether CVE-2025-5480 (local privilege escalation) affects them.",
		Columns:     cols("Platform", "Software", "Version", "Fixed In", "Status", "First Detected"),
		Source:      sql("cve-status", "CVE-2025-5480", "action1")},
	// patchd addition: the days the server recorded (GET /api/v1/compliance/history).
	{Key: "compliance-history", Title: "Compliance History", Category: catCompliance,
		Description: "Day by day, as last recorded that day: endpoints fully patched, missing critical updates and missing only others; critical and overdue CVEs on the fleet.",
		Columns:     []string{"Date", "Endpoints", "Fully Patched", "Compliant %", "Missing Critical", "Missing Other", "Critical CVEs", "Overdue CVEs"},
		Source:      sql("compliance-days", "")},
	{Key: "compliance-by-group", Title: "Compliance by Group", Category: catCompliance,
		Description: "Per group with endpoints: its endpoints, those compliant under the organization's compliance policy (no update missing longer " +
			"than its severity allows, the severity derived from the CVEs it fixes, nor an update fixing a CISA KEV CVE longer " +
			"than the KEV deadline; declined updates do not count), the compliant percentage, those overdue, and those missing a critical update.",
		Columns: []string{"Group", "Group ID", "Endpoints", "Compliant", "Compliant (%)", "Overdue", "Missing Critical"},
		Source:  collect(complianceByGroup)},
}
