package collect

// Datasets and their columns (Linux; Windows and macOS fill the same names
// with the columns their sources have, listed in windows_parse.go and
// darwin_parse.go):
//
//	services               name, displayName, state, active, startMode (auto|manual|disabled|unknown)
//	processes              pid, name, user, memoryMB, cpuSeconds
//	network-adapters       name, mac, ipv4, ipv6 (comma-separated), mtu, state, speedMbps
//	routing-tables         interface, destination (CIDR), gateway, netmask, metric, up, family
//	local-users            name, uid, gid, fullName, home, shell, disabled, passwordLocked
//	local-groups           name, gid, members (comma-separated)
//	local-administrators   group, name, membership (uid 0 | member | primary group)
//	time-zone              timeZone, abbreviation, utcOffset (+hh:mm)
//	environment-variables  name, value (names that look like secrets are left out)
//	startup-items          name, type (systemd | cron @reboot | launchd), command, user
//	logical-disks          drive, device, fileSystem, sizeGB, freeGB, usedPercent
//	logged-on-users        user, line, from, since
//	os-information         name, prettyName, id, version, codename, kernel, arch, lastBootAt
//	firmware               biosVendor, biosVersion, biosDate, boardVendor, boardName
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
