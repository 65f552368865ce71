//go:build linux

package collect

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// collectLinuxHardware starts the collectors of the storage, boot,
// network-connection, sharing and printing datasets. Each reads files of
// the running system; a missing tool or file gives an empty dataset and a
// log line.
func collectLinuxHardware(ctx context.Context, c *collector) {
	c.do("network-connections", func() error {
		var conns []tcpConn
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			if b, err := os.ReadFile(f); err == nil {
				conns = append(conns, parseProcNetTCP(b)...)
			}
		}
		c.setDataset(datasetNetworkConnections, connectionRows(conns, socketProcesses()))
		return nil
	})
	c.do("disks-partitions-volumes", func() error {
		b, err := os.ReadFile("/proc/partitions")
		if err != nil {
			c.setDataset(datasetDiskPartitions, nil)
			c.setDataset(datasetDiskVolumes, nil)
			c.setDataset(datasetDiskEncryption, nil)
			return err
		}
		parts, volumes, encryption := linuxStorage(parseProcPartitions(b))
		c.setDataset(datasetDiskPartitions, parts)
		c.setDataset(datasetDiskVolumes, volumes)
		c.setDataset(datasetDiskEncryption, encryption)
		return nil
	})
	c.do("boot-configuration", func() error {
		cfg := readFirstFile("/boot/grub/grub.cfg", "/boot/grub2/grub.cfg", "/boot/efi/EFI/debian/grub.cfg")
		def, _ := os.ReadFile("/etc/default/grub")
		c.setDataset(datasetBootConfiguration, bootRows(parseGrubMenu(cfg), parseGrubDefault(def)))
		if cfg == nil {
			return errNotFound("grub.cfg (not readable, or another boot loader)")
		}
		return nil
	})
	c.do("shared-folders", func() error {
		rows := []map[string]any{}
		if b, err := os.ReadFile("/etc/exports"); err == nil {
			rows = append(rows, parseExports(b)...)
		}
		if b, err := os.ReadFile("/etc/samba/smb.conf"); err == nil {
			rows = append(rows, parseSmbConf(b)...)
		}
		c.setDataset(datasetSharedFolders, rows)
		return nil
	})
	c.do("printers", func() error {
		if !hasCommand("lpstat") {
			c.setDataset(datasetPrinters, nil)
			return errNotFound("lpstat (CUPS not installed)")
		}
		devices, err := run(ctx, commandTimeout, "lpstat", "-v")
		if err != nil && len(devices) == 0 {
			c.setDataset(datasetPrinters, nil)
			return err
		}
		def, _ := run(ctx, commandTimeout, "lpstat", "-d")
		c.setDataset(datasetPrinters, parseLpstat(devices, def))
		return nil
	})
	c.do("physical-memory", func() error {
		if os.Geteuid() != 0 || !hasCommand("dmidecode") {
			// Left out rather than sent empty: an empty list would claim a
			// computer without memory modules.
			return errNotFound("dmidecode (or not root): physical-memory not collected")
		}
		out, err := run(ctx, commandTimeout, "dmidecode", "-t", "17")
		if err != nil {
			return err
		}
		c.setDataset(datasetPhysicalMemory, parseDmidecodeMemory(out))
		return nil
	})
}

func readFirstFile(paths ...string) []byte {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			return b
		}
	}
	return nil
}

