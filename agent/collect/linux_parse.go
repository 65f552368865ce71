package collect

// Parsers of Linux files and command output. They are platform-independent
// so that their tests run everywhere on captured samples in testdata/.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// lines splits text into trimmed-right lines.
func lines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		out = append(out, strings.TrimRight(sc.Text(), " \t\r"))
	}
	return out
}

// parseOSRelease reads os-release(5) KEY=value lines, unquoting values.
func parseOSRelease(b []byte) map[string]string {
	m := map[string]string{}
	for _, l := range lines(b) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
			v = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`").Replace(v)
		}
		m[k] = v
	}
	return m
}

// osName is the distribution name: NAME, or PRETTY_NAME without its
// version when NAME is missing.
func osName(rel map[string]string) string {
	if n := rel["NAME"]; n != "" {
		return n
	}
	p := rel["PRETTY_NAME"]
	if v := rel["VERSION"]; v != "" {
		p = strings.TrimSpace(strings.Replace(p, v, "", 1))
	}
	return p
}

// cpuInfo is what /proc/cpuinfo tells.
type cpuInfo struct {
	Model   string
	Cores   int // physical cores
	Threads int // logical processors
}

// parseCPUInfo reads /proc/cpuinfo. Cores counts distinct (physical id,
// core id) pairs; without them (ARM, some VMs) every processor counts.
func parseCPUInfo(b []byte) cpuInfo {
	var ci cpuInfo
	type core struct{ pkg, id string }
	cores := map[core]bool{}
	var pkg, id string
	flush := func() {
		if id != "" {
			cores[core{pkg, id}] = true
		}
		pkg, id = "", ""
	}
	eachCPUInfoField(b, func(k, v string) {
		switch k {
		case "processor":
			if _, err := strconv.Atoi(v); err == nil {
				ci.Threads++
			}
		case "model name", "cpu model", "Model":
			if ci.Model == "" {
				ci.Model = v
			}
		case "Hardware":
			if ci.Model == "" {
				ci.Model = v
			}
		case "physical id":
			pkg = v
		case "core id":
			id = v
		}
	}, flush)
	ci.Cores = len(cores)
	if ci.Cores == 0 {
		ci.Cores = ci.Threads
	}
	ci.Model = strings.Join(strings.Fields(ci.Model), " ")
	return ci
}

// eachCPUInfoField calls field with the key and value of each "key: value"
// line of /proc/cpuinfo, and end after each processor's block (a blank
// line) and at the end.
func eachCPUInfoField(b []byte, field func(k, v string), end func()) {
	for _, l := range lines(b) {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			if strings.TrimSpace(l) == "" {
				end()
			}
			continue
		}
		field(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	end()
}

// parseMemTotal returns MemTotal of /proc/meminfo in bytes.
func parseMemTotal(b []byte) (uint64, bool) {
	for _, l := range lines(b) {
		if !strings.HasPrefix(l, "MemTotal:") {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 2 {
			return 0, false
		}
		kb, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// mount is one line of /proc/mounts.
type mount struct {
	Device, Path, FSType string
}

// realFS lists the filesystem types reported as disks; overlay counts only
// when it is the root (a container's disk).
var realFS = map[string]bool{
	"ext2": true, "ext3": true, "ext4": true, "xfs": true, "btrfs": true, "vfat": true, "exfat": true,
	"ntfs": true, "ntfs3": true, "fuseblk": true, "zfs": true, "f2fs": true, "jfs": true, "reiserfs": true,
}

// parseMounts reads /proc/mounts and keeps real filesystems, one mount per
// device (the shortest path: bind mounts repeat the device).
func parseMounts(b []byte) []mount {
	byDev := map[string]mount{}
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		m := mount{Device: unescapeMount(f[0]), Path: unescapeMount(f[1]), FSType: f[2]}
		if !realFS[m.FSType] && !(m.FSType == "overlay" && m.Path == "/") {
			continue
		}
		key := m.Device
		if m.FSType == "zfs" || m.FSType == "btrfs" {
			key = m.Device + " " + m.Path // datasets and subvolumes share or repeat devices
		}
		if old, ok := byDev[key]; ok && len(old.Path) <= len(m.Path) {
			continue
		}
		byDev[key] = m
	}
	out := make([]mount, 0, len(byDev))
	for _, m := range byDev {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// unescapeMount decodes the octal escapes (\040 for a space) of /proc/mounts.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseBtime reads the boot time from /proc/stat.
func parseBtime(b []byte) (time.Time, bool) {
	for _, l := range lines(b) {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			return time.Unix(n, 0).UTC(), true
		}
	}
	return time.Time{}, false
}

// dpkgFormat is the dpkg-query -W format parseDpkgQuery reads.
const dpkgFormat = `${binary:Package}\t${Package}\t${Version}\t${Maintainer}\t${db:Status-Abbrev}\n`

// dpkgPackage is one installed Debian package.
type dpkgPackage struct {
	BinaryName string // name with :arch for Multi-Arch: same packages
	Name       string
	Version    string
	Maintainer string
}

// parseDpkgQuery reads dpkg-query output in dpkgFormat and keeps the
// packages whose status is installed.
func parseDpkgQuery(b []byte) []dpkgPackage {
	var out []dpkgPackage
	for _, l := range lines(b) {
		f := strings.Split(l, "\t")
		if len(f) < 5 {
			continue
		}
		status := strings.TrimSpace(f[4])
		if len(status) < 2 || status[1] != 'i' {
			continue
		}
		out = append(out, dpkgPackage{BinaryName: f[0], Name: f[1], Version: f[2], Maintainer: f[3]})
	}
	return out
}

// dpkgSoftware turns dpkg packages into software rows. installDate finds
// the install date of a package from its binary name ("" when unknown).
// A package installed for several architectures keeps its :arch suffix.
func dpkgSoftware(pkgs []dpkgPackage, installDate func(binaryName, name string) string) []agentproto.Software {
	count := map[string]int{}
	for _, p := range pkgs {
		count[p.Name]++
	}
	out := make([]agentproto.Software, 0, len(pkgs))
	for _, p := range pkgs {
		name := p.Name
		if count[p.Name] > 1 {
			name = p.BinaryName
		}
		out = append(out, agentproto.Software{
			Name:         name,
			Version:      str(p.Version),
			Publisher:    str(stripEmail(p.Maintainer)),
			InstallDate:  str(installDate(p.BinaryName, p.Name)),
			InstalledFor: ptr("all users"),
			InstallType:  ptr("deb"),
		})
	}
	return out
}

// stripEmail turns "Jane Doe <jane@example.org>" into "Jane Doe".
func stripEmail(s string) string {
	if i := strings.Index(s, "<"); i > 0 {
		return strings.TrimSpace(s[:i])
	}
	return strings.TrimSpace(s)
}

// rpmFormat is the rpm -qa --queryformat parseRPMQuery reads. The epoch
// is printed only when the package has one.
const rpmFormat = `%{NAME}\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\t%{VENDOR}\t%{INSTALLTIME}\t%{ARCH}\n`

// parseRPMQuery reads rpm -qa output in rpmFormat. GPG key pseudo-packages
// are skipped; a name installed for two architectures gets .arch appended.
func parseRPMQuery(b []byte) []agentproto.Software {
	type row struct {
		name, version, vendor, arch string
		installed                   int64
	}
	var rows []row
	count := map[string]int{}
	for _, l := range lines(b) {
		f := strings.Split(l, "\t")
		if len(f) < 5 || f[0] == "gpg-pubkey" || f[0] == "" {
			continue
		}
		r := row{name: f[0], version: f[1], vendor: f[2], arch: f[4]}
		if r.vendor == "(none)" {
			r.vendor = ""
		}
		r.installed, _ = strconv.ParseInt(strings.TrimSpace(f[3]), 10, 64)
		rows = append(rows, r)
		count[r.name]++
	}
	out := make([]agentproto.Software, 0, len(rows))
	for _, r := range rows {
		name := r.name
		if count[r.name] > 1 && r.arch != "" && r.arch != "(none)" {
			name += "." + r.arch
		}
		var date *string
		if r.installed > 0 {
			date = ptr(time.Unix(r.installed, 0).UTC().Format(time.DateOnly))
		}
		out = append(out, agentproto.Software{
			Name: name, Version: str(r.version), Publisher: str(r.vendor), InstallDate: date,
			InstalledFor: ptr("all users"), InstallType: ptr("rpm"),
		})
	}
	return out
}

// Severities of Linux updates. Debian and Ubuntu archives carry no
// severity: an update from a -security suite is Important, any other
// update Unspecified (like a Windows update without an MSRC rating).
const (
	severityLinuxSecurity = "Important"
	severityUnspecified   = "Unspecified"
)

// rebootPackage tells whether installing a new version of a package needs
// a restart of the computer to take effect: kernels, their modules, the
// microcode and firmware, the C library and systemd.
func rebootPackage(name string) bool {
	for _, p := range []string{"linux-image", "linux-modules", "linux-firmware", "firmware-", "kernel", "intel-microcode", "amd64-microcode", "microcode_ctl", "linux-signed", "linux-generic"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch name {
	case "libc6", "glibc", "systemd", "dbus", "dbus-broker":
		return true
	}
	return false
}

// linuxUpdate builds the Update row of a package update.
func linuxUpdate(pkg, installed, latest, distro string, security bool, severity string) agentproto.Update {
	u := agentproto.Update{
		Title:            pkg + " " + latest,
		PackageName:      ptr(pkg),
		InstalledVersion: str(installed),
		LatestVersion:    str(latest),
		Distro:           str(distro),
		RebootRequired:   rebootPackage(pkg),
		Source:           "OS - Optional",
		Categories:       []string{"Updates"},
		Severity:         ptr(severityUnspecified),
	}
	if security {
		u.Source = "OS - Mandatory"
		u.Categories = []string{"Security Updates"}
		if severity == "" {
			severity = severityLinuxSecurity
		}
		u.Severity = ptr(severity)
	}
	return u
}

// parseAptUpgradable reads `apt list --upgradable`:
//
//	bash/oldstable 5.2.15-2+b13 amd64 [upgradable from: 5.2.15-2+b8]
//	apt/oldstable-security 2.6.2 amd64 [upgradable from: 2.6.1]
//
// An update whose suites include one ending in -security is a security
// update.
func parseAptUpgradable(b []byte, distro string) []agentproto.Update {
	var out []agentproto.Update
	seen := map[string]bool{}
	for _, l := range lines(b) {
		slash := strings.IndexByte(l, '/')
		open := strings.Index(l, "[upgradable from: ")
		if slash <= 0 || open < 0 {
			continue
		}
		pkg := l[:slash]
		f := strings.Fields(l[slash+1 : open])
		if len(f) < 2 {
			continue
		}
		suites, latest := f[0], f[1]
		installed := strings.TrimSuffix(strings.TrimSpace(l[open+len("[upgradable from: "):]), "]")
		security := false
		for _, s := range strings.Split(suites, ",") {
			if strings.HasSuffix(s, "-security") || strings.Contains(s, "-security-") {
				security = true
			}
		}
		if seen[pkg] {
			continue
		}
		seen[pkg] = true
		out = append(out, linuxUpdate(pkg, installed, latest, distro, security, ""))
	}
	return out
}

// dnfAvailable is one line of `dnf check-update`.
type dnfAvailable struct {
	Name, Arch, Version, Repo string
}

// parseDnfCheckUpdate reads `dnf -q check-update` (exit code 100 when
// updates exist). Long names wrap the rest of the row onto the next line;
// the "Obsoleting Packages" section ends the list.
func parseDnfCheckUpdate(b []byte) []dnfAvailable {
	var out []dnfAvailable
	var pending []string
	for _, l := range lines(b) {
		if strings.HasPrefix(l, "Obsoleting Packages") || strings.HasPrefix(l, "Security:") {
			break
		}
		if strings.HasPrefix(l, "Last metadata expiration") || strings.TrimSpace(l) == "" {
			continue
		}
		f := append(pending, strings.Fields(l)...)
		if len(f) < 3 {
			pending = f
			continue
		}
		pending = nil
		na := f[0]
		dot := strings.LastIndexByte(na, '.')
		if dot <= 0 {
			continue
		}
		out = append(out, dnfAvailable{Name: na[:dot], Arch: na[dot+1:], Version: f[1], Repo: f[2]})
	}
	return out
}

// advisory tells what updateinfo says about one package update.
type advisory struct {
	ID       string
	Security bool
	Severity string
}

// parseDnfUpdateinfo reads `dnf updateinfo list` in the dnf 4 layout
//
//	RHSA-2024:3501 Important/Sec. openssl-libs-1:3.0.7-27.el9.x86_64
//	RHBA-2024:3519 bugfix         tzdata-2024a-2.el9.noarch
//
// and the dnf 5 layout (Name Type Severity Package Issued columns), and
// returns the advisory of each package name (the most severe one).
func parseDnfUpdateinfo(b []byte) map[string]advisory {
	out := map[string]advisory{}
	rank := map[string]int{"": 0, "None": 0, "Low": 1, "Moderate": 2, "Important": 3, "Critical": 4}
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) < 3 || f[0] == "Name" || strings.HasPrefix(l, "Last metadata") {
			continue
		}
		var a advisory
		var nevra string
		a.ID = f[0]
		switch {
		case strings.HasSuffix(f[1], "/Sec."): // dnf 4 security
			a.Security = true
			a.Severity = strings.TrimSuffix(f[1], "/Sec.")
			nevra = f[2]
		case f[1] == "security" && len(f) >= 4: // dnf 5
			a.Security = true
			a.Severity = f[2]
			nevra = f[3]
		case f[1] == "bugfix" || f[1] == "enhancement" || f[1] == "newpackage" || f[1] == "unknown":
			nevra = f[2]
			if len(f) >= 4 && rank[f[2]] >= 0 && strings.Count(f[3], "-") >= 2 {
				nevra = f[3] // dnf 5 rows carry a severity column
			}
		default:
			continue
		}
		if a.Severity == "None" {
			a.Severity = ""
		}
		name := nevraName(nevra)
		if name == "" {
			continue
		}
		if old, ok := out[name]; ok {
			if old.Security && !a.Security || rank[old.Severity] >= rank[a.Severity] && old.Security == a.Security {
				continue
			}
		}
		out[name] = a
	}
	return out
}

// nevraName returns the name of name-[epoch:]version-release.arch.
func nevraName(nevra string) string {
	i := strings.LastIndexByte(nevra, '-')
	if i <= 0 {
		return ""
	}
	j := strings.LastIndexByte(nevra[:i], '-')
	if j <= 0 {
		return ""
	}
	return nevra[:j]
}

// dnfUpdates joins check-update rows with the advisories and the installed
// versions (name → version).
func dnfUpdates(avail []dnfAvailable, adv map[string]advisory, installed map[string]string, distro string) []agentproto.Update {
	var out []agentproto.Update
	seen := map[string]bool{}
	for _, a := range avail {
		if seen[a.Name] {
			continue
		}
		seen[a.Name] = true
		ad := adv[a.Name]
		u := linuxUpdate(a.Name, installed[a.Name], a.Version, distro, ad.Security, ad.Severity)
		if ad.ID != "" && !ad.Security {
			u.Categories = []string{"Updates"}
		}
		out = append(out, u)
	}
	return out
}

// passwdEntry is one line of /etc/passwd.
type passwdEntry struct {
	Name        string
	UID, GID    int
	Gecos       string
	Home, Shell string
}

func parsePasswd(b []byte) []passwdEntry {
	var out []passwdEntry
	for _, l := range lines(b) {
		f := strings.Split(l, ":")
		if len(f) < 7 || strings.HasPrefix(l, "#") {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, passwdEntry{Name: f[0], UID: uid, GID: gid, Gecos: f[4], Home: f[5], Shell: f[6]})
	}
	return out
}

// groupEntry is one line of /etc/group.
type groupEntry struct {
	Name    string
	GID     int
	Members []string
}

func parseGroup(b []byte) []groupEntry {
	var out []groupEntry
	for _, l := range lines(b) {
		f := strings.Split(l, ":")
		if len(f) < 4 || strings.HasPrefix(l, "#") {
			continue
		}
		gid, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		g := groupEntry{Name: f[0], GID: gid, Members: []string{}}
		for _, m := range strings.Split(f[3], ",") {
			if m = strings.TrimSpace(m); m != "" {
				g.Members = append(g.Members, m)
			}
		}
		out = append(out, g)
	}
	return out
}

// shadowEntry is what the agent reads of one /etc/shadow line.
type shadowEntry struct {
	Locked bool
	// Changed is the day of the last password change (zero if unknown).
	Changed time.Time
}

// parseShadow reads /etc/shadow: a password field starting with ! or * is
// locked; the third field counts days since 1970-01-01.
func parseShadow(b []byte) map[string]shadowEntry {
	out := map[string]shadowEntry{}
	for _, l := range lines(b) {
		f := strings.Split(l, ":")
		if len(f) < 2 {
			continue
		}
		e := shadowEntry{Locked: strings.HasPrefix(f[1], "!") || strings.HasPrefix(f[1], "*")}
		if len(f) > 2 {
			if days, err := strconv.Atoi(f[2]); err == nil && days > 0 {
				e.Changed = time.Unix(int64(days)*86400, 0).UTC()
			}
		}
		out[f[0]] = e
	}
	return out
}

// localUserRows lists root and the regular users (uid ≥ 1000, not nobody).
// A user is enabled unless its shell refuses logins or its password is
// locked; lastLogonAt comes from lastLogon (name → time), when known.
func localUserRows(users []passwdEntry, shadow map[string]shadowEntry, lastLogon map[string]time.Time) []map[string]any {
	rows := []map[string]any{}
	for _, u := range users {
		if u.UID != 0 && (u.UID < 1000 || u.UID == 65534) {
			continue
		}
		full, rest, _ := strings.Cut(u.Gecos, ",")
		nologin := strings.HasSuffix(u.Shell, "/nologin") || strings.HasSuffix(u.Shell, "/false")
		sh := shadow[u.Name]
		rows = append(rows, map[string]any{
			"name": u.Name, "fullName": nullIfEmpty(full), "enabled": !nologin && !sh.Locked,
			"lastLogonAt": timeOrNil(lastLogon[u.Name]), "passwordLastSetAt": timeOrNil(sh.Changed),
			"description": nullIfEmpty(strings.Trim(rest, ",")),
		})
	}
	return rows
}

// adminGroups are the groups whose members may become root with sudo.
var adminGroups = []string{"sudo", "wheel", "admin"}

// localAdministratorRows lists the accounts that may act as root: uid 0,
// the members (explicit or by primary group) of the administrator groups,
// and those groups themselves (type Group). Every one is Local: a domain
// account given sudo through sssd shows as a member name like any other.
func localAdministratorRows(users []passwdEntry, groups []groupEntry) []map[string]any {
	rows := []map[string]any{}
	seen := map[string]bool{}
	add := func(account, typ string) {
		if seen[typ+"\x00"+account] {
			return
		}
		seen[typ+"\x00"+account] = true
		rows = append(rows, adminRow(account, typ, "Local"))
	}
	for _, u := range users {
		if u.UID == 0 {
			add(u.Name, "User")
		}
	}
	for _, g := range groups {
		admin := false
		for _, a := range adminGroups {
			admin = admin || g.Name == a
		}
		if !admin {
			continue
		}
		add(g.Name, "Group")
		for _, m := range g.Members {
			add(m, "User")
		}
		for _, u := range users {
			if u.GID == g.GID {
				add(u.Name, "User")
			}
		}
	}
	return rows
}

// systemdUnit is one row of systemctl list-units.
type systemdUnit struct {
	Name, Load, Active, Sub, Description string
}

// parseSystemctlUnits reads `systemctl list-units --type=service --all
// --no-legend --plain`: UNIT LOAD ACTIVE SUB DESCRIPTION. A leading bullet
// (● for failed units, without --plain) is dropped.
func parseSystemctlUnits(b []byte) []systemdUnit {
	var out []systemdUnit
	for _, l := range lines(b) {
		l = strings.TrimLeft(strings.TrimSpace(l), "●*× ")
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		u := systemdUnit{Name: f[0], Load: f[1], Active: f[2], Sub: f[3]}
		if len(f) > 4 {
			u.Description = strings.Join(f[4:], " ")
		}
		out = append(out, u)
	}
	return out
}

// parseUnitFiles reads `systemctl list-unit-files --no-legend`: UNIT STATE
// [PRESET] into unit → state.
func parseUnitFiles(b []byte) map[string]string {
	out := map[string]string{}
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) >= 2 {
			out[f[0]] = f[1]
		}
	}
	return out
}

