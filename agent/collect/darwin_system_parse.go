package collect

// Parsers of the macOS system, network and account sources: sysctl,
// SPMemoryDataType, fdesetup, dscl -readall, netstat -rn, lsof -F and
// sharing -l. Platform-independent so that they are tested on any system.

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// parseSysctl reads `sysctl name…` lines ("hw.logicalcpu: 10").
func parseSysctl(b []byte) map[string]string {
	out := map[string]string{}
	for _, l := range lines(b) {
		if k, v, ok := strings.Cut(l, ": "); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// macProcessorRow is the one row of processors on a Mac, from `sysctl
// machdep.cpu.brand_string machdep.cpu.vendor hw.physicalcpu hw.logicalcpu
// hw.cpufrequency_max` (Apple silicon has neither a vendor string nor a
// maximum frequency: Apple, null).
func macProcessorRow(s map[string]string, arch string) map[string]any {
	name := s["machdep.cpu.brand_string"]
	vendor := s["machdep.cpu.vendor"]
	if vendor == "" && strings.HasPrefix(name, "Apple") {
		vendor = "Apple"
	}
	cores, _ := strconv.Atoi(s["hw.physicalcpu"])
	logical, _ := strconv.Atoi(s["hw.logicalcpu"])
	var clock any
	if hz, err := strconv.ParseInt(s["hw.cpufrequency_max"], 10, 64); err == nil && hz > 0 {
		clock = int(hz / 1e6)
	}
	return map[string]any{"name": name, "manufacturer": vendor, "cores": cores, "logicalProcessors": logical, "maxClockMHz": clock,
		"socket": "CPU 0", "architecture": arch}
}

// parseSPMemory reads `system_profiler -json SPMemoryDataType`: the
// modules of an Intel Mac (_items: dimm_size "8 GB", dimm_speed "2667
// MHz", dimm_type, dimm_manufacturer, dimm_part_number), or the unified
// memory of Apple silicon (one entry: SPMemoryDataType "16 GB", dimm_type,
// dimm_manufacturer), reported as one module in the slot "Unified memory".
func parseSPMemory(b []byte) ([]map[string]any, error) {
	var sp struct {
		Memory []spItem `json:"SPMemoryDataType"`
	}
	if err := json.Unmarshal(b, &sp); err != nil {
		return nil, fmt.Errorf("system_profiler: %w", err)
	}
	rows := []map[string]any{}
	module := func(slot string, it spItem, size string) {
		gb, ok := macMemoryGB(size)
		if !ok {
			return // "empty" slots
		}
		var speed any
		if f := strings.Fields(it.str("dimm_speed")); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				speed = n
			}
		}
		part := it.str("dimm_part_number")
		if strings.HasPrefix(part, "0x") {
			part = "" // undecoded SPD bytes, not a part number
		}
		rows = append(rows, map[string]any{"slot": slot, "capacityGB": gb, "speedMHz": speed, "memoryType": it.str("dimm_type"),
			"manufacturer": it.str("dimm_manufacturer"), "partNumber": nullIfEmpty(part)})
	}
	for _, m := range sp.Memory {
		if size := m.str("SPMemoryDataType"); size != "" {
			module("Unified memory", m, size)
			continue
		}
		for _, it := range m.items() {
			module(it.str("_name"), it, it.str("dimm_size"))
		}
	}
	return rows, nil
}

// fileVaultRow reads `fdesetup status` ("FileVault is On.", "FileVault is
// Off.", "Encryption in progress: Percent completed = 42") for the
// startup volume.
func fileVaultRow(b []byte) map[string]any {
	status := ""
	for _, l := range lines(b) {
		if l = strings.TrimSpace(l); l != "" {
			status = l
			break
		}
	}
	on := status == "FileVault is On."
	var method any
	if on || strings.Contains(status, "progress") {
		method = "FileVault"
	}
	return map[string]any{"volume": "/", "method": method, "encrypted": on, "status": status}
}

// parseDsclReadall reads `dscl . -readall /Groups GroupMembership
// PrimaryGroupID RealName`: records separated by "-" lines, "Key: value"
// or "Key:" with the value on indented lines after it.
func parseDsclReadall(b []byte) []map[string]string {
	var out []map[string]string
	cur := map[string]string{}
	key := ""
	flush := func() {
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur, key = map[string]string{}, ""
	}
	for _, l := range lines(b) {
		switch {
		case l == "-":
			flush()
		case strings.HasPrefix(l, " ") && key != "":
			cur[key] = strings.TrimSpace(cur[key] + " " + strings.TrimSpace(l))
		default:
			k, v, ok := strings.Cut(l, ":")
			if !ok {
				continue
			}
			key = k
			cur[k] = strings.TrimSpace(v)
		}
	}
	flush()
	return out
}

