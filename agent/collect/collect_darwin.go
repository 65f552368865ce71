//go:build darwin

package collect

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/patchd/patchd/agentproto"
)

func collectPlatform(ctx context.Context, c *collector) {
	sys := &c.inv.System
	sys.Type = "workstation"
	sys.TimeZone = str(darwinTimeZone())
	c.do("system_profiler", func() error {
		// SPApplicationsDataType walks every application bundle: allow it
		// time on a machine with many of them.
		out, err := run(ctx, 3*time.Minute, "system_profiler", "-json", "SPHardwareDataType", "SPSoftwareDataType", "SPApplicationsDataType")
		if err != nil {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return parseSystemProfiler(out, &c.inv)
	})
	c.do("softwareupdate", func() error {
		// softwareupdate asks Apple's catalog; it prints "No new software
		// available." on standard error and exits 0 when there is none.
		out, err := run(ctx, 5*time.Minute, "softwareupdate", "--list")
		if err != nil {
			return err
		}
		c.inv.Updates = macUpdates(parseSoftwareUpdateList(out))
		return nil
	})
	c.do("domain", func() error {
		out, err := run(ctx, 10*time.Second, "dsconfigad", "-show")
		if err == nil {
			for _, l := range lines(out) {
				if k, v, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == "Active Directory Domain" {
					sys.Domain = str(v)
				}
			}
		}
		return nil
	})
	c.do("disks", func() error {
		n, err := syscall.Getfsstat(nil, 2 /* MNT_NOWAIT */)
		if err != nil {
			return err
		}
		buf := make([]syscall.Statfs_t, n)
		n, err = syscall.Getfsstat(buf, 2)
		if err != nil {
			return err
		}
		rows := []map[string]any{}
		for _, st := range buf[:n] {
			path, fsType, dev := cString(st.Mntonname[:]), cString(st.Fstypename[:]), cString(st.Mntfromname[:])
			switch fsType {
			case "apfs", "hfs", "exfat", "msdos", "ntfs", "ufs":
			default:
				continue
			}
			if path != "/" && !strings.HasPrefix(path, "/Volumes/") {
				continue // the system's own APFS volumes share the container of /
			}
			size, free := st.Blocks*uint64(st.Bsize), st.Bavail*uint64(st.Bsize)
			c.inv.Disks = append(c.inv.Disks, agentproto.Disk{Drive: path, SizeGB: ptr(gib(size)), FreeGB: ptr(gib(free))})
			typ := "Local Disk"
			if path != "/" && !strings.HasPrefix(dev, "/dev/disk1") && !strings.HasPrefix(dev, "/dev/disk3") {
				typ = "Removable Disk" // an external or attached volume under /Volumes
			}
			rows = append(rows, logicalDiskRow(path, typ, fsType, filepath.Base(path), size, free))
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
		gateways := map[string]string{}
		if out, err := run(ctx, commandTimeout, "route", "-n", "get", "default"); err == nil {
			gw, ifc := parseRouteGet(out)
			gateways[ifc] = gw
		}
		resolv, _ := os.ReadFile("/etc/resolv.conf")
		dns := strings.Join(parseNameservers(resolv), ",")
		rows := []map[string]any{}
		for _, a := range ads {
			rows = append(rows, adapterRow(a, "", gateways[a.Name], dns, true, 0))
		}
		c.setDataset(agentproto.DatasetNetworkAdapters, rows)
		return nil
	})
	c.do("processes", func() error {
		out, err := run(ctx, commandTimeout, "ps", psArgs...)
		if err != nil {
			return err
		}
		c.setDataset(agentproto.DatasetProcesses, parsePS(out))
		return nil
	})
	c.do("services", func() error {
		out, err := run(ctx, commandTimeout, "launchctl", "list")
		if err != nil {
			return err
		}
		c.setDataset(agentproto.DatasetServices, parseLaunchctlList(out))
		return nil
	})
	c.do("accounts", func() error {
		out, err := run(ctx, commandTimeout, "dscl", ".", "-list", "/Users", "UniqueID")
		if err != nil {
			return err
		}
		uids := parseDsclUIDs(out)
		users := []map[string]any{}
		for name, uid := range uids {
			if uid == 0 || (uid >= 500 && !strings.HasPrefix(name, "_")) {
				// dscl -list tells no more; a disabled account shows in
				// AuthenticationAuthority, which is not read here.
				users = append(users, map[string]any{"name": name, "fullName": nil, "enabled": true, "lastLogonAt": nil,
					"passwordLastSetAt": nil, "description": nil})
			}
		}
		sort.Slice(users, func(i, j int) bool { return users[i]["name"].(string) < users[j]["name"].(string) })
		c.setDataset(agentproto.DatasetLocalUsers, users)
		admins := []map[string]any{}
		if out, err := run(ctx, commandTimeout, "dscl", ".", "-read", "/Groups/admin", "GroupMembership"); err == nil {
			for _, m := range parseDsclMembers(out) {
				admins = append(admins, adminRow(m, "User", "Local"))
			}
		}
		c.setDataset(agentproto.DatasetLocalAdministrators, admins)
		return nil
	})
	c.do("sessions", func() error {
		out, err := run(ctx, commandTimeout, "who")
		if err != nil {
			return err
		}
		c.setDataset(agentproto.DatasetLoggedOnUsers, darwinSessionRows(parseWho(out), time.Now()))
		return nil
	})
	c.do("startup", func() error {
		rows := []map[string]any{}
		for _, dir := range []string{"/Library/LaunchDaemons", "/Library/LaunchAgents"} {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".plist") {
					rows = append(rows, startupRow(strings.TrimSuffix(e.Name(), ".plist"), "launchd", dir+"/"+e.Name(), "all users"))
				}
			}
		}
		c.setDataset(agentproto.DatasetStartupItems, rows)
		return nil
	})
	c.do("devices", func() error {
		// SPUSBHostDataType replaced SPUSBDataType in macOS 26; an older
		// system_profiler leaves out the type it does not know.
		out, err := run(ctx, 2*time.Minute, "system_profiler", "-json", "SPUSBDataType", "SPUSBHostDataType", "SPAudioDataType", "SPDisplaysDataType", "SPMemoryDataType")
		if err != nil && len(out) == 0 {
			return err
		}
		monitors, usb, sound, err := parseSystemProfilerDevices(out)
		if err != nil {
			return err
		}
		c.setDataset(datasetMonitors, monitors)
		c.setDataset(datasetUSBDevices, usb)
		c.setDataset(datasetSoundDevices, sound)
		memory, err := parseSPMemory(out)
		if err != nil {
			return err
		}
		c.setDataset(datasetPhysicalMemory, memory)
		return nil
	})
	c.do("processors", func() error {
		// Each name sysctl does not know (hw.cpufrequency_max on Apple
		// silicon) makes it exit non-zero after printing the others.
		out, err := run(ctx, commandTimeout, "sysctl", "machdep.cpu.brand_string", "machdep.cpu.vendor", "hw.physicalcpu", "hw.logicalcpu", "hw.cpufrequency_max")
		s := parseSysctl(out)
		if s["machdep.cpu.brand_string"] == "" {
			return err
		}
		c.setDataset(datasetProcessors, []map[string]any{macProcessorRow(s, runtime.GOARCH)})
		return nil
	})
	c.do("printers", func() error {
		devices, err := run(ctx, commandTimeout, "lpstat", "-v")
		if err != nil && len(devices) == 0 {
			// lpstat exits 1 without printers ("No destinations added.").
			c.setDataset(datasetPrinters, nil)
			return nil
		}
		def, _ := run(ctx, commandTimeout, "lpstat", "-d")
		c.setDataset(datasetPrinters, parseLpstat(devices, def))
		return nil
	})
	c.do("disk-encryption", func() error {
		out, err := run(ctx, commandTimeout, "fdesetup", "status")
		if err != nil {
			c.setDataset(datasetDiskEncryption, nil)
			return err
		}
		c.setDataset(datasetDiskEncryption, []map[string]any{fileVaultRow(out)})
		return nil
	})
	c.do("local-groups", func() error {
		out, err := run(ctx, commandTimeout, "dscl", ".", "-readall", "/Groups", "RecordName", "RealName", "GroupMembership")
		if err != nil {
			return err
		}
		c.setDataset(agentproto.DatasetLocalGroups, macGroupRows(parseDsclReadall(out)))
		return nil
	})
	c.do("profiles", func() error {
		ents, err := os.ReadDir("/Users")
		if err != nil {
			return err
		}
		rows := []map[string]any{}
		for _, e := range ents {
			if !e.IsDir() || e.Name() == "Shared" || e.Name() == "Guest" || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			dir := "/Users/" + e.Name()
			fi, err := e.Info()
			if err != nil {
				continue
			}
			size, last := dirUsage(dir, 100000)
			if last.Before(fi.ModTime()) {
				last = fi.ModTime()
			}
			rows = append(rows, map[string]any{"user": e.Name(), "path": dir, "sizeMB": int(size >> 20), "lastUsedAt": last.UTC().Format(time.RFC3339)})
		}
		c.setDataset(datasetProfiles, rows)
		return nil
	})
	c.do("routing-tables", func() error {
		out, err := run(ctx, commandTimeout, "netstat", "-rn", "-f", "inet")
		if err != nil {
			return err
		}
		c.setDataset(agentproto.DatasetRoutingTables, parseNetstatRoutes(out))
		return nil
	})
	c.do("network-connections", func() error {
		// +c 0: the whole command name, not its first nine characters.
		out, err := run(ctx, commandTimeout, "lsof", "+c", "0", "-nP", "-iTCP", "-sTCP:ESTABLISHED,LISTEN", "-F", "pcnT")
		if err != nil && len(out) == 0 && exitCode(err) != 1 {
			return err
		}
		c.setDataset(datasetNetworkConnections, parseLsofTCP(out))
		return nil
	})
	c.do("disk-partitions+volumes", func() error {
		out, err := run(ctx, commandTimeout, "diskutil", "list", "-plist")
		if err != nil {
			c.setDataset(datasetDiskPartitions, nil)
			c.setDataset(datasetDiskVolumes, nil)
			return err
		}
		parts, vols, err := parseDiskutilList(out)
		if err != nil {
			return err
		}
		for _, v := range vols {
			mount, _ := v["mountPoint"].(string)
			if v["freeGB"] != nil || mount == "" {
				continue
			}
			// A volume of its own (not APFS): the mounted file system
			// tells its type and space.
			var st syscall.Statfs_t
			if err := syscall.Statfs(mount, &st); err == nil {
				v["fileSystem"] = cString(st.Fstypename[:])
				v["sizeGB"] = gib(st.Blocks * uint64(st.Bsize))
				v["freeGB"] = gib(st.Bavail * uint64(st.Bsize))
			}
		}
		c.setDataset(datasetDiskPartitions, parts)
		c.setDataset(datasetDiskVolumes, vols)
		return nil
	})
	c.do("shared-folders", func() error {
		out, err := run(ctx, commandTimeout, "sharing", "-l")
		if err != nil && len(out) == 0 {
			c.setDataset(datasetSharedFolders, nil)
			return err
		}
		c.setDataset(datasetSharedFolders, parseSharingList(out))
		return nil
	})
	c.do("logon-history", func() error {
		out, err := run(ctx, commandTimeout, "last")
		if err != nil {
			c.setDataset(datasetLogonHistory, nil)
			return err
		}
		c.setDataset(datasetLogonHistory, logonHistoryRows(parseDarwinLast(out, time.Now(), time.Local), nil, time.Now().AddDate(0, 0, -logonHistoryDays)))
		return nil
	})
	c.do("event-log-summary", func() error {
		var rows []map[string]any
		err := runStream(ctx, 3*time.Minute, func(r io.Reader) error {
			var err error
			rows, err = countDarwinLog(r)
			return err
		}, "log", "show", "--last", "24h", "--style", "ndjson", "--predicate", "messageType == error OR messageType == fault")
		if err != nil {
			c.setDataset(datasetEventLogSummary, nil)
			return err
		}
		c.setDataset(datasetEventLogSummary, rows)
		return nil
	})
	c.do("installed-updates", func() error {
		const history = "/Library/Receipts/InstallHistory.plist"
		b, err := os.ReadFile(history)
		if err == nil && strings.HasPrefix(string(b), "bplist") {
			b, err = run(ctx, commandTimeout, "plutil", "-convert", "xml1", "-o", "-", history)
		}
		if err != nil {
			c.setDataset(datasetInstalledUpdates, nil)
			return err
		}
		rows, err := parseInstallHistory(b)
		c.setDataset(datasetInstalledUpdates, rows)
		return err
	})
	c.setDataset(agentproto.DatasetEnvironmentVariables, environmentRows(os.Environ()))
	c.setDataset(agentproto.DatasetTimeZone, []map[string]any{timeZoneRow(deref(sys.TimeZone), deref(sys.TimeZone), time.Now())})
	c.wg.Wait()
	boot, _ := darwinBoot(ctx)
	c.setDataset(agentproto.DatasetOSInformation, []map[string]any{{
		"name": deref(sys.OS), "edition": nil, "version": deref(sys.OSVersion), "build": derefAny(sys.OSBuild),
		"kernel": nil, "architecture": sys.Arch, "installDate": nil, "lastBootAt": timeOrNil(boot), "locale": os.Getenv("LANG"),
	}})
}

