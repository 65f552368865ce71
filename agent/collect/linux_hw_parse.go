package collect

// Parsers behind the Linux hardware, storage and network datasets; like
// linux_parse.go they are tested everywhere on captured samples.

import (
	"encoding/hex"
	"net"
	"strconv"
	"strings"
)

// processorRows reads /proc/cpuinfo into one row per socket. maxMHz is the
// highest clock cpufreq tells (0: the "cpu MHz" of the first processor).
func processorRows(b []byte, maxMHz int, arch string) []map[string]any {
	type socket struct {
		name, vendor string
		cores        map[string]bool
		threads      int
	}
	var order []string
	sockets := map[string]*socket{}
	pkg, model, vendor, coreID := "0", "", "", ""
	threads := 0
	mhz := 0.0
	flush := func() {
		if threads == 0 {
			return
		}
		s, ok := sockets[pkg]
		if !ok {
			s = &socket{cores: map[string]bool{}}
			sockets[pkg] = s
			order = append(order, pkg)
		}
		if s.name == "" {
			s.name = model
		}
		if s.vendor == "" {
			s.vendor = vendor
		}
		s.threads++
		if coreID != "" {
			s.cores[coreID] = true
		}
		pkg, coreID, threads = "0", "", 0
	}
	eachCPUInfoField(b, func(k, v string) {
		switch k {
		case "processor":
			flush()
			threads = 1
		case "model name", "cpu model":
			model = strings.Join(strings.Fields(v), " ")
		case "vendor_id", "CPU implementer":
			vendor = cpuVendor(v)
		case "physical id":
			pkg = v
		case "core id":
			coreID = v
		case "cpu MHz":
			if mhz == 0 {
				mhz, _ = strconv.ParseFloat(v, 64)
			}
		}
	}, flush)
	if maxMHz == 0 {
		maxMHz = int(mhz + 0.5)
	}
	rows := []map[string]any{}
	for i, id := range order {
		s := sockets[id]
		cores := len(s.cores)
		if cores == 0 {
			cores = s.threads
		}
		name := s.name
		if name == "" {
			name = arch + " processor"
		}
		var clock any
		if maxMHz > 0 {
			clock = maxMHz
		}
		rows = append(rows, map[string]any{
			"name": name, "manufacturer": s.vendor, "cores": cores, "logicalProcessors": s.threads,
			"maxClockMHz": clock, "socket": "CPU " + strconv.Itoa(i), "architecture": arch,
		})
	}
	return rows
}

// cpuVendor names the vendor of a vendor_id, or of an ARM implementer code.
func cpuVendor(v string) string {
	switch strings.ToLower(v) {
	case "0x41":
		return "ARM"
	case "0x61":
		return "Apple"
	case "0x51":
		return "Qualcomm"
	case "0xc0":
		return "Ampere"
	}
	return v
}

// parseNameservers lists the nameserver lines of resolv.conf.
func parseNameservers(b []byte) []string {
	var out []string
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "nameserver" {
			out = append(out, f[1])
		}
	}
	return out
}

// defaultGateways reads /proc/net/route into interface → gateway of its
// default route.
func defaultGateways(b []byte) map[string]string {
	out := map[string]string{}
	for i, l := range lines(b) {
		f := strings.Fields(l)
		if i == 0 || len(f) < 8 || f[1] != "00000000" {
			continue
		}
		if gw := hexIPv4(f[2]); gw != "" && gw != "0.0.0.0" {
			if _, ok := out[f[0]]; !ok {
				out[f[0]] = gw
			}
		}
	}
	return out
}

// tcpStates are the states of /proc/net/tcp the dataset keeps.
var tcpStates = map[string]string{"01": "ESTABLISHED", "0A": "LISTEN"}

// tcpConn is one established or listening socket of /proc/net/tcp{,6}.
type tcpConn struct {
	LocalAddress  string
	LocalPort     int
	RemoteAddress string
	RemotePort    int
	State         string
	Inode         string
}

// parseProcNetTCP reads /proc/net/tcp or tcp6 and keeps established
// connections and listeners.
func parseProcNetTCP(b []byte) []tcpConn {
	var out []tcpConn
	for i, l := range lines(b) {
		f := strings.Fields(l)
		if i == 0 || len(f) < 10 {
			continue
		}
		state, ok := tcpStates[f[3]]
		if !ok {
			continue
		}
		la, lp, ok1 := hexEndpoint(f[1])
		ra, rp, ok2 := hexEndpoint(f[2])
		if !ok1 || !ok2 {
			continue
		}
		out = append(out, tcpConn{LocalAddress: la, LocalPort: lp, RemoteAddress: ra, RemotePort: rp, State: state, Inode: f[9]})
	}
	return out
}

