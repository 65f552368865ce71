package sim

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Epoch is the moment the generated fleet describes: the November 2026
// Patch Tuesday. Update titles, release dates and install dates are relative
// to it, so Generate gives the same inventory on every run.
var Epoch = time.Date(2026, 11, 10, 18, 0, 0, 0, time.UTC)

// Kinds of endpoint in the fleet.
const (
	kindWorkstation = iota // Windows 10/11
	kindWindowsServer
	kindLinux
	kindMac
)

// site is an office: its time zone and its address block.
type site struct {
	code, tz, windowsTZ string
	octet               int
}

var sites = []site{
	{"BER", "Europe/Berlin", "W. Europe Standard Time", 10},
	{"LON", "Europe/London", "GMT Standard Time", 20},
	{"NYC", "America/New_York", "Eastern Standard Time", 30},
	{"CHI", "America/Chicago", "Central Standard Time", 40},
	{"SIN", "Asia/Singapore", "Singapore Standard Time", 50},
}

// datacenter hosts the servers.
var datacenter = site{"DC1", "Etc/UTC", "UTC", 100}

const domainName = "CORP.EXAMPLE.COM"

// hardware is a computer model and what it typically holds.
type hardware struct {
	manufacturer, model, family string
	virtual                     bool
	laptop                      bool
	cpus                        []cpuSpec
	ramGB                       []int
	diskGB                      []float64
	biosVendor, biosVersion     string
	biosDate                    string
	ouiPrefix                   string
}

type cpuSpec struct {
	name           string
	cores, threads int
	mhz            int
}

var (
	cpuI5U   = cpuSpec{"13th Gen Intel(R) Core(TM) i5-1345U", 10, 12, 1600}
	cpuI7U   = cpuSpec{"13th Gen Intel(R) Core(TM) i7-1365U", 10, 12, 1800}
	cpuI5D   = cpuSpec{"13th Gen Intel(R) Core(TM) i5-13500", 14, 20, 2500}
	cpuI7D   = cpuSpec{"13th Gen Intel(R) Core(TM) i7-13700", 16, 24, 2100}
	cpuI512  = cpuSpec{"12th Gen Intel(R) Core(TM) i5-1245U", 10, 12, 1600}
	cpuI5_8  = cpuSpec{"Intel(R) Core(TM) i5-8365U CPU @ 1.60GHz", 4, 8, 1896}
	cpuRyzen = cpuSpec{"AMD Ryzen 5 PRO 7540U w/ Radeon 740M Graphics", 6, 12, 3200}
	cpuUltra = cpuSpec{"Intel(R) Core(TM) Ultra 7 165U", 12, 14, 1700}
	cpuXeon  = cpuSpec{"Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", 0, 0, 2000}
	cpuXeon2 = cpuSpec{"Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz", 0, 0, 2400}
	cpuEpyc  = cpuSpec{"AMD EPYC 7763 64-Core Processor", 0, 0, 2450}
	cpuM1Pro = cpuSpec{"Apple M1 Pro", 10, 10, 3228}
	cpuM2    = cpuSpec{"Apple M2", 8, 8, 3490}
	cpuM3Pro = cpuSpec{"Apple M3 Pro", 11, 11, 4056}
	cpuM4    = cpuSpec{"Apple M4", 10, 10, 4400}
)