// startMode is the unit file state (enabled, static, disabled…), as
// DATASETS.md asks for systemd; "unknown" without a unit file.
func startMode(state string) string {
	if state == "" {
		return "unknown"
	}
	return state
}

// serviceState maps the sub-state of a service unit to running, stopped
// or waiting (a unit started by a timer or a socket that is not active).
func serviceState(active, sub string) string {
	switch {
	case sub == "running" || active == "active" || active == "reloading":
		return "running"
	case sub == "waiting" || sub == "listening":
		return "waiting"
	}
	return "stopped"
}

// serviceRows joins units and unit files. Unit files with no loaded unit
// are listed as stopped, or as unknown when the units could not be listed
// (stateKnown false); templates (name@.service) are left out. account
// tells the account a unit runs as ("root" when its file sets none).
func serviceRows(units []systemdUnit, files map[string]string, stateKnown bool, account func(unit string) string) []map[string]any {
	rows := []map[string]any{}
	seen := map[string]bool{}
	for _, u := range units {
		if u.Load == "not-found" {
			continue
		}
		seen[u.Name] = true
		rows = append(rows, serviceRow(strings.TrimSuffix(u.Name, ".service"), u.Description,
			serviceState(u.Active, u.Sub), startMode(files[u.Name]), account(u.Name)))
	}
	for name, st := range files {
		if seen[name] || !strings.HasSuffix(name, ".service") || strings.Contains(name, "@.") {
			continue
		}
		state := "stopped"
		if !stateKnown {
			state = "unknown"
		}
		rows = append(rows, serviceRow(strings.TrimSuffix(name, ".service"), "", state, startMode(st), account(name)))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i]["name"].(string) < rows[j]["name"].(string) })
	return rows
}

