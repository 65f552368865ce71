package collect

import (
	"reflect"
	"testing"
)

func TestProcessorRows(t *testing.T) {
	rows := processorRows(readTestdata(t, "cpuinfo-xeon.txt"), 0, "amd64")
	if len(rows) == 0 {
		t.Fatal("no processor")
	}
	for _, r := range rows {
		assertKeys(t, "processors", r)
		if r["cores"].(int) <= 0 || r["logicalProcessors"].(int) < r["cores"].(int) || r["manufacturer"] != "GenuineIntel" {
			t.Errorf("%v", r)
		}
	}
	arm := processorRows(readTestdata(t, "cpuinfo-arm64.txt"), 2400, "arm64")
	if len(arm) != 1 || arm[0]["maxClockMHz"] != 2400 || arm[0]["architecture"] != "arm64" {
		t.Errorf("arm %v", arm)
	}
}

func TestParseProcNetTCP(t *testing.T) {
	tcp := []byte(`  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 21345 1 0000000000000000 100 0 0 10 0
   1: 0F02000A:0016 0202000A:C350 01 00000000:00000000 02:0009D1B2 00000000     0        0 99871 4 0000000000000000 20 4 29 10 -1
   2: 0100007F:1F90 0100007F:D2F0 06 00000000:00000000 03:00000B7C 00000000     0        0 0 3 0000000000000000
`)
	conns := parseProcNetTCP(tcp)
	want := []tcpConn{
		{LocalAddress: "0.0.0.0", LocalPort: 22, RemoteAddress: "0.0.0.0", RemotePort: 0, State: "LISTEN", Inode: "21345"},
		{LocalAddress: "10.0.2.15", LocalPort: 22, RemoteAddress: "10.0.2.2", RemotePort: 50000, State: "ESTABLISHED", Inode: "99871"},
	}
	if !reflect.DeepEqual(conns, want) {
		t.Errorf("%+v", conns)
	}
	rows := connectionRows(conns, map[string]string{"21345": "sshd"})
	if rows[0]["process"] != "sshd" || rows[0]["remoteAddress"] != nil || rows[1]["remotePort"] != 50000 {
		t.Errorf("%v", rows)
	}
	for _, r := range rows {
		assertKeys(t, "network-connections", r)
	}
	tcp6 := []byte("  sl  local_address                         remote_address                        st\n" +
		"   0: 00000000000000000000000001000000:0277 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1234 1\n")
	if c := parseProcNetTCP(tcp6); len(c) != 1 || c[0].LocalAddress != "::1" || c[0].LocalPort != 631 {
		t.Errorf("tcp6 %+v", c)
	}
}

func TestParseGrub(t *testing.T) {
	cfg := []byte(`set default="0"
menuentry 'Debian GNU/Linux' --class debian $menuentry_id_option 'gnulinux-simple-1234' {
	load_video
	linux	/boot/vmlinuz-6.1.0-26-amd64 root=UUID=1234 ro quiet
	initrd	/boot/initrd.img-6.1.0-26-amd64
}
submenu 'Advanced options for Debian GNU/Linux' {
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-25-amd64' {
		linux	/boot/vmlinuz-6.1.0-25-amd64 root=UUID=1234 ro
	}
}
menuentry "UEFI Firmware Settings" {
	fwsetup
}
`)
	rows := bootRows(parseGrubMenu(cfg), parseGrubDefault([]byte("GRUB_DEFAULT=0\n")))
	if len(rows) != 2 || rows[0]["description"] != "Debian GNU/Linux" || rows[0]["path"] != "/boot/vmlinuz-6.1.0-26-amd64" ||
		rows[0]["device"] != "UUID=1234" || rows[0]["isDefault"] != true || rows[1]["isDefault"] != false || rows[1]["description"] != "UEFI Firmware Settings" {
		t.Errorf("%v", rows)
	}
	for _, r := range rows {
		assertKeys(t, "boot-configuration", r)
	}
}

func TestParseShares(t *testing.T) {
	nfs := parseExports([]byte("# comment\n/srv/nfs  192.168.0.0/24(rw,sync)\n\"/data set\" *(ro)\n"))
	if len(nfs) != 2 || nfs[0]["path"] != "/srv/nfs" || nfs[1]["path"] != "/data set" || nfs[0]["type"] != "NFS" {
		t.Errorf("%v", nfs)
	}
	smb := parseSmbConf([]byte("[global]\n workgroup = CORP\n[homes]\n comment = Home Directories\n[public]\n path = /srv/public\n[backup$]\n path = /srv/backup\n[printers]\n path = /var/spool/samba\n"))
	if len(smb) != 3 || smb[0]["path"] != nil || smb[0]["description"] != "Home Directories" || smb[1]["path"] != "/srv/public" || smb[2]["type"] != "Special" {
		t.Errorf("%v", smb)
	}
	for _, r := range append(nfs, smb...) {
		assertKeys(t, "shared-folders", r)
	}
}

func TestParseLpstatAndDmidecode(t *testing.T) {
	p := parseLpstat([]byte("device for Office: ipp://192.0.2.5/ipp/print\ndevice for PDF: cups-pdf:/\n"), []byte("system default destination: PDF\n"))
	if len(p) != 2 || p[0]["isNetwork"] != true || p[1]["isDefault"] != true || p[1]["isNetwork"] != false {
		t.Errorf("%v", p)
	}
	for _, r := range p {
		assertKeys(t, "printers", r)
	}
	mem := parseDmidecodeMemory([]byte(`Handle 0x0011, DMI type 17, 40 bytes
Memory Device
	Size: 16 GB
	Locator: DIMM A1
	Bank Locator: BANK 0
	Type: DDR4
	Speed: 3200 MT/s
	Manufacturer: Samsung
	Part Number: M378A2K43DB1-CWE    

Handle 0x0012, DMI type 17, 40 bytes
Memory Device
	Size: No Module Installed
	Locator: DIMM A2

Handle 0x0013, DMI type 17, 40 bytes
Memory Device
	Size: 512 MB
	Locator: DIMM 0
	Type: RAM
	Speed: Unknown
	Manufacturer: QEMU
`))
	if len(mem) != 2 || mem[0]["capacityGB"] != 16.0 || mem[0]["speedMHz"] != 3200 || mem[0]["partNumber"] != "M378A2K43DB1-CWE" ||
		mem[1]["capacityGB"] != 0.5 || mem[1]["speedMHz"] != nil || mem[1]["partNumber"] != nil {
		t.Errorf("%v", mem)
	}
	for _, r := range mem {
		assertKeys(t, "physical-memory", r)
	}
}

func TestCPUPercent(t *testing.T) {
	// 30 s of CPU over a life of 60 s (started 40 s after boot, 100 s ago).
	if p := cpuPercent(procStat{UTime: 2000, STime: 1000, StartTicks: 4000}, 100); p != 50 {
		t.Errorf("%v", p)
	}
	if p := cpuPercent(procStat{UTime: 1, StartTicks: 10000}, 100); p != 0 {
		t.Errorf("started after uptime: %v", p)
	}
}