var workstationModels = []hardware{
	{"Dell Inc.", "Latitude 5440", "Latitude", false, true, []cpuSpec{cpuI5U, cpuI7U}, []int{16, 32}, []float64{237.9, 476.3}, "Dell Inc.", "1.17.0", "2024-08-14", "B0:7B:25"},
	{"Dell Inc.", "Latitude 7440", "Latitude", false, true, []cpuSpec{cpuI7U, cpuUltra}, []int{16, 32}, []float64{476.3, 953.3}, "Dell Inc.", "1.16.1", "2024-07-02", "B0:7B:25"},
	{"Dell Inc.", "OptiPlex 7010", "OptiPlex", false, false, []cpuSpec{cpuI5D, cpuI7D}, []int{16, 32}, []float64{476.3}, "Dell Inc.", "1.15.0", "2024-06-11", "B0:7B:25"},
	{"Dell Inc.", "OptiPlex Micro 7020", "OptiPlex", false, false, []cpuSpec{cpuI5D}, []int{16}, []float64{237.9, 476.3}, "Dell Inc.", "1.8.0", "2024-09-03", "B0:7B:25"},
	{"HP", "HP EliteBook 840 14 inch G10 Notebook PC", "EliteBook", false, true, []cpuSpec{cpuI5U, cpuI7U}, []int{16, 32}, []float64{476.3}, "HP", "V70 Ver. 01.06.00", "2024-05-20", "3C:52:82"},
	{"HP", "HP EliteBook 840 G9 Notebook PC", "EliteBook", false, true, []cpuSpec{cpuI512}, []int{16}, []float64{237.9, 476.3}, "HP", "U70 Ver. 01.11.00", "2024-04-09", "3C:52:82"},
	{"HP", "HP ProBook 450 15.6 inch G10 Notebook PC", "ProBook", false, true, []cpuSpec{cpuI5U}, []int{8, 16}, []float64{237.9}, "HP", "V85 Ver. 01.04.01", "2024-03-28", "3C:52:82"},
	{"HP", "HP EliteDesk 800 G6 Desktop Mini PC", "EliteDesk", false, false, []cpuSpec{cpuI5_8}, []int{8, 16}, []float64{237.9}, "HP", "S21 Ver. 02.17.00", "2023-11-14", "3C:52:82"},
	{"LENOVO", "21HD004MGE", "ThinkPad T14 Gen 4", false, true, []cpuSpec{cpuI5U, cpuI7U, cpuRyzen}, []int{16, 32}, []float64{476.3}, "LENOVO", "R2FET57W (1.37 )", "2024-06-24", "8C:16:45"},
	{"LENOVO", "21HM0062GE", "ThinkPad X1 Carbon Gen 11", false, true, []cpuSpec{cpuI7U}, []int{16, 32}, []float64{476.3, 953.3}, "LENOVO", "N3XET58W (1.33 )", "2024-05-13", "8C:16:45"},
	{"LENOVO", "12E3S05E00", "ThinkCentre M70q Gen 4", false, false, []cpuSpec{cpuI5D}, []int{16}, []float64{476.3}, "LENOVO", "M4BKT2CA", "2024-04-18", "8C:16:45"},
	{"Microsoft Corporation", "Surface Laptop 5", "Surface", false, true, []cpuSpec{cpuI5U, cpuI7U}, []int{8, 16}, []float64{237.9}, "Microsoft Corporation", "14.104.143", "2024-06-05", "C8:5B:76"},
}

var serverModels = []hardware{
	{"VMware, Inc.", "VMware7,1", "VMware Virtual Platform", true, false, []cpuSpec{cpuXeon, cpuXeon2}, []int{4, 8, 16, 32, 64}, []float64{99.4, 127.4}, "VMware, Inc.", "VMW71.00V.21100432.B64.2301110304", "2023-01-11", "00:50:56"},
	{"QEMU", "Standard PC (Q35 + ICH9, 2009)", "KVM", true, false, []cpuSpec{cpuEpyc, cpuXeon}, []int{4, 8, 16, 32}, []float64{49.9, 99.9}, "SeaBIOS", "1.16.3-debian-1.16.3-2", "2014-04-01", "52:54:00"},
	{"Microsoft Corporation", "Virtual Machine", "Hyper-V", true, false, []cpuSpec{cpuXeon2}, []int{8, 16, 32}, []float64{126.4}, "Microsoft Corporation", "Hyper-V UEFI Release v4.1", "2023-03-14", "00:15:5D"},
	{"Dell Inc.", "PowerEdge R650", "PowerEdge", false, false, []cpuSpec{cpuXeon}, []int{128, 256}, []float64{446.6}, "Dell Inc.", "1.14.1", "2024-07-16", "B0:7B:25"},
	{"HPE", "ProLiant DL380 Gen10 Plus", "ProLiant", false, false, []cpuSpec{cpuXeon2}, []int{128, 192}, []float64{479.9}, "HPE", "U46 v2.10", "2024-03-28", "94:40:C9"},
}