// macGroupRows turns dscl group records into local-groups rows, without
// the system's own groups (names starting with "_").
func macGroupRows(records []map[string]string) []map[string]any {
	rows := []map[string]any{}
	for _, r := range records {
		name := r["RecordName"]
		if f := strings.Fields(name); len(f) > 0 {
			name = f[0] // aliases follow the name
		}
		if name == "" || strings.HasPrefix(name, "_") {
			continue
		}
		rows = append(rows, map[string]any{"name": name, "description": nullIfEmpty(r["RealName"]),
			"members": strings.Join(strings.Fields(r["GroupMembership"]), ",")})
	}
	return rows
}

// parseNetstatRoutes reads the IPv4 table of `netstat -rn -f inet`:
//
//	Destination        Gateway            Flags               Netif Expire
//	default            192.168.1.1        UGScg                 en0
//	127                127.0.0.1          UCS                   lo0
//	192.168.1          link#11            UCS                   en0
//	192.168.1.1/32     link#11            UCS                   en0
//	192.168.1.20       a4:83:e7:1c:2b:9e  UHLWIi                en0   1183
//
// BSD shortens a network to its significant octets (the mask follows from
// their number) or writes a CIDR suffix; a link# gateway is on-link
// (0.0.0.0). Host entries learned from ARP (a MAC address as the gateway)
// are not routes an administrator set and are left out. macOS keeps no
// route metric: null.
func parseNetstatRoutes(b []byte) []map[string]any {
	rows := []map[string]any{}
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) < 4 || f[0] == "Destination" || f[0] == "Routing" || f[0] == "Internet:" {
			continue
		}
		dest, gw, ifc := f[0], f[1], f[3]
		if strings.Count(gw, ":") == 5 {
			continue
		}
		if strings.HasPrefix(gw, "link#") {
			gw = "0.0.0.0"
		}
		if net.ParseIP(gw) == nil || net.ParseIP(gw).To4() == nil {
			continue
		}
		ip, mask, ok := bsdDestination(dest)
		if !ok {
			continue
		}
		rows = append(rows, map[string]any{"destination": ip, "netmask": mask, "gateway": gw, "interface": ifc, "metric": nil})
	}
	return rows
}

// bsdDestination expands a BSD route destination: default, 10, 172.16,
// 192.168.1, 192.168.1.1, 169.254/16, 10.8.0.0/24.
func bsdDestination(d string) (ip, mask string, ok bool) {
	if d == "default" {
		return "0.0.0.0", "0.0.0.0", true
	}
	d, _, _ = strings.Cut(d, "%") // a scope, on link-local routes
	addr, bits, hasBits := strings.Cut(d, "/")
	parts := strings.Split(addr, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return "", "", false
	}
	n := len(parts) * 8
	for len(parts) < 4 {
		parts = append(parts, "0")
	}
	if hasBits {
		b, err := strconv.Atoi(bits)
		if err != nil {
			return "", "", false
		}
		n = b
	}
	p := net.ParseIP(strings.Join(parts, ".")).To4()
	if p == nil || n < 0 || n > 32 {
		return "", "", false
	}
	m := net.CIDRMask(n, 32)
	return p.Mask(m).String(), net.IP(m).String(), true
}

// parseLsofTCP reads `lsof -nP -iTCP -sTCP:ESTABLISHED,LISTEN -F pcnT`:
// field lines p<pid>, c<command>, f<fd>, n<local>[-><remote>],
// TST=<state> (other T fields are skipped).
func parseLsofTCP(b []byte) []map[string]any {
	rows := []map[string]any{}
	command := ""
	var name, state string
	flush := func() {
		if name == "" {
			return
		}
		local, remote, _ := strings.Cut(name, "->")
		lh, lp := splitHostPort(local)
		row := map[string]any{"process": command, "protocol": "tcp", "localAddress": lh, "localPort": lp,
			"remoteAddress": nil, "remotePort": nil, "remoteHost": nil, "state": state}
		if remote != "" {
			rh, rp := splitHostPort(remote)
			row["remoteAddress"], row["remotePort"] = rh, rp
		}
		if state == "ESTABLISHED" || state == "LISTEN" {
			rows = append(rows, row)
		}
		name, state = "", ""
	}
	for _, l := range lines(b) {
		if l == "" {
			continue
		}
		v := l[1:]
		switch l[0] {
		case 'p':
			flush()
		case 'c':
			command = v
		case 'f':
			flush()
		case 'n':
			name = v
		case 'T':
			if s, ok := strings.CutPrefix(v, "ST="); ok {
				state = s
			}
		}
	}
	flush()
	return rows
}

