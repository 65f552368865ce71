package collect

import "testing"

func TestMacProcessorAndMemory(t *testing.T) {
	checkRows(t, "processors", []map[string]any{macProcessorRow(parseSysctl(readTestdata(t, "sysctl-apple.txt")), "arm64")}, []map[string]any{
		{"name": "Apple M1 Pro", "manufacturer": "Apple", "cores": 10, "logicalProcessors": 10, "maxClockMHz": nil, "socket": "CPU 0", "architecture": "arm64"},
	})
	checkRows(t, "processors", []map[string]any{macProcessorRow(parseSysctl(readTestdata(t, "sysctl-intel.txt")), "amd64")}, []map[string]any{
		{"name": "Intel(R) Core(TM) i7-9750H CPU @ 2.60GHz", "manufacturer": "GenuineIntel", "cores": 6, "logicalProcessors": 12, "maxClockMHz": 2600,
			"socket": "CPU 0", "architecture": "amd64"},
	})
	apple, err := parseSPMemory(readTestdata(t, "system_profiler-memory-apple.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "physical-memory", apple, []map[string]any{
		{"slot": "Unified memory", "capacityGB": 16.0, "speedMHz": nil, "memoryType": "LPDDR5", "manufacturer": "Hynix", "partNumber": nil},
	})
	intel, err := parseSPMemory(readTestdata(t, "system_profiler-memory-intel.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "physical-memory", intel, []map[string]any{
		{"slot": "BANK 0/ChannelA-DIMM0", "capacityGB": 8.0, "speedMHz": 2667, "memoryType": "DDR4", "manufacturer": "Micron", "partNumber": "8ATF1G64HZ-2G6E1"},
		// Undecoded SPD bytes are not a part number.
		{"slot": "BANK 2/ChannelB-DIMM0", "capacityGB": 8.0, "speedMHz": 2667, "memoryType": "DDR4", "manufacturer": "0x802C", "partNumber": nil},
	})
}

func TestFileVaultRow(t *testing.T) {
	checkRows(t, "disk-encryption", []map[string]any{
		fileVaultRow([]byte("FileVault is On.\n")),
		fileVaultRow([]byte("FileVault is Off.\n")),
		fileVaultRow([]byte("Encryption in progress: Percent completed = 42\n")),
	}, []map[string]any{
		{"volume": "/", "method": "FileVault", "encrypted": true, "status": "FileVault is On."},
		{"volume": "/", "method": nil, "encrypted": false, "status": "FileVault is Off."},
		{"volume": "/", "method": "FileVault", "encrypted": false, "status": "Encryption in progress: Percent completed = 42"},
	})
}

func TestMacGroupsRoutesConnectionsShares(t *testing.T) {
	checkRows(t, "local-groups", macGroupRows(parseDsclReadall(readTestdata(t, "dscl-readall-groups.txt"))), []map[string]any{
		{"name": "wheel", "description": "System Group", "members": "root"},
		{"name": "admin", "description": "Administrators", "members": "root,alice,itadmin"},
		{"name": "staff", "description": "Staff", "members": ""},
	})
	route := func(dest, mask, gw, ifc string) map[string]any {
		return map[string]any{"destination": dest, "netmask": mask, "gateway": gw, "interface": ifc, "metric": nil}
	}
	checkRows(t, "routing-tables", parseNetstatRoutes(readTestdata(t, "netstat-rn.txt")), []map[string]any{
		route("0.0.0.0", "0.0.0.0", "192.168.1.1", "en0"),
		route("127.0.0.0", "255.0.0.0", "127.0.0.1", "lo0"),
		route("127.0.0.1", "255.255.255.255", "127.0.0.1", "lo0"),
		route("169.254.0.0", "255.255.0.0", "0.0.0.0", "en0"),
		route("192.168.1.0", "255.255.255.0", "0.0.0.0", "en0"),
		route("192.168.1.1", "255.255.255.255", "0.0.0.0", "en0"),
		route("10.8.0.0", "255.255.255.0", "10.8.0.1", "utun4"),
		route("224.0.0.0", "240.0.0.0", "0.0.0.0", "en0"),
	})
	conn := func(proc, la string, lp int, ra any, rp any, state string) map[string]any {
		return map[string]any{"process": proc, "protocol": "tcp", "localAddress": la, "localPort": lp, "remoteAddress": ra, "remotePort": rp, "remoteHost": nil, "state": state}
	}
	// CLOSE_WAIT is neither open nor listening.
	checkRows(t, "network-connections", parseLsofTCP(readTestdata(t, "lsof-tcp.txt")), []map[string]any{
		conn("ControlCenter", "0.0.0.0", 7000, nil, nil, "LISTEN"),
		conn("ControlCenter", "0.0.0.0", 5000, nil, nil, "LISTEN"),
		conn("patchd-agent", "192.168.1.20", 51544, "10.20.0.10", 443, "ESTABLISHED"),
		conn("ssh", "fe80::1c2b:9eff:fe1c:2b9e", 50022, "fe80::1", 22, "ESTABLISHED"),
	})
	checkRows(t, "shared-folders", parseSharingList(readTestdata(t, "sharing-l.txt")), []map[string]any{
		{"name": "Public", "path": "/Users/alice/Public", "description": nil, "type": "Disk"},
		{"name": "Scans", "path": "/Volumes/Data/Scans", "description": nil, "type": "Disk"},
	})
}

