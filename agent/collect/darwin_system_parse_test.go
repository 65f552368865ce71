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
