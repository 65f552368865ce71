//go:build linux

package collect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/patchd/patchd/agentproto"
)

func collectPlatform(ctx context.Context, c *collector) {
	sys := &c.inv.System
	rel := parseOSRelease([]byte(readFirst("/etc/os-release", "/usr/lib/os-release")))
	distro := rel["ID"]
	sys.OS = str(osName(rel))
	sys.OSVersion = str(rel["VERSION_ID"])
	sys.OSBuild = str(readTrim("/proc/sys/kernel/osrelease"))
	sys.Type = linuxType()
	sys.TimeZone = str(linuxTimeZone())

	c.do("domain", func() error {
		sys.Domain = str(linuxDomain(ctx))
		return nil
	})
	c.do("dmi", func() error {
		const dmi = "/sys/class/dmi/id/"
		sys.Manufacturer = str(readTrim(dmi + "sys_vendor"))
		sys.Model = str(readTrim(dmi + "product_name"))
		sys.SerialNumber = str(readTrim(dmi + "product_serial")) // root only: null otherwise
		c.setDataset(agentproto.DatasetFirmware, []map[string]any{firmwareRow(readTrim(dmi+"bios_vendor"), readTrim(dmi+"bios_version"),
			firmwareDate(readTrim(dmi+"bios_date")), fileExists("/sys/firmware/efi"), linuxSecureBoot())})
		c.setDataset(datasetMotherboards, []map[string]any{{
			"manufacturer": readTrim(dmi + "board_vendor"), "product": readTrim(dmi + "board_name"),
			"serialNumber": nullIfEmpty(readTrim(dmi + "board_serial")), "version": readTrim(dmi + "board_version"),
		}})
		return nil
	})
	c.do("cpu", func() error {
		b, err := os.ReadFile("/proc/cpuinfo")
		if err != nil {
			return err
		}
		ci := parseCPUInfo(b)
		sys.CPU = str(ci.Model)
		if ci.Cores > 0 {
			sys.Cores = ptr(ci.Cores)
		}
		maxKHz, _ := strconv.Atoi(readTrim("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"))
		c.setDataset(datasetProcessors, processorRows(b, maxKHz/1000, runtime.GOARCH))
		return nil
	})
	c.do("memory", func() error {
		b, err := os.ReadFile("/proc/meminfo")
		if err != nil {
			return err
		}
		if total, ok := parseMemTotal(b); ok {
			sys.RAMGB = ptr(gib(total))
		}
		return nil
	})
	c.do("disks", func() error {
		b, err := os.ReadFile("/proc/mounts")
		if err != nil {
			return err
		}
		labels := deviceLabels()
		rows := []map[string]any{}
		for _, m := range parseMounts(b) {
			var st syscall.Statfs_t
			if err := syscall.Statfs(m.Path, &st); err != nil {
				c.log.Debug("statfs failed", "path", m.Path, "err", err)
				continue
			}
			size := st.Blocks * uint64(st.Bsize)
			free := st.Bavail * uint64(st.Bsize)
			c.inv.Disks = append(c.inv.Disks, agentproto.Disk{Drive: m.Path, SizeGB: ptr(gib(size)), FreeGB: ptr(gib(free))})
			rows = append(rows, logicalDiskRow(m.Path, linuxDriveType(m.Device), m.FSType, labels[m.Device], size, free))
		}
		c.setDataset(agentproto.DatasetLogicalDisks, rows)
		return nil
	})
	c.do("network", func() error {
		ads, err := adapters()
		if err != nil {
			return err
		}
		sys.MACAddresses = macAddresses(ads)
		routes, _ := os.ReadFile("/proc/net/route")
		gateways := defaultGateways(routes)
		resolv, _ := os.ReadFile("/etc/resolv.conf")
		dns := strings.Join(parseNameservers(resolv), ",")
		rows := []map[string]any{}
		for _, a := range ads {
			sp, _ := strconv.Atoi(readTrim("/sys/class/net/" + a.Name + "/speed"))
			desc := ""
			if drv, err := os.Readlink("/sys/class/net/" + a.Name + "/device/driver"); err == nil {
				desc = filepath.Base(drv)
			}
			rows = append(rows, adapterRow(a, desc, gateways[a.Name], dns, linuxDHCP(a.Name), sp))
		}
		c.setDataset(agentproto.DatasetNetworkAdapters, rows)
		return nil
	})
	c.do("routes", func() error {
		b, err := os.ReadFile("/proc/net/route")
		if err != nil {
			return err
		}
		c.setDataset(agentproto.DatasetRoutingTables, parseRoutes(b))
		return nil
	})
	c.do("software+updates", func() error { return linuxSoftwareAndUpdates(ctx, c, distro) })
	c.do("services", func() error {
		// list-unit-files reads the unit files and works even when systemd
		// is not running (a container); list-units needs the manager.
		files, err := run(ctx, commandTimeout, "systemctl", "list-unit-files", "--no-legend", "--no-pager")
		if errors.Is(err, exec.ErrNotFound) {
			// No systemd here (SysV init, OpenRC, a container): an
			// absence, not a failure.
			c.setDataset(agentproto.DatasetStartupItems, cronRebootRows())
			c.setDataset(agentproto.DatasetServices, nil)
			return errNotFound("systemctl (no systemd): services are listed from systemd only")
		}
		if err != nil {
			return err
		}
		fileStates := parseUnitFiles(files)
		c.setDataset(agentproto.DatasetStartupItems, append(enabledUnitRows(fileStates, unitFileInfo), cronRebootRows()...))
		account := func(unit string) string {
			if _, _, user := unitFileInfo(unit); user != "" {
				return user
			}
			return "root"
		}
		units, err := run(ctx, commandTimeout, "systemctl", "list-units", "--type=service", "--all", "--no-legend", "--plain", "--no-pager")
		if err != nil {
			c.setDataset(agentproto.DatasetServices, serviceRows(nil, fileStates, false, account))
			if !fileExists("/run/systemd/system") {
				// No systemd manager runs (a container): an absence, not a failure.
				return errNotFound("a running systemd manager: services listed without their state")
			}
			return fmt.Errorf("services listed without their state: %w", err)
		}
		c.setDataset(agentproto.DatasetServices, serviceRows(parseSystemctlUnits(units), fileStates, true, account))
		return nil
	})
	c.do("processes", func() error {
		rows, err := linuxProcesses()
		if err != nil {
			return err
		}
		c.setDataset(agentproto.DatasetProcesses, rows)
		return nil
	})
	c.do("accounts", func() error {
		pw, err := os.ReadFile("/etc/passwd")
		if err != nil {
			return err
		}
		gr, err := os.ReadFile("/etc/group")
		if err != nil {
			return err
		}
		shadow, _ := os.ReadFile("/etc/shadow") // root only
		users, groups := parsePasswd(pw), parseGroup(gr)
		c.setDataset(agentproto.DatasetLocalUsers, localUserRows(users, parseShadow(shadow), lastLogons(ctx)))
		grows := []map[string]any{}
		for _, g := range groups {
			grows = append(grows, map[string]any{"name": g.Name, "description": nil, "members": strings.Join(g.Members, ",")})
		}
		c.setDataset(datasetProfiles, profileRows(users))
		c.setDataset(agentproto.DatasetLocalGroups, grows)
		c.setDataset(agentproto.DatasetLocalAdministrators, localAdministratorRows(users, groups))
		return nil
	})
	c.do("sessions", func() error {
		out, err := run(ctx, commandTimeout, "who")
		if err != nil {
			return err
		}
		c.setDataset(agentproto.DatasetLoggedOnUsers, sessionRows(parseWho(out), time.Local))
		return nil
	})
	c.setDataset(agentproto.DatasetEnvironmentVariables, environmentRows(os.Environ()))
	c.setDataset(agentproto.DatasetTimeZone, []map[string]any{timeZoneRow(deref(sys.TimeZone), deref(sys.TimeZone), time.Now())})
	boot, _ := linuxBoot()
	name := rel["PRETTY_NAME"]
	if name == "" {
		name = osName(rel)
	}
	c.setDataset(agentproto.DatasetOSInformation, []map[string]any{{
		"name": name, "edition": nil, "version": rel["VERSION_ID"], "build": nil,
		"kernel": nullIfEmpty(deref(sys.OSBuild)), "architecture": sys.Arch,
		"installDate": nullIfEmpty(linuxInstallDate()), "lastBootAt": timeOrNil(boot), "locale": linuxLocale(),
	}})
	collectLinuxHardware(ctx, c)
	collectLinuxHistory(ctx, c)
}