func TestParseDiskutilList(t *testing.T) {
	parts, vols, err := parseDiskutilList(readTestdata(t, "diskutil-list.plist"))
	if err != nil {
		t.Fatal(err)
	}
	// The physical store of the container holding / is the bootable one.
	checkRows(t, "disk-partitions", parts, []map[string]any{
		{"disk": 0, "partition": 1, "type": "Apple_APFS_ISC", "sizeGB": 0.5, "bootable": false},
		{"disk": 0, "partition": 2, "type": "Apple_APFS", "sizeGB": 460.4, "bootable": true},
		{"disk": 0, "partition": 3, "type": "Apple_APFS_Recovery", "sizeGB": 5.0, "bootable": false},
		{"disk": 4, "partition": 1, "type": "Windows_FAT_32", "sizeGB": 28.6, "bootable": false},
	})
	vol := func(dev string, mount any, label string, size, free float64) map[string]any {
		return map[string]any{"device": dev, "mountPoint": mount, "label": label, "fileSystem": "apfs", "sizeGB": size, "freeGB": free}
	}
	fat := map[string]any{"device": "/dev/disk4s1", "mountPoint": "/Volumes/UNTITLED", "label": "UNTITLED", "fileSystem": "Windows_FAT_32", "sizeGB": 28.6, "freeGB": nil}
	// APFS volumes share their container: its size, and what they leave.
	checkRows(t, "disk-volumes", vols, []map[string]any{
		vol("/dev/disk1s1", "/System/Volumes/iSCPreboot", "iSCPreboot", 0.5, 0.5),
		vol("/dev/disk1s2", "/System/Volumes/xarts", "xART", 0.5, 0.5),
		vol("/dev/disk1s3", "/System/Volumes/Hardware", "Hardware", 0.5, 0.5),
		vol("/dev/disk2s1", nil, "Recovery", 5.0, 4.0),
		vol("/dev/disk3s1", "/System/Volumes/Data", "Macintosh HD - Data", 460.4, 161.1),
		// The sealed system volume is mounted at / as a snapshot.
		vol("/dev/disk3s3", "/", "Macintosh HD", 460.4, 161.1),
		vol("/dev/disk3s4", "/System/Volumes/Update", "Update", 460.4, 161.1),
		vol("/dev/disk3s5", "/System/Volumes/Preboot", "Preboot", 460.4, 161.1),
		vol("/dev/disk3s6", "/System/Volumes/VM", "VM", 460.4, 161.1),
		fat,
	})
	for in, want := range map[string][2]int{"disk0": {0, 0}, "disk0s2": {0, 2}, "disk12s3": {12, 3}} {
		if d, p, ok := diskutilIdentifier(in); !ok || d != want[0] || p != want[1] {
			t.Errorf("%s: %d %d %v", in, d, p, ok)
		}
	}
	if _, _, ok := diskutilIdentifier("disk3s3s1"); ok {
		t.Error("a snapshot read as a partition")
	}
}