// socketProcesses maps socket inodes to the name of the process holding
// them, from /proc/<pid>/fd (other users' processes need root).
func socketProcesses() map[string]string {
	out := map[string]string{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := "/proc/" + e.Name()
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			continue
		}
		name := ""
		for _, fd := range fds {
			l, err := os.Readlink(dir + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			if name == "" {
				name = readTrim(dir + "/comm")
			}
			out[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = name
		}
	}
	return out
}

// linuxStorage builds disk-partitions, disk-volumes and disk-encryption
// from /proc/partitions, /sys/block, the udev database and the mounts.
func linuxStorage(parts []partition) (partitions, volumes, encryption []map[string]any) {
	partitions, volumes, encryption = []map[string]any{}, []map[string]any{}, []map[string]any{}
	mounts := map[string]string{} // device → mount point
	if b, err := os.ReadFile("/proc/mounts"); err == nil {
		for _, l := range lines(b) {
			if f := strings.Fields(l); len(f) >= 2 {
				if _, ok := mounts[f[0]]; !ok {
					mounts[unescapeMount(f[0])] = unescapeMount(f[1])
				}
			}
		}
	}
	disks := map[string]int{}
	for _, p := range parts {
		if fileExists("/sys/block/" + p.Name) {
			if strings.HasPrefix(p.Name, "loop") || strings.HasPrefix(p.Name, "ram") || strings.HasPrefix(p.Name, "zram") {
				continue
			}
			if !strings.HasPrefix(p.Name, "dm-") && !strings.HasPrefix(p.Name, "md") {
				disks[p.Name] = len(disks)
			}
		}
	}
	for _, p := range parts {
		props := parseUdevProperties(readFirstFile("/run/udev/data/b" + strconv.Itoa(p.Major) + ":" + strconv.Itoa(p.Minor)))
		dev := "/dev/" + p.Name
		sizeBytes := p.Blocks * 1024
		if n := readTrim("/sys/class/block/" + p.Name + "/partition"); n != "" {
			parent := filepath.Base(filepath.Dir(resolve("/sys/class/block/" + p.Name)))
			disk, ok := disks[parent]
			if !ok {
				continue
			}
			num, _ := strconv.Atoi(n)
			typ := partitionType(props["ID_PART_ENTRY_TYPE"])
			partitions = append(partitions, map[string]any{
				"disk": disk, "partition": num, "type": typ, "sizeGB": gib(sizeBytes),
				"bootable": typ == "EFI System" || props["ID_PART_ENTRY_FLAGS"] == "0x80",
			})
		} else if _, ok := disks[p.Name]; ok && !fileExists("/sys/block/"+p.Name+"/dm") {
			continue // a whole disk is not a volume unless it holds a filesystem directly
		}
		if strings.HasPrefix(p.Name, "loop") || strings.HasPrefix(p.Name, "ram") || strings.HasPrefix(p.Name, "zram") {
			continue
		}
		fsType := props["ID_FS_TYPE"]
		if fsType == "" && !strings.HasPrefix(p.Name, "dm-") {
			if _, mounted := mounts[dev]; !mounted {
				continue // an extended partition, or unformatted space
			}
		}
		mp, mounted := mounts[dev]
		if dm := readTrim("/sys/block/" + p.Name + "/dm/name"); dm != "" {
			if m, ok := mounts["/dev/mapper/"+dm]; ok {
				mp, mounted = m, true
			}
		}
		size, free := sizeBytes, uint64(0)
		var mountPoint any
		if mounted {
			mountPoint = mp
			var st syscall.Statfs_t
			if syscall.Statfs(mp, &st) == nil {
				size, free = st.Blocks*uint64(st.Bsize), st.Bavail*uint64(st.Bsize)
			}
		}
		volumes = append(volumes, map[string]any{
			"device": dev, "mountPoint": mountPoint, "label": props["ID_FS_LABEL"], "fileSystem": fsType,
			"sizeGB": gib(size), "freeGB": gib(free),
		})
		if fsType == "crypto_LUKS" {
			continue // its opened mapping is listed below
		}
		if !mounted {
			continue
		}
		uuid := readTrim("/sys/block/" + p.Name + "/dm/uuid")
		row := map[string]any{"volume": mp, "method": nil, "encrypted": false, "status": "not encrypted"}
		if strings.HasPrefix(uuid, "CRYPT-LUKS") {
			method := "LUKS"
			if strings.HasPrefix(uuid, "CRYPT-LUKS2") {
				method = "LUKS2"
			} else if strings.HasPrefix(uuid, "CRYPT-LUKS1") {
				method = "LUKS1"
			}
			row["method"], row["encrypted"], row["status"] = method, true, "unlocked"
		}
		encryption = append(encryption, row)
	}
	return partitions, volumes, encryption
}

func resolve(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return p
	}
	return r
}

// linuxSecureBoot reads the SecureBoot EFI variable: 4 attribute bytes,
// then 1 when enabled.
func linuxSecureBoot() bool {
	b := readFirstFile("/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c")
	return len(b) >= 5 && b[4] == 1
}

// linuxDriveType tells a removable device (USB sticks, SD cards) from a
// local disk.
func linuxDriveType(device string) string {
	name := filepath.Base(resolve(device))
	parent := filepath.Base(filepath.Dir(resolve("/sys/class/block/" + name)))
	for _, n := range []string{name, parent} {
		if readTrim("/sys/block/"+n+"/removable") == "1" {
			return "Removable Disk"
		}
	}
	return "Local Disk"
}