func platformFacts(ctx context.Context, c *collector) Facts {
	var f Facts
	if boot, ok := linuxBoot(); ok {
		f.LastBootAt = &boot
	}
	if out, err := run(ctx, 5*time.Second, "who"); err == nil {
		f.User = str(consoleUser(parseWho(out)))
	}
	f.PendingReboot = linuxPendingReboot(ctx)
	return f
}

func platformIdentity(ctx context.Context, c *collector, id *Identity) error {
	id.MachineUID = firstMachineID(readTrim("/etc/machine-id"), readTrim("/var/lib/dbus/machine-id"))
	rel := parseOSRelease([]byte(readFirst("/etc/os-release", "/usr/lib/os-release")))
	id.OS, id.OSVersion = osName(rel), rel["VERSION_ID"]
	return nil
}

// firstMachineID is the first usable of the contents of /etc/machine-id
// and /var/lib/dbus/machine-id: systemd writes "uninitialized" into an
// image's file until the first boot completes, which is no id.
func firstMachineID(contents ...string) string {
	for _, s := range contents {
		if s != "" && s != "uninitialized" {
			return s
		}
	}
	return ""
}

// readFirst returns the trimmed content of the first readable file.
func readFirst(paths ...string) string {
	for _, p := range paths {
		if s := readTrim(p); s != "" {
			return s
		}
	}
	return ""
}