// splitHostPort splits "10.0.0.5:443", "[fe80::1]:22" and "*:22" (any
// address: 0.0.0.0).
func splitHostPort(s string) (string, int) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return s, 0
	}
	if h == "*" {
		h = "0.0.0.0"
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

// parseSharingList reads `sharing -l`: each share point's top-level name
// and path (the afp and smb blocks inside it are indented).
func parseSharingList(b []byte) []map[string]any {
	rows := []map[string]any{}
	var name string
	for _, l := range lines(b) {
		if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, " ") {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch k {
		case "name":
			name = strings.TrimSpace(v)
		case "path":
			if name != "" {
				rows = append(rows, map[string]any{"name": name, "path": strings.TrimSpace(v), "description": nil, "type": "Disk"})
			}
			name = ""
		}
	}
	return rows
}

// diskutilIdentifier reads "disk0s2" as disk 0, partition 2 (a whole disk
// is partition 0).
func diskutilIdentifier(id string) (disk, part int, ok bool) {
	rest, found := strings.CutPrefix(id, "disk")
	if !found {
		return 0, 0, false
	}
	d, p, hasPart := strings.Cut(rest, "s")
	disk, err := strconv.Atoi(d)
	if err != nil {
		return 0, 0, false
	}
	if hasPart {
		if part, err = strconv.Atoi(p); err != nil {
			return 0, 0, false // a snapshot (disk3s3s1) or something else
		}
	}
	return disk, part, true
}

// parseDiskutilList reads `diskutil list -plist` into disk-partitions and
// disk-volumes rows. Partitions are those of the physical disks (APFS
// containers are synthesized disks, not partitions); the bootable one is
// the physical store of the APFS container that holds the volume mounted
// at / (directly or as the sealed system snapshot). Volumes are the APFS
// volumes, which share their container's space: the size is the
// container's, the free space what the volumes leave of it; and the
// partitions that carry a volume of their own (a USB stick's FAT), whose
// file system is the partition's content type and free space null: the
// collector reads both from the mounted file system.
func parseDiskutilList(b []byte) (partitions, volumes []map[string]any, err error) {
	v, err := parsePlist(strings.NewReader(string(b)))
	if err != nil {
		return nil, nil, err
	}
	top, _ := v.(map[string]any)
	if top == nil {
		return nil, nil, fmt.Errorf("diskutil list: not a dictionary")
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	num := func(m map[string]any, k string) float64 {
		n, _ := m[k].(int64)
		return float64(n)
	}
	dicts := func(m map[string]any, k string) []map[string]any {
		list, _ := m[k].([]any)
		var out []map[string]any
		for _, e := range list {
			if d, ok := e.(map[string]any); ok {
				out = append(out, d)
			}
		}
		return out
	}
	mountOf := func(vol map[string]any) string {
		if m := str(vol, "MountPoint"); m != "" {
			return m
		}
		for _, s := range dicts(vol, "MountedSnapshots") {
			if m := str(s, "SnapshotMountPoint"); m != "" {
				return m
			}
		}
		return ""
	}
	bootStores := map[string]bool{}
	partitions, volumes = []map[string]any{}, []map[string]any{}
	for _, disk := range dicts(top, "AllDisksAndPartitions") {
		apfs := dicts(disk, "APFSVolumes")
		if len(apfs) == 0 {
			continue
		}
		size := num(disk, "Size")
		used := 0.0
		root := false
		for _, vol := range apfs {
			used += num(vol, "CapacityInUse")
			if mountOf(vol) == "/" {
				root = true
			}
		}
		if root {
			for _, s := range dicts(disk, "APFSPhysicalStores") {
				bootStores[str(s, "DeviceIdentifier")] = true
			}
		}
		for _, vol := range apfs {
			if _, _, ok := diskutilIdentifier(str(vol, "DeviceIdentifier")); !ok {
				continue // a snapshot listed beside its volume
			}
			volumes = append(volumes, map[string]any{"device": "/dev/" + str(vol, "DeviceIdentifier"), "mountPoint": nullIfEmpty(mountOf(vol)),
				"label": str(vol, "VolumeName"), "fileSystem": "apfs", "sizeGB": round1(size / (1 << 30)), "freeGB": round1(max(0, size-used) / (1 << 30))})
		}
	}
	for _, disk := range dicts(top, "AllDisksAndPartitions") {
		if len(dicts(disk, "APFSVolumes")) > 0 {
			continue
		}
		for _, p := range dicts(disk, "Partitions") {
			id := str(p, "DeviceIdentifier")
			d, n, ok := diskutilIdentifier(id)
			if !ok {
				continue
			}
			partitions = append(partitions, map[string]any{"disk": d, "partition": n, "type": str(p, "Content"),
				"sizeGB": round1(num(p, "Size") / (1 << 30)), "bootable": bootStores[id]})
			if name := str(p, "VolumeName"); name != "" && !strings.HasPrefix(str(p, "Content"), "Apple_APFS") {
				volumes = append(volumes, map[string]any{"device": "/dev/" + id, "mountPoint": nullIfEmpty(str(p, "MountPoint")),
					"label": name, "fileSystem": str(p, "Content"), "sizeGB": round1(num(p, "Size") / (1 << 30)), "freeGB": nil})
			}
		}
	}
	return partitions, volumes, nil
}