// deviceLabels maps devices (/dev/sda1, /dev/mapper/x and the resolved
// /dev/dm-0) to their filesystem label.
func deviceLabels() map[string]string {
	out := map[string]string{}
	ents, err := os.ReadDir("/dev/disk/by-label")
	if err != nil {
		return out
	}
	for _, e := range ents {
		dev := resolve("/dev/disk/by-label/" + e.Name())
		label := udevUnescape(e.Name())
		out[dev] = label
		if dm := readTrim("/sys/block/" + filepath.Base(dev) + "/dm/name"); dm != "" {
			out["/dev/mapper/"+dm] = label
		}
	}
	return out
}

// udevUnescape decodes the \xHH escapes of /dev/disk/by-label names.
func udevUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if n, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// linuxDHCP tells whether an interface got its address by DHCP: a
// systemd-networkd lease, a dhclient lease, or a NetworkManager lease.
func linuxDHCP(name string) bool {
	if idx := readTrim("/sys/class/net/" + name + "/ifindex"); idx != "" && fileExists("/run/systemd/netif/leases/"+idx) {
		return true
	}
	for _, pattern := range []string{"/var/lib/dhcp/dhclient*" + name + "*.lease*", "/var/lib/NetworkManager/*" + name + "*.lease",
		"/run/dhclient*" + name + "*", "/var/lib/dhclient/*" + name + "*.lease*"} {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return true
		}
	}
	return false
}

// unitDirs are where systemd unit files live, in precedence order.
var unitDirs = []string{"/etc/systemd/system/", "/run/systemd/system/", "/usr/local/lib/systemd/system/", "/usr/lib/systemd/system/", "/lib/systemd/system/"}

// unitFileInfo finds a unit's file and reads its command and account.
func unitFileInfo(unit string) (path, command, user string) {
	for _, d := range unitDirs {
		b, err := os.ReadFile(d + unit)
		if err != nil {
			continue
		}
		command, user = parseUnitFile(b)
		return d + unit, command, user
	}
	return "", "", ""
}

// lastLogons reads the last login of each user with lastlog2 or lastlog
// when installed (empty otherwise).
func lastLogons(ctx context.Context) map[string]time.Time {
	out := map[string]time.Time{}
	if !hasCommand("lastlog") {
		return out
	}
	b, err := run(ctx, 5*time.Second, "lastlog")
	if err != nil {
		return out
	}
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) < 6 || f[0] == "Username" || strings.Contains(l, "**Never logged in**") {
			continue
		}
		// Username Port From Latest: the date is the last 6 fields.
		date := strings.Join(f[len(f)-6:], " ")
		if t, err := time.Parse("Mon Jan _2 15:04:05 -0700 2006", date); err == nil {
			out[f[0]] = t.UTC()
		}
	}
	return out
}

// profileRows lists the home directories of root and the regular users
// that exist: size (bounded walk) and last use (the newest modification of
// the directory or its dot files).
func profileRows(users []passwdEntry) []map[string]any {
	rows := []map[string]any{}
	for _, u := range users {
		if u.UID != 0 && (u.UID < 1000 || u.UID == 65534) {
			continue
		}
		fi, err := os.Stat(u.Home)
		if err != nil || !fi.IsDir() || u.Home == "/" {
			continue
		}
		size, last := dirUsage(u.Home, 100000)
		if last.Before(fi.ModTime()) {
			last = fi.ModTime()
		}
		rows = append(rows, map[string]any{"user": u.Name, "path": u.Home, "sizeMB": int(size >> 20), "lastUsedAt": last.UTC().Format(time.RFC3339)})
	}
	return rows
}

// linuxInstallDate is the day the system was installed: the installer's
// log folder, else the root filesystem's lost+found, else /etc/hostname.
// A time that cannot be an installation's (lost+found made with a zero
// time reads 1970-01-01) is passed over; none left: unknown ("").
func linuxInstallDate() string {
	now := time.Now()
	for _, p := range []string{"/var/log/installer", "/lost+found", "/etc/hostname", "/etc/machine-id"} {
		if fi, err := os.Stat(p); err == nil {
			if d := installDay(fi.ModTime().UTC(), now); d != "" {
				return d
			}
		}
	}
	return ""
}

// linuxLocale is the system locale (/etc/default/locale or
// /etc/locale.conf), else the agent's LANG, else C.
func linuxLocale() string {
	for _, p := range []string{"/etc/default/locale", "/etc/locale.conf"} {
		if b, err := os.ReadFile(p); err == nil {
			if v := parseOSRelease(b)["LANG"]; v != "" {
				return v
			}
		}
	}
	if v := os.Getenv("LANG"); v != "" {
		return v
	}
	return "C"
}