var macModels = []hardware{
	{"Apple Inc.", "MacBookPro18,3", "MacBook Pro (14-inch, 2021)", false, true, []cpuSpec{cpuM1Pro}, []int{16, 32}, []float64{494.4, 994.7}, "Apple Inc.", "11881.41.5", "2024-09-16", "3C:22:FB"},
	{"Apple Inc.", "MacBookPro18,1", "MacBook Pro (16-inch, 2021)", false, true, []cpuSpec{cpuM1Pro}, []int{16, 32}, []float64{994.7}, "Apple Inc.", "11881.41.5", "2024-09-16", "3C:22:FB"},
	{"Apple Inc.", "Mac14,2", "MacBook Air (M2, 2022)", false, true, []cpuSpec{cpuM2}, []int{8, 16}, []float64{245.1, 494.4}, "Apple Inc.", "11881.41.5", "2024-09-16", "F4:D4:88"},
	{"Apple Inc.", "Mac15,6", "MacBook Pro (14-inch, Nov 2023)", false, true, []cpuSpec{cpuM3Pro}, []int{18, 36}, []float64{494.4, 994.7}, "Apple Inc.", "11881.41.5", "2024-09-16", "F4:D4:88"},
	{"Apple Inc.", "Mac16,10", "Mac mini (2024)", false, false, []cpuSpec{cpuM4}, []int{16, 24}, []float64{245.1, 494.4}, "Apple Inc.", "11881.41.5", "2024-10-29", "5C:1B:F4"},
}

// osFlavor is an operating system release the fleet runs.
type osFlavor struct {
	id       string // stable name used for catalog look-ups
	name     string
	version  string
	oldBuild string // build before this month's update
	newBuild string // build with it
	// behind are builds of earlier months, newest first: what a host one
	// or two months further behind reports (Windows).
	behind    []string
	distro    string // linux: debian, ubuntu, rhel, rocky
	family    string // linux: deb or rpm
	titleName string // how Windows Update names the product
	release   string // feature release, e.g. 24H2
}

var (
	// Windows builds are real: the cumulative updates of September to
	// December 2025 (Microsoft's security update data, sim/DATASETS.md), so
	// the demo's MSRC documents (November and December 2025) flag the hosts
	// that are behind. oldBuild is November's, newBuild December's.
	win11_24h2 = osFlavor{id: "win11-24h2", version: "24H2", oldBuild: "26100.7171", newBuild: "26100.7462", behind: []string{"26100.6899", "26100.6584"},
		titleName: "Windows 11 Version 24H2 for x64-based Systems", release: "24H2"}
	win11_23h2 = osFlavor{id: "win11-23h2", version: "23H2", oldBuild: "22631.6199", newBuild: "22631.6345", behind: []string{"22631.6060", "22631.5909"},
		titleName: "Windows 11 Version 23H2 for x64-based Systems", release: "23H2"}
	win10_22h2 = osFlavor{id: "win10-22h2", version: "22H2", oldBuild: "19045.6575", newBuild: "19045.6691", behind: []string{"19045.6456", "19045.6332"},
		titleName: "Windows 10 Version 22H2 for x64-based Systems", release: "22H2"}
	// Windows 10 Enterprise LTSC 2019 is build 17763 (Windows 10 1809) and
	// has no display version: the agent then reports the OS version
	// (Win32_OperatingSystem.Version).
	ltsc2019 = osFlavor{id: "win10-ltsc2019", version: "10.0.17763", oldBuild: "17763.8027", newBuild: "17763.8146", behind: []string{"17763.7919", "17763.7792"},
		titleName: "Windows 10 Version 1809 for x64-based Systems"}
	srv2022 = osFlavor{id: "srv2022", version: "21H2", oldBuild: "20348.4405", newBuild: "20348.4529", behind: []string{"20348.4294", "20348.4171"},
		titleName: "Microsoft server operating system version 21H2 for x64-based Systems", release: "21H2"}
	srv2019 = osFlavor{id: "srv2019", version: "1809", oldBuild: "17763.8027", newBuild: "17763.8146", behind: []string{"17763.7919", "17763.7792"},
		titleName: "Windows Server 2019 (1809) for x64-based Systems", release: "1809"}

	ubuntu2204 = osFlavor{id: "ubuntu-22.04", name: "Ubuntu", version: "22.04", oldBuild: "5.15.0-125-generic", newBuild: "5.15.0-127-generic", distro: "ubuntu", family: "deb"}
	ubuntu2404 = osFlavor{id: "ubuntu-24.04", name: "Ubuntu", version: "24.04", oldBuild: "6.8.0-48-generic", newBuild: "6.8.0-50-generic", distro: "ubuntu", family: "deb"}
	debian12   = osFlavor{id: "debian-12", name: "Debian GNU/Linux", version: "12", oldBuild: "6.1.0-26-amd64", newBuild: "6.1.0-28-amd64", distro: "debian", family: "deb"}
	rhel9      = osFlavor{id: "rhel-9", name: "Red Hat Enterprise Linux", version: "9.5", oldBuild: "5.14.0-503.11.1.el9_5.x86_64", newBuild: "5.14.0-503.15.1.el9_5.x86_64", distro: "rhel", family: "rpm"}
	rocky9     = osFlavor{id: "rocky-9", name: "Rocky Linux", version: "9.5", oldBuild: "5.14.0-503.14.1.el9_5.x86_64", newBuild: "5.14.0-503.15.1.el9_5.x86_64", distro: "rocky", family: "rpm"}

	macos15 = osFlavor{id: "macos-15", name: "macOS", version: "15.1", oldBuild: "24B83", newBuild: "24B91", release: "15.1.1"}
	macos14 = osFlavor{id: "macos-14", name: "macOS", version: "14.7", oldBuild: "23H124", newBuild: "23H222", release: "14.7.1"}
)