func linuxBoot() (time.Time, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	return parseBtime(b)
}

// linuxPendingReboot: Debian and Ubuntu flag /var/run/reboot-required;
// on RHEL and Fedora `needs-restarting -r` exits 1 when a reboot is due.
func linuxPendingReboot(ctx context.Context) bool {
	if fileExists("/var/run/reboot-required") || fileExists("/run/reboot-required") {
		return true
	}
	if _, err := exec.LookPath("needs-restarting"); err == nil {
		_, err := run(ctx, 15*time.Second, "needs-restarting", "-r")
		return exitCode(err) == 1
	}
	return false
}

// linuxType: a computer that boots to a graphical target or has desktop
// sessions installed is a workstation.
func linuxType() string {
	if t, err := os.Readlink("/etc/systemd/system/default.target"); err == nil && strings.Contains(t, "graphical") {
		return "workstation"
	}
	for _, d := range []string{"/usr/share/xsessions", "/usr/share/wayland-sessions"} {
		if ents, err := os.ReadDir(d); err == nil && len(ents) > 0 {
			return "workstation"
		}
	}
	return "server"
}

// linuxTimeZone reads the zone the way timedatectl does: the /etc/localtime
// link, then /etc/timezone.
func linuxTimeZone() string {
	if t, err := os.Readlink("/etc/localtime"); err == nil {
		if _, zone, ok := strings.Cut(t, "zoneinfo/"); ok {
			return zone
		}
	}
	if z := readTrim("/etc/timezone"); z != "" {
		return z
	}
	if z := os.Getenv("TZ"); z != "" {
		return strings.TrimPrefix(z, ":")
	}
	return ""
}

// linuxDomain: the realm joined with realmd/sssd, else the DNS domain of
// the host name, else the domain of resolv.conf.
func linuxDomain(ctx context.Context) string {
	if _, err := exec.LookPath("realm"); err == nil {
		if out, err := run(ctx, 5*time.Second, "realm", "list", "--name-only"); err == nil {
			if l := lines(out); len(l) > 0 && strings.TrimSpace(l[0]) != "" {
				return strings.TrimSpace(l[0])
			}
		}
	}
	if out, err := run(ctx, 5*time.Second, "hostname", "-d"); err == nil {
		if d := strings.TrimSpace(string(out)); d != "" && d != "(none)" && d != "localdomain" {
			return d
		}
	}
	if b, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		if d := parseResolvDomain(b); d != "." && d != "localdomain" {
			return d
		}
	}
	return ""
}