// hexEndpoint decodes ADDR:PORT of /proc/net/tcp: the address is in host
// (little-endian) order by 32-bit words, the port big-endian hex.
func hexEndpoint(s string) (string, int, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return "", 0, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return "", 0, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return "", 0, false
	}
	ip := make(net.IP, len(raw))
	for w := 0; w < len(raw); w += 4 {
		ip[w], ip[w+1], ip[w+2], ip[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return ip.String(), int(port), true
}

// connectionRows turns sockets into network-connections rows; process
// names a socket inode's process ("" when unknown).
func connectionRows(conns []tcpConn, process map[string]string) []map[string]any {
	rows := []map[string]any{}
	for _, c := range conns {
		var ra, rp any
		if c.State != "LISTEN" {
			ra, rp = c.RemoteAddress, c.RemotePort
		}
		rows = append(rows, map[string]any{
			"process": process[c.Inode], "protocol": "tcp", "localAddress": c.LocalAddress, "localPort": c.LocalPort,
			"remoteAddress": ra, "remotePort": rp, "remoteHost": nil, "state": c.State,
		})
	}
	return rows
}

// partition is one line of /proc/partitions.
type partition struct {
	Major, Minor int
	Blocks       uint64 // 1 KiB blocks
	Name         string
}

// parseProcPartitions reads /proc/partitions.
func parseProcPartitions(b []byte) []partition {
	var out []partition
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) != 4 {
			continue
		}
		major, err1 := strconv.Atoi(f[0])
		minor, err2 := strconv.Atoi(f[1])
		blocks, err3 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, partition{Major: major, Minor: minor, Blocks: blocks, Name: f[3]})
	}
	return out
}

// Partition type GUIDs (GPT) and MBR type bytes the dataset names.
var partitionTypes = map[string]string{
	"c12a7328-f81f-11d2-ba4b-00a0c93ec93b": "EFI System",
	"0fc63daf-8483-4772-8e79-3d69d8477de4": "Linux filesystem",
	"0657fd6d-a4ab-43c4-84e5-0933c84b4f4f": "Linux swap",
	"e6d6d379-f507-44c2-a23c-238f2a3df928": "Linux LVM",
	"a19d880f-05fc-4d3b-a006-743f0f84911e": "Linux RAID",
	"21686148-6449-6e6f-744e-656564454649": "BIOS boot",
	"ebd0a0a2-b9e5-4433-87c0-68b6b72699c7": "GPT: Basic Data",
	"4f68bce3-e8cd-4db1-96e7-fbcaf984b709": "Linux root (x86-64)",
	"b921b045-1df0-41c3-af44-4c6f280d3fae": "Linux root (ARM64)",
	"0x83":                                 "Linux", "0x82": "Linux swap", "0x8e": "Linux LVM", "0xef": "EFI System", "0x7": "NTFS/exFAT",
	"0xb": "FAT32", "0xc": "FAT32", "0x5": "Extended", "0xf": "Extended", "0xfd": "Linux RAID",
}

// partitionType names a partition type as udev reports it (ID_PART_ENTRY_TYPE).
func partitionType(t string) string {
	t = strings.ToLower(strings.TrimSpace(t))
	if n, ok := partitionTypes[t]; ok {
		return n
	}
	if t == "" {
		return "Unknown"
	}
	return t
}

// parseUdevProperties reads the E: lines of /run/udev/data/b<major>:<minor>.
func parseUdevProperties(b []byte) map[string]string {
	out := map[string]string{}
	for _, l := range lines(b) {
		if kv, ok := strings.CutPrefix(l, "E:"); ok {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = v
			}
		}
	}
	return out
}

// grubEntry is one menu entry of grub.cfg.
type grubEntry struct {
	Title, Device, Path string
}

// parseGrubMenu reads the top-level menuentry lines of grub.cfg and, in
// each, the kernel (linux) and its root= device.
func parseGrubMenu(b []byte) []grubEntry {
	var out []grubEntry
	depth, entry := 0, -1
	for _, l := range lines(b) {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "menuentry ") && depth == 0:
			title := t[len("menuentry "):]
			if q := title[0]; q == '\'' || q == '"' {
				if end := strings.IndexByte(title[1:], q); end >= 0 {
					title = title[1 : end+1]
				}
			}
			out = append(out, grubEntry{Title: title})
			entry = len(out) - 1
		case strings.HasPrefix(t, "submenu ") && depth == 0:
			entry = -1
		case entry >= 0 && depth == 1 && (strings.HasPrefix(t, "linux") && len(strings.Fields(t)) > 1 &&
			(strings.Fields(t)[0] == "linux" || strings.Fields(t)[0] == "linuxefi")):
			f := strings.Fields(t)
			{
				out[entry].Path = f[1]
			}
			for _, a := range f[2:] {
				if v, ok := strings.CutPrefix(a, "root="); ok {
					out[entry].Device = v
				}
			}
		}
		depth += strings.Count(t, "{") - strings.Count(t, "}")
		if depth <= 0 {
			depth, entry = 0, -1
		}
	}
	return out
}

// parseGrubDefault reads GRUB_DEFAULT of /etc/default/grub ("0" when unset).
func parseGrubDefault(b []byte) string {
	def := "0"
	for _, l := range lines(b) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "GRUB_DEFAULT="); ok {
			def = strings.Trim(v, `"'`)
		}
	}
	return def
}