// whoEntry is one session of `who`.
type whoEntry struct {
	User, Line, Host string
	Since            string
}

// parseWho reads `who` output: user line date time [(host)].
func parseWho(b []byte) []whoEntry {
	var out []whoEntry
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		e := whoEntry{User: f[0], Line: f[1], Since: f[2] + " " + f[3]}
		if last := f[len(f)-1]; strings.HasPrefix(last, "(") && strings.HasSuffix(last, ")") {
			e.Host = strings.Trim(last, "()")
		}
		out = append(out, e)
	}
	return out
}

// sessionRows turns who entries into logged-on-users rows: a session
// from a remote host is ssh, any other console. who prints local times.
func sessionRows(sessions []whoEntry, loc *time.Location) []map[string]any {
	rows := []map[string]any{}
	for _, s := range sessions {
		typ, client := "console", ""
		if s.Host != "" && !strings.HasPrefix(s.Host, ":") {
			typ, client = "ssh", s.Host
		}
		at, _ := time.ParseInLocation("2006-01-02 15:04", s.Since, loc)
		rows = append(rows, sessionRow(s.User, typ, at, client))
	}
	return rows
}

// consoleUser picks the user of a graphical or console session first,
// else the first session's user.
func consoleUser(sessions []whoEntry) string {
	for _, s := range sessions {
		if strings.HasPrefix(s.Line, ":") || strings.HasPrefix(s.Line, "tty") || strings.HasPrefix(s.Host, ":") {
			return s.User
		}
	}
	if len(sessions) > 0 {
		return sessions[0].User
	}
	return ""
}