func platformFacts(ctx context.Context, c *collector) Facts {
	var f Facts
	if boot, ok := darwinBoot(ctx); ok {
		f.LastBootAt = &boot
	}
	if out, err := run(ctx, 5*time.Second, "stat", "-f", "%Su", "/dev/console"); err == nil {
		if u := strings.TrimSpace(string(out)); u != "root" && u != "" {
			f.User = &u
		}
	}
	// macOS keeps no flag for a pending restart; the agent adds the one
	// its own installs asked for.
	return f
}

func platformIdentity(ctx context.Context, c *collector, id *Identity) error {
	out, err := run(ctx, 10*time.Second, "ioreg", "-rd1", "-c", "IOPlatformExpertDevice")
	if err != nil {
		return err
	}
	id.MachineUID = parseIORegUUID(out)
	if out, err := run(ctx, 10*time.Second, "sw_vers"); err == nil {
		v := parseSwVers(out)
		id.OS, id.OSVersion = v["ProductName"], v["ProductVersion"]
	}
	return nil
}

func darwinBoot(ctx context.Context) (time.Time, bool) {
	out, err := run(ctx, 5*time.Second, "sysctl", "-n", "kern.boottime")
	if err != nil {
		return time.Time{}, false
	}
	return parseKernBoottime(out)
}

func darwinTimeZone() string {
	if t, err := os.Readlink("/etc/localtime"); err == nil {
		if _, zone, ok := strings.Cut(t, "zoneinfo/"); ok {
			return zone
		}
	}
	return ""
}

// cString converts a NUL-terminated C char array.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