// bootRows turns grub entries into boot-configuration rows; def is
// GRUB_DEFAULT (an index or a title).
func bootRows(entries []grubEntry, def string) []map[string]any {
	rows := []map[string]any{}
	for i, e := range entries {
		idx := strconv.Itoa(i)
		rows = append(rows, map[string]any{
			"entry": idx, "description": e.Title, "device": e.Device, "path": e.Path,
			"isDefault": def == idx || def == e.Title,
		})
	}
	return rows
}

// parseExports reads /etc/exports: one NFS share per exported path.
func parseExports(b []byte) []map[string]any {
	rows := []map[string]any{}
	for _, l := range lines(b) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		path, clients := l, ""
		if l[0] == '"' {
			if end := strings.IndexByte(l[1:], '"'); end >= 0 {
				path, clients = l[1:end+1], l[end+2:]
			}
		} else if i := strings.IndexAny(l, " \t"); i > 0 {
			path, clients = l[:i], l[i:]
		}
		rows = append(rows, map[string]any{"name": path, "path": path, "description": nullIfEmpty(clients), "type": "NFS"})
	}
	return rows
}

// parseSmbConf reads the shares of smb.conf: every section but [global],
// [printers] and [print$]; a section without a path (homes) keeps null.
func parseSmbConf(b []byte) []map[string]any {
	rows := []map[string]any{}
	var cur map[string]any
	for _, l := range lines(b) {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		if strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]") {
			cur = nil
			name := strings.TrimSpace(l[1 : len(l)-1])
			switch strings.ToLower(name) {
			case "global", "printers", "print$":
				continue
			}
			typ := "Disk"
			if strings.HasSuffix(name, "$") {
				typ = "Special"
			}
			cur = map[string]any{"name": name, "path": nil, "description": nil, "type": typ}
			rows = append(rows, cur)
			continue
		}
		if cur == nil {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "path":
			cur["path"] = nullIfEmpty(v)
		case "comment":
			cur["description"] = nullIfEmpty(v)
		}
	}
	return rows
}

// parseLpstat reads `lpstat -v` (device for each printer) and `lpstat -d`
// (the default destination) into printers rows.
func parseLpstat(devices, def []byte) []map[string]any {
	defName := ""
	if _, v, ok := strings.Cut(string(def), "system default destination:"); ok {
		defName = strings.TrimSpace(v)
	}
	rows := []map[string]any{}
	for _, l := range lines(devices) {
		rest, ok := strings.CutPrefix(l, "device for ")
		if !ok {
			continue
		}
		name, uri, ok := strings.Cut(rest, ": ")
		if !ok {
			continue
		}
		scheme, _, _ := strings.Cut(uri, ":")
		network := scheme == "ipp" || scheme == "ipps" || scheme == "socket" || scheme == "lpd" || scheme == "http" || scheme == "https" || scheme == "dnssd" || scheme == "smb"
		rows = append(rows, map[string]any{
			"name": name, "driver": "CUPS", "port": uri, "isDefault": name == defName, "isShared": false, "isNetwork": network,
		})
	}
	return rows
}

// parseDmidecodeMemory reads `dmidecode -t 17`: one row per populated
// memory device.
func parseDmidecodeMemory(b []byte) []map[string]any {
	rows := []map[string]any{}
	var cur map[string]string
	flush := func() {
		if cur == nil {
			return
		}
		defer func() { cur = nil }()
		f := strings.Fields(cur["Size"])
		if len(f) != 2 {
			return // "No Module Installed"
		}
		n, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return
		}
		switch f[1] {
		case "MB":
			n /= 1024
		case "TB":
			n *= 1024
		}
		var speed any
		if s := strings.Fields(cur["Speed"]); len(s) == 2 {
			if v, err := strconv.Atoi(s[0]); err == nil {
				speed = v
			}
		}
		slot := cur["Locator"]
		if slot == "" {
			slot = cur["Bank Locator"]
		}
		rows = append(rows, map[string]any{
			"slot": slot, "capacityGB": round1(n), "speedMHz": speed, "memoryType": cur["Type"],
			"manufacturer": cur["Manufacturer"], "partNumber": nullIfEmpty(strings.TrimSpace(cur["Part Number"])),
		})
	}
	for _, l := range lines(b) {
		if strings.HasPrefix(l, "Memory Device") {
			flush()
			cur = map[string]string{}
			continue
		}
		if cur == nil {
			continue
		}
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			cur[k] = strings.TrimSpace(v)
		}
	}
	flush()
	return rows
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// parseUptime reads the seconds since boot of /proc/uptime.
func parseUptime(b []byte) float64 {
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// cpuPercent is the average CPU use of a process over its life, in
// percent of one processor (like ps %cpu).
func cpuPercent(st procStat, uptime float64) float64 {
	life := uptime - float64(st.StartTicks)/clockTicks
	if life <= 0 {
		return 0
	}
	return 100 * float64(st.UTime+st.STime) / clockTicks / life
}