// parseRoutes reads the routes that are up of /proc/net/route (IPv4,
// addresses in little-endian hex).
func parseRoutes(b []byte) []map[string]any {
	rows := []map[string]any{}
	for i, l := range lines(b) {
		f := strings.Fields(l)
		if i == 0 || len(f) < 8 {
			continue
		}
		dst, gw, mask := hexIPv4(f[1]), hexIPv4(f[2]), hexIPv4(f[7])
		if dst == "" || gw == "" || mask == "" {
			continue
		}
		flags, _ := strconv.ParseUint(f[3], 16, 32)
		if flags&1 == 0 { // RTF_UP
			continue
		}
		metric, _ := strconv.Atoi(f[6])
		rows = append(rows, map[string]any{
			"destination": dst, "netmask": mask, "gateway": gw, "interface": f[0], "metric": metric,
		})
	}
	return rows
}

func hexIPv4(h string) string {
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw) != 4 {
		return ""
	}
	var ip [4]byte
	binary.LittleEndian.PutUint32(ip[:], binary.BigEndian.Uint32(raw))
	return net.IP(ip[:]).String()
}

// parseCronReboot finds @reboot entries of a crontab. System crontabs
// (/etc/crontab, /etc/cron.d) carry a user column; user crontabs do not.
// location is the crontab's path.
func parseCronReboot(b []byte, systemTab bool, owner, location string) []map[string]any {
	rows := []map[string]any{}
	for _, l := range lines(b) {
		l = strings.TrimSpace(l)
		rest, ok := strings.CutPrefix(l, "@reboot")
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		user := owner
		if systemTab {
			u, cmd, _ := strings.Cut(rest, " ")
			user, rest = u, strings.TrimSpace(cmd)
		}
		if user == "" {
			user = "root"
		}
		rows = append(rows, startupRow(rest, rest, location, user))
	}
	return rows
}