var firstNames = []string{"Anna", "Ben", "Clara", "David", "Emma", "Felix", "Grace", "Henry", "Isabel", "Jonas",
	"Karen", "Lukas", "Maria", "Noah", "Olivia", "Paul", "Quinn", "Rosa", "Samuel", "Tina", "Umar", "Vera",
	"William", "Xenia", "Yusuf", "Zoe", "Aisha", "Bruno", "Chen", "Diego", "Elena", "Farid", "Greta", "Hiro",
	"Ines", "Jamal", "Katja", "Leon", "Mei", "Nils", "Omar", "Priya", "Rafael", "Sofia", "Tom", "Ulrike"}

var lastNames = []string{"Schmidt", "Miller", "Johnson", "Weber", "Brown", "Fischer", "Wilson", "Becker", "Taylor",
	"Wagner", "Anderson", "Hoffmann", "Thomas", "Koch", "Martin", "Richter", "Clark", "Klein", "Lewis", "Wolf",
	"Walker", "Neumann", "Hall", "Schwarz", "Young", "Zimmermann", "King", "Braun", "Wright", "Hartmann", "Lopez",
	"Krueger", "Hill", "Lange", "Scott", "Werner", "Green", "Lehmann", "Adams", "Kaiser", "Baker", "Tan", "Nakamura"}

// person is the main user of a computer.
type person struct {
	first, last, login string
}

// profile is the identity of one simulated computer: what does not change
// while the simulator runs.
type profile struct {
	seed       int64
	index      int
	kind       int
	platform   string // windows, linux, macos
	os         osFlavor
	osName     string
	hostname   string
	role       string
	sqlVersion string // SQL role: 2019 or 2022
	machineUID string
	hw         hardware
	cpu        cpuSpec
	ramGB      int
	diskGB     float64
	dataDiskGB float64
	serial     string
	site       site
	ip         string
	gateway    string
	mac        string
	domain     string // "" workgroup
	adOU       string
	user       person
	hasUser    bool
	antivirus  string
	installed  time.Time // OS installation
	// osLag is how many months further behind than November a Windows host
	// without this month's update is (0: November's build, 1: October's,
	// 2: September's).
	osLag     int
	bootAgo   time.Duration
	rebootDue bool
}