// linuxSoftwareAndUpdates reads the installed packages from dpkg or rpm and
// the missing updates from apt or dnf. It never refreshes the package lists
// (no apt-get update): it reports against what the system last fetched.
func linuxSoftwareAndUpdates(ctx context.Context, c *collector, distro string) error {
	var errs []error
	installed := map[string]string{}
	switch {
	case hasCommand("dpkg-query") && fileExists("/var/lib/dpkg/status"):
		out, err := run(ctx, commandTimeout, "dpkg-query", "-W", "-f", dpkgFormat)
		if err != nil {
			return err
		}
		pkgs := parseDpkgQuery(out)
		c.inv.Software = dpkgSoftware(pkgs, dpkgInstallDate)
		if hasCommand("apt") {
			out, err := run(ctx, 60*time.Second, "apt", "list", "--upgradable")
			if err != nil {
				errs = append(errs, err)
			} else {
				c.inv.Updates = parseAptUpgradable(out, distro)
			}
		}
	case hasCommand("rpm"):
		out, err := run(ctx, commandTimeout, "rpm", "-qa", "--queryformat", rpmFormat)
		if err != nil {
			return err
		}
		c.inv.Software = parseRPMQuery(out)
		for _, s := range c.inv.Software {
			installed[s.Name] = deref(s.Version)
			for _, arch := range []string{".x86_64", ".i686", ".aarch64", ".noarch", ".ppc64le", ".s390x"} {
				if base, ok := strings.CutSuffix(s.Name, arch); ok {
					installed[base] = deref(s.Version)
				}
			}
		}
		pm := "dnf"
		if !hasCommand(pm) {
			pm = "yum"
		}
		if hasCommand(pm) {
			// -C: use the cache only, like apt list: collection never
			// refreshes metadata.
			out, err := run(ctx, 120*time.Second, pm, "-q", "-C", "check-update")
			if err != nil && exitCode(err) != 100 {
				errs = append(errs, err)
			} else {
				info, ierr := run(ctx, 120*time.Second, pm, "-q", "-C", "updateinfo", "list", "--updates")
				if ierr != nil {
					c.log.Warn("updateinfo failed: updates listed without advisories", "err", ierr)
				}
				c.inv.Updates = dnfUpdates(parseDnfCheckUpdate(out), parseDnfUpdateinfo(info), installed, distro)
			}
		}
	default:
		return fmt.Errorf("neither dpkg nor rpm found")
	}
	c.inv.System.Antivirus = antivirusFromSoftware(c.inv.Software)
	return errors.Join(errs...)
}

func hasCommand(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// dpkgInstallDate is the modification time of the package's file list,
// written when the package was last installed or upgraded.
func dpkgInstallDate(binaryName, name string) string {
	for _, n := range []string{binaryName, name} {
		if fi, err := os.Stat("/var/lib/dpkg/info/" + n + ".list"); err == nil {
			return fi.ModTime().UTC().Format(time.DateOnly)
		}
	}
	return ""
}

// linuxProcesses reads every /proc/<pid>.
func linuxProcesses() ([]map[string]any, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	names := map[int]string{}
	if pw, err := os.ReadFile("/etc/passwd"); err == nil {
		for _, u := range parsePasswd(pw) {
			names[u.UID] = u.Name
		}
	}
	uptime := parseUptime([]byte(readTrim("/proc/uptime")))
	rows := []map[string]any{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		sb, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue // the process ended meanwhile
		}
		st, ok := parseProcStat(sb)
		if !ok {
			continue
		}
		status, _ := os.ReadFile(dir + "/status")
		uid, rss := parseProcStatus(status)
		user := names[uid]
		if user == "" && uid >= 0 {
			user = strconv.Itoa(uid)
		}
		exe, _ := os.Readlink(dir + "/exe") // other users' processes: root only
		rows = append(rows, processRow(st.Name, pid, user, float64(rss)/(1<<20), cpuPercent(st, uptime), exe))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i]["pid"].(int) < rows[j]["pid"].(int) })
	return rows, nil
}

// cronRebootRows reads @reboot jobs of the system and user crontabs.
func cronRebootRows() []map[string]any {
	rows := []map[string]any{}
	if b, err := os.ReadFile("/etc/crontab"); err == nil {
		rows = append(rows, parseCronReboot(b, true, "", "/etc/crontab")...)
	}
	if files, err := filepath.Glob("/etc/cron.d/*"); err == nil {
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil {
				rows = append(rows, parseCronReboot(b, true, "", f)...)
			}
		}
	}
	for _, dir := range []string{"/var/spool/cron/crontabs", "/var/spool/cron"} {
		files, _ := filepath.Glob(dir + "/*")
		for _, f := range files {
			if fi, err := os.Stat(f); err != nil || fi.IsDir() {
				continue
			}
			if b, err := os.ReadFile(f); err == nil {
				rows = append(rows, parseCronReboot(b, false, filepath.Base(f), f)...)
			}
		}
	}
	return rows
}