// parseResolvDomain returns the domain of resolv.conf: the domain line, or
// the first search domain.
func parseResolvDomain(b []byte) string {
	var search string
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "domain":
			return f[1]
		case "search":
			if search == "" {
				search = f[1]
			}
		}
	}
	return search
}

// procStat holds what the agent reads from /proc/<pid>/stat.
type procStat struct {
	Name       string
	UTime      uint64 // clock ticks
	STime      uint64
	StartTicks uint64
}

// parseProcStat reads /proc/<pid>/stat; the command name sits in
// parentheses and may itself hold spaces and parentheses.
func parseProcStat(b []byte) (procStat, bool) {
	s := string(b)
	open := strings.IndexByte(s, '(')
	closing := strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return procStat{}, false
	}
	f := strings.Fields(s[closing+1:])
	// after the name: state(0) ppid(1) … utime(11) stime(12) … starttime(19)
	if len(f) < 20 {
		return procStat{}, false
	}
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return procStat{Name: s[open+1 : closing], UTime: ut, STime: st, StartTicks: start}, true
}

// parseProcStatus reads the real uid and VmRSS (bytes) of /proc/<pid>/status.
func parseProcStatus(b []byte) (uid int, rss uint64) {
	uid = -1
	for _, l := range lines(b) {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		switch k {
		case "Uid":
			if len(f) > 0 {
				uid, _ = strconv.Atoi(f[0])
			}
		case "VmRSS":
			if len(f) > 0 {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				rss = kb * 1024
			}
		}
	}
	return uid, rss
}

// enabledUnitRows lists the services and timers that start at boot.
// unitInfo finds a unit's file, command and account ("" when unknown).
func enabledUnitRows(files map[string]string, unitInfo func(unit string) (path, command, user string)) []map[string]any {
	rows := []map[string]any{}
	for name, st := range files {
		if st != "enabled" || strings.Contains(name, "@.") || !(strings.HasSuffix(name, ".service") || strings.HasSuffix(name, ".timer")) {
			continue
		}
		path, command, user := unitInfo(name)
		if path == "" {
			path = "systemd"
		}
		if command == "" {
			command = "systemctl start " + name
		}
		if user == "" {
			user = "root"
		}
		rows = append(rows, startupRow(name, command, path, user))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i]["name"].(string) < rows[j]["name"].(string) })
	return rows
}

// parseUnitFile reads the command (the first ExecStart, without its
// prefixes) and the account (User=) of a systemd unit file.
func parseUnitFile(b []byte) (command, user string) {
	for _, l := range lines(b) {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok && command == "" {
			command = strings.TrimLeft(strings.TrimSpace(v), "-@:+!")
		}
		if v, ok := strings.CutPrefix(l, "User="); ok {
			user = strings.TrimSpace(v)
		}
	}
	return command, user
}