func newProfile(seed int64, index int) *profile {
	r := newRand(seed, index, "profile")
	p := &profile{seed: seed, index: index}
	p.machineUID = machineUID(seed, index)
	n := index + 1
	kind := weighted(r, 55, 15, 20, 10)
	if index == 2 {
		kind = 0 // the LTSC 2019 workstation
	}
	switch kind {
	case 0:
		p.kind, p.platform = kindWorkstation, "windows"
		p.os = []osFlavor{win11_24h2, win11_23h2, win10_22h2}[weighted(r, 45, 25, 30)]
		edition := pick(r, []string{"Enterprise", "Enterprise", "Enterprise", "Pro"})
		if strings.HasPrefix(p.os.id, "win11") {
			p.osName = "Microsoft Windows 11 " + edition
		} else {
			p.osName = "Microsoft Windows 10 " + edition
		}
		// A few workstations (the third computer of every fleet among
		// them) run Windows 10 Enterprise LTSC 2019. Its own random source
		// keeps the other computers as they were.
		if index == 2 || chance(newRand(seed, index, "ltsc"), 0.02) {
			p.os, p.osName = ltsc2019, "Microsoft Windows 10 Enterprise LTSC 2019"
		}
		p.hostname = fmt.Sprintf("WS-%04d", n)
		p.hw = pick(r, workstationModels)
		p.site = pick(r, sites)
		p.hasUser = true
	case 1:
		p.kind, p.platform = kindWindowsServer, "windows"
		if chance(r, 0.6) {
			p.os, p.osName = srv2022, "Microsoft Windows Server 2022 "
		} else {
			p.os, p.osName = srv2019, "Microsoft Windows Server 2019 "
		}
		p.osName += pick(r, []string{"Standard", "Standard", "Datacenter"})
		p.role = []string{"DC", "FS", "SQL", "APP", "WEB", "RDS", "BKP"}[weighted(r, 12, 15, 20, 25, 12, 10, 6)]
		p.hostname = fmt.Sprintf("SRV-%s-%04d", p.role, n)
		if p.role == "SQL" {
			p.sqlVersion = pick(r, []string{"2022", "2022", "2019"})
		}
		p.hw = serverModels[weighted(r, 60, 0, 25, 10, 5)]
		p.site = datacenter
		p.hasUser = chance(r, 0.3) || p.role == "RDS"
	case 2:
		p.kind, p.platform = kindLinux, "linux"
		p.os = []osFlavor{ubuntu2204, ubuntu2404, debian12, rhel9, rocky9}[weighted(r, 30, 30, 20, 10, 10)]
		p.osName = p.os.name
		p.role = []string{"web", "db", "app", "docker", "monitoring", "files", "intranet"}[weighted(r, 25, 15, 25, 15, 7, 6, 7)]
		prefix := map[string]string{"web": "web", "db": "db", "app": "app", "docker": "k8s-node", "monitoring": "mon", "files": "nas", "intranet": "wiki"}[p.role]
		p.hostname = fmt.Sprintf("%s-%04d", prefix, n)
		p.hw = serverModels[weighted(r, 45, 40, 0, 10, 5)]
		p.site = datacenter
	default:
		p.kind, p.platform = kindMac, "macos"
		p.os = []osFlavor{macos15, macos14}[weighted(r, 70, 30)]
		p.osName = "macOS"
		p.hostname = fmt.Sprintf("MAC-%04d", n)
		p.hw = pick(r, macModels)
		p.site = pick(r, sites[:4])
		p.hasUser = true
	}
	if p.kind != kindLinux && p.kind != kindMac {
		p.os.name = p.osName
	}

	p.cpu = pick(r, p.hw.cpus)
	if p.hw.virtual || p.cpu.cores == 0 {
		c := pick(r, []int{2, 4, 4, 8, 8, 16})
		if !p.hw.virtual {
			c = pick(r, []int{28, 32, 64})
		}
		p.cpu.cores, p.cpu.threads = c, c
		if !p.hw.virtual {
			p.cpu.threads = 2 * c
		}
	}
	p.ramGB = pick(r, p.hw.ramGB)
	if p.kind == kindLinux && p.hw.virtual {
		p.ramGB = pick(r, []int{2, 4, 8, 8, 16, 32})
	}
	p.diskGB = pick(r, p.hw.diskGB)
	if p.kind == kindWindowsServer || p.kind == kindLinux {
		if p.role == "FS" || p.role == "SQL" || p.role == "BKP" || p.role == "db" || p.role == "files" || chance(r, 0.3) {
			p.dataDiskGB = pick(r, []float64{199.9, 499.9, 1023.9, 2047.9})
		}
	}
	p.serial = serialFor(r, p.hw)

	// addresses: unique per index inside the site's block
	third := (index/250)%200 + 16
	fourth := index%250 + 4
	p.ip = fmt.Sprintf("10.%d.%d.%d", p.site.octet, third, fourth)
	p.gateway = fmt.Sprintf("10.%d.%d.1", p.site.octet, third)
	h := hash64("mac", fmt.Sprint(seed), fmt.Sprint(index))
	p.mac = fmt.Sprintf("%s:%02X:%02X:%02X", p.hw.ouiPrefix, byte(h>>16), byte(h>>8), byte(h))

	p.user = person{first: pick(r, firstNames), last: pick(r, lastNames)}
	p.user.login = strings.ToLower(p.user.first[:1] + p.user.last)
	switch p.kind {
	case kindWorkstation:
		if chance(r, 0.93) {
			p.domain = domainName
			p.adOU = fmt.Sprintf("OU=Workstations,OU=%s,DC=corp,DC=example,DC=com", p.site.code)
		}
	case kindWindowsServer:
		if chance(r, 0.95) || p.role == "DC" {
			p.domain = domainName
			ou := "OU=Servers"
			if p.role == "DC" {
				ou = "OU=Domain Controllers"
			}
			p.adOU = ou + ",DC=corp,DC=example,DC=com"
		}
		p.user.login = "adm-" + p.user.login
	case kindLinux:
		if chance(r, 0.3) {
			p.domain = domainName
		}
	}

	switch p.platform {
	case "windows":
		p.antivirus = []string{"Microsoft Defender Antivirus", "CrowdStrike Falcon Sensor", "Sophos Intercept X", "SentinelOne"}[weighted(r, 60, 22, 10, 8)]
	case "macos":
		p.antivirus = []string{"XProtect", "CrowdStrike Falcon", "Microsoft Defender"}[weighted(r, 45, 25, 30)]
	case "linux":
		if chance(r, 0.2) {
			p.antivirus = "CrowdStrike Falcon Sensor"
		}
	}
	p.installed = Epoch.AddDate(0, 0, -between(r, 30, 1100)).Add(time.Duration(r.IntN(36000)) * time.Second)
	if p.kind == kindWorkstation || p.kind == kindMac {
		p.bootAgo = time.Duration(between(r, 1, 14*24)) * time.Hour
	} else {
		p.bootAgo = time.Duration(between(r, 1, 60*24)) * time.Hour
	}
	p.rebootDue = chance(r, 0.12)
	if p.platform == "windows" {
		p.osLag = weighted(newRand(seed, index, "os-lag"), 50, 30, 20)
	}
	return p
}

