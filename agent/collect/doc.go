package collect

// Datasets: every dataset uses the names and row keys of sim/DATASETS.md,
// the contract the report catalog reads (schema.go holds the table, a test
// holds it to that page, and finish() gives every row exactly those keys,
// null where a collector could not fill one). Where the values come from:
//
//	services               Linux: systemctl list-units + list-unit-files (startMode is the unit file state,
//	                       account the unit's User=, root without one); Windows: Win32_Service; macOS: launchctl list
//	processes              Linux: /proc/<pid> (cpuPercent = CPU time over the process's life, like ps %cpu;
//	                       path = /proc/<pid>/exe, other users' only as root); Windows: Get-Process; macOS: ps
//	network-adapters       net.Interfaces + /sys/class/net (speed, driver), default routes, resolv.conf, DHCP leases
//	routing-tables         /proc/net/route (routes that are up); Windows: Get-NetRoute (IPv4)
//	network-connections    Linux: /proc/net/tcp{,6} (ESTABLISHED, LISTEN), process from /proc/*/fd socket inodes
//	local-users            /etc/passwd (root, uid ≥ 1000), /etc/shadow (locked, last change), lastlog when installed
//	local-administrators   uid 0, sudo/wheel/admin groups (the group itself as type Group) — all source Local
//	logged-on-users        who (ssh when the session has a remote host); Windows: explorer.exe owners
//	profiles               Linux: existing home directories (size: a walk bounded to 100,000 files)
//	disk-partitions        Linux: /proc/partitions, /sys/class/block, the udev database (GPT type)
//	disk-volumes           Linux: partitions and device-mapper volumes holding a filesystem, with their mounts
//	disk-encryption        Linux: mounted volumes; LUKS when /sys/block/*/dm/uuid starts with CRYPT-LUKS
//	boot-configuration     Linux: top-level menuentry lines of grub.cfg, GRUB_DEFAULT
//	shared-folders         Linux: /etc/exports (NFS) and /etc/samba/smb.conf shares
//	printers               Linux: lpstat -v / -d when CUPS is installed (else empty, logged)
//	physical-memory        Linux: dmidecode -t 17 as root only; otherwise the dataset is not sent (logged)
//	firmware, motherboards /sys/class/dmi/id, /sys/firmware/efi (mode, SecureBoot variable)
//	processors             /proc/cpuinfo per socket, cpufreq max clock; Windows: Win32_Processor
//	os-information         os-release PRETTY_NAME, kernel, install date (installer log or lost+found), locale
//	logon-history          Linux: /var/log/wtmp (USER_PROCESS records) and btmp (failed, root only), or `wtmpdb last`,
//	                       14 days; ssh when the host is remote; Windows: Security 4624/4625, logon types 2, 10, 11;
//	                       macOS: `last` (console and remote logons, no failures)
//	event-log-summary      Linux: journalctl -o json, priority 0-4 of 24 h (auth/authpriv facility as log "auth");
//	                       Windows: Get-WinEvent System/Application levels 1-3, Security audit failures;
//	                       macOS: log show --style ndjson, error and fault messages. Fixed rows, zero counts included
//	installed-updates      Linux: dpkg.log upgrades (+ apt history.log for who), dnf.rpm.log, yum.log;
//	                       Windows: Get-HotFix merged with the Windows Update Agent history (patchd-agent → patchd);
//	                       macOS: InstallHistory.plist entries of softwareupdated / System Settings
//	monitors               Linux: /sys/class/drm connected connectors' EDID and preferred mode; Windows: WmiMonitorID
//	                       and the preferred source mode; macOS: SPDisplaysDataType
//	usb-devices            Linux: /sys/bus/usb/devices (class from the interfaces; names from usb.ids when the device
//	                       has no strings); Windows: Win32_PnPEntity USB\ devices; macOS: SPUSBDataType/SPUSBHostDataType
//	scsi-controllers       Linux: PCI devices of class 01 (mass storage), pci.ids names, the bound driver
//	sound-devices          Linux: /proc/asound (one row per HD Audio codec); Windows: Win32_SoundDevice; macOS: SPAudioDataType
//
// Windows also sends, from the inventory script: physical-memory
// (Win32_PhysicalMemory), motherboards (Win32_BaseBoard), scsi-controllers
// (PnP classes SCSIAdapter and HDC), printers (Win32_Printer),
// shared-folders (Win32_Share), windows-drivers (Win32_PnPSignedDriver),
// bitlocker (Get-BitLockerVolume, fixed drives; never the recovery
// password), disk-partitions (Get-Partition), disk-volumes (Get-Volume),
// network-connections (Get-NetTCPConnection), windows-update-settings (the
// WindowsUpdate policy keys, UX settings, Microsoft.Update.AutoUpdate),
// applied-gpo (RSoP logging data of the computer: RSOP_GPLink in applied
// order, RSOP_Session's time; empty off a domain) and disk-quotas
// (Win32_DiskQuota, only when a volume tracks quotas), profiles
// (Win32_UserProfile without the service profiles; sizeMB null: not
// measured).
//
// macOS also sends processors (sysctl), physical-memory (SPMemoryDataType;
// Apple silicon's unified memory as one module), printers (lpstat, as on
// Linux), disk-encryption (fdesetup status of the startup volume),
// local-groups (dscl -readall, without the "_" system groups), profiles
// (/Users folders, bounded walk as on Linux), routing-tables (netstat -rn,
// no metric), network-connections (lsof -F), shared-folders (sharing -l),
// disk-partitions and disk-volumes (diskutil list -plist: APFS volumes with
// their container's size and free space, the partition holding the root
// container bootable).
//
// A collector whose tool or file is missing sends an empty dataset (or, for
// physical-memory, none) and logs why.
//
// Missing updates:
//
//   - apt (`apt list --upgradable`, from the package lists the system last
//     fetched; the agent never runs apt-get update to collect): a candidate
//     from a -security suite is source "OS - Mandatory", severity
//     Important, category "Security Updates"; any other is "OS - Optional",
//     severity Unspecified (Debian and Ubuntu publish no severity, and
//     calling a plain bug fix "Moderate" would mislead severity filters),
//     category "Updates".
//   - dnf/yum (`check-update` and `updateinfo list`, from the cache): a
//     security advisory gives "OS - Mandatory" with the advisory's severity
//     (Important when it has none); anything else as for apt.
//   - Windows Update: the MSRC severity (Unspecified without one); an
//     update Windows would select by itself is "OS - Mandatory".
//   - winget: "Applications", Unspecified, with wingetId and versions.
//   - macOS softwareupdate: security responses "OS - Mandatory"/Important,
//     recommended macOS updates "OS - Mandatory", other macOS versions
//     "OS - Optional", Safari and tools "Applications"; productKey is the
//     label that `softwareupdate --install` takes.
//
// rebootRequired of a Linux package update is a heuristic: kernels and
// their modules, firmware and microcode, the C library and systemd.