// machineUID is the stable id an agent reports at enrollment.
func machineUID(seed int64, index int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "patchd-sim/%d/%d", seed, index))
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

const serialAlphabet = "0123456789BCDFGHJKLMNPQRSTVWXYZ"

func randomString(r *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func serialFor(r *rand.Rand, hw hardware) string {
	switch hw.manufacturer {
	case "Dell Inc.":
		return randomString(r, serialAlphabet, 7)
	case "HP":
		return "5CG" + fmt.Sprint(between(r, 2, 4)) + randomString(r, serialAlphabet, 6)
	case "HPE":
		return "CZ" + randomString(r, serialAlphabet, 8)
	case "LENOVO":
		return "PF" + randomString(r, serialAlphabet, 6)
	case "Apple Inc.":
		return randomString(r, "BCDFGHJKLMNPQRTVWXY0123456789", 10)
	case "VMware, Inc.":
		b := make([]string, 16)
		for i := range b {
			b[i] = fmt.Sprintf("%02x", r.IntN(256))
		}
		return "VMware-" + strings.Join(b[:8], " ") + "-" + strings.Join(b[8:], " ")
	case "Microsoft Corporation":
		if hw.virtual {
			return fmt.Sprintf("%04d-%04d-%04d-%04d-%04d-%04d-%02d", r.IntN(10000), r.IntN(10000), r.IntN(10000), r.IntN(10000), r.IntN(10000), r.IntN(10000), r.IntN(100))
		}
		return fmt.Sprintf("0F%010d", r.IntN(1e9))
	default:
		return ""
	}
}

func (p *profile) loginName() string {
	if p.platform == "windows" && p.domain != "" {
		return "CORP\\" + p.user.login
	}
	return p.user.login
}

func (p *profile) isServer() bool { return p.kind == kindWindowsServer || p.kind == kindLinux }
