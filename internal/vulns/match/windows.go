package match

import (
	"sort"

	"github.com/patchd/patchd/internal/vulns/feeds"
	"strconv"
	"strings"
)

// Windows is matched by build against Microsoft's security update data
// (MSRC): every CVE whose fixed build for the endpoint's MSRC product is
// above the endpoint's build (major.minor.build.revision, the revision
// being the update build revision, UBR) is a finding. Updates are
// cumulative: a later build fixes what an earlier KB fixed, so one
// comparison with the lowest fixed build per CVE and product is enough.
//
// The endpoint's product is found by build number, not by name: every MSRC
// product's fixed builds carry its build number (22631 is Windows 11 23H2,
// 17763 is Windows 10 1809, LTSC 2019 and Server 2019), so an LTSC or LTSB
// edition without a display version maps to the product of its build. Of
// the products of one build number, a server takes the "Windows Server"
// product (its "(Server Core installation)" twin on Server Core), a
// workstation the client product of its architecture (x64, ARM64,
// 32-bit).

// WinBuild is a Windows build: 10.0.22631.4460.
type WinBuild [4]int

// ParseWinBuild reads "10.0.22631.4460" (three parts mean revision 0).
// "22631.4460", the "OS build" Windows shows, is read as 10.0.22631.4460
// when its build number is one of Windows 10 or later (10240 and above).
func ParseWinBuild(s string) (WinBuild, bool) {
	var b WinBuild
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) == 2 {
		if n, err := strconv.Atoi(parts[0]); err == nil && n >= 10240 {
			parts = append([]string{"10", "0"}, parts...)
		}
	}
	if len(parts) < 3 || len(parts) > 4 {
		return b, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return b, false
		}
		b[i] = n
	}
	return b, true
}

// Compare orders builds.
func (b WinBuild) Compare(o WinBuild) int {
	for i := range b {
		if b[i] != o[i] {
			if b[i] < o[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func (b WinBuild) String() string {
	return strconv.Itoa(b[0]) + "." + strconv.Itoa(b[1]) + "." + strconv.Itoa(b[2]) + "." + strconv.Itoa(b[3])
}

// MSRCFix is one vendor fix of the MSRC data, as the index takes it.
type MSRCFix struct {
	CVEID       string
	ProductID   string
	ProductName string
	KB          string
	FixedBuild  string
	Hotpatch    bool
	Release     string // the MSRC document ("2025-Nov"): the month of a Click-to-Run fix
}

// winFix is the fix of one CVE for one product: the lowest fixed build and
// its KB.
type winFix struct {
	cve   string
	kb    string
	build WinBuild
}

// winProduct is one MSRC Windows product and its fixes, sorted by build
// (descending), so the affected ones are a prefix.
type winProduct struct {
	id     string
	name   string
	server bool
	core   bool
	arch   string // "x64", "arm64", "x86" for clients, "" for servers
	fixes  []winFix
	// hotpatch holds fixes known only as hotpatches: used when the product
	// has no monthly fix for the CVE.
	hotpatch map[string]winFix
}

// winProductKind reads what the product name says: Windows Server or a
// client, Server Core, and a client's architecture. ok is false for names
// that are not Windows itself ("Windows Admin Center", "Windows App").
func winProductKind(name string) (server, core bool, arch string, ok bool) {
	n := strings.ToLower(name)
	if !strings.HasPrefix(n, "windows ") {
		return false, false, "", false
	}
	switch {
	case strings.HasPrefix(n, "windows server"):
		server = true
		core = strings.Contains(n, "server core installation")
	case strings.HasPrefix(n, "windows 10"), strings.HasPrefix(n, "windows 11"), strings.HasPrefix(n, "windows 8.1"),
		strings.HasPrefix(n, "windows rt 8.1"), strings.HasPrefix(n, "windows 7"):
		switch {
		case strings.Contains(n, "arm64-based"):
			arch = "arm64"
		case strings.Contains(n, "x64-based"):
			arch = "x64"
		case strings.Contains(n, "32-bit"):
			arch = "x86"
		default:
			return false, false, "", false
		}
	default:
		return false, false, "", false
	}
	return server, core, arch, true
}

// AddMSRCFix adds one vendor fix. A Click-to-Run fix (Office) is kept for
// matchOffice; other fixes without a parsable build, and of products that
// are not Windows itself, are ignored.
func (b *Builder) AddMSRCFix(f MSRCFix) {
	if f.KB == feeds.ClickToRun {
		b.addOfficeFix(f)
		return
	}
	build, ok := ParseWinBuild(f.FixedBuild)
	if !ok || f.KB == "" {
		return
	}
	if b.windows == nil {
		b.windows = map[string]*winProduct{}
	}
	p := b.windows[f.ProductID]
	if p == nil {
		server, core, arch, ok := winProductKind(f.ProductName)
		if !ok {
			return
		}
		p = &winProduct{id: f.ProductID, name: f.ProductName, server: server, core: core, arch: arch}
		b.windows[f.ProductID] = p
	}
	fx := winFix{cve: b.intern(f.CVEID), kb: b.intern(f.KB), build: build}
	if f.Hotpatch {
		if p.hotpatch == nil {
			p.hotpatch = map[string]winFix{}
		}
		if o, ok := p.hotpatch[fx.cve]; !ok || build.Compare(o.build) < 0 {
			p.hotpatch[fx.cve] = fx
		}
		return
	}
	p.fixes = append(p.fixes, fx)
	b.rules++
}

// windowsIndex maps a build number (22631) to the products of that build.
type windowsIndex map[int][]*winProduct

func buildWindows(products map[string]*winProduct) windowsIndex {
	ix := windowsIndex{}
	for _, p := range products {
		// One fix per CVE: the lowest build (cumulative updates).
		low := map[string]winFix{}
		for _, f := range p.fixes {
			if o, ok := low[f.cve]; !ok || f.build.Compare(o.build) < 0 || (f.build == o.build && f.kb < o.kb) {
				low[f.cve] = f
			}
		}
		for cve, f := range p.hotpatch {
			if _, ok := low[cve]; !ok {
				low[cve] = f
			}
		}
		p.fixes, p.hotpatch = p.fixes[:0], nil
		numbers := map[int]bool{}
		for _, f := range low {
			p.fixes = append(p.fixes, f)
			numbers[f.build[2]] = true
		}
		sort.Slice(p.fixes, func(i, j int) bool {
			if c := p.fixes[i].build.Compare(p.fixes[j].build); c != 0 {
				return c > 0
			}
			return p.fixes[i].cve < p.fixes[j].cve
		})
		for n := range numbers {
			ix[n] = append(ix[n], p)
		}
	}
	for _, ps := range ix {
		sort.Slice(ps, func(i, j int) bool { return ps[i].id < ps[j].id })
	}
	return ix
}

// WindowsOS is what the matcher needs of an endpoint's Windows.
type WindowsOS struct {
	Name  string // the caption without "Microsoft ": "Windows 11 Pro", "Windows Server 2022 Datacenter"
	Build string // "10.0.22631.4460"
	Arch  string // "amd64", "arm64", "386" (as agents report it)
	// InstallationType is "Client", "Server" or "Server Core" (the
	// registry's InstallationType); "" when the agent does not report it.
	InstallationType string
	Server           bool // the endpoint's type is server
}

func normalArch(a string) string {
	switch strings.ToLower(strings.TrimSpace(a)) {
	case "arm64", "aarch64", "arm 64-bit processor":
		return "arm64"
	case "386", "x86", "i386", "i686", "32-bit":
		return "x86"
	}
	return "x64"
}

// windowsProduct answers the MSRC product of an endpoint's Windows, nil
// when none has fixes for its build number.
func (ix *Index) windowsProduct(os WindowsOS, build WinBuild) *winProduct {
	cands := ix.windows[build[2]]
	if len(cands) == 0 {
		return nil
	}
	server := os.Server || strings.Contains(strings.ToLower(os.Name), "server") ||
		strings.HasPrefix(strings.ToLower(os.InstallationType), "server")
	core := strings.EqualFold(strings.TrimSpace(os.InstallationType), "server core")
	arch := normalArch(os.Arch)
	var fallback *winProduct
	for _, p := range cands {
		if p.server != server {
			continue
		}
		if server {
			if p.core == core {
				return p
			}
			fallback = p
			continue
		}
		if p.arch == arch {
			return p
		}
	}
	// A Server Core host of a build Microsoft lists only as one kind.
	return fallback
}

// matchWindows adds the findings of the endpoint's Windows build.
func (m *matcher) matchWindows(os WindowsOS) {
	build, ok := ParseWinBuild(os.Build)
	if !ok {
		return
	}
	p := m.ix.windowsProduct(os, build)
	if p == nil {
		return
	}
	installed := build.String()
	for _, f := range p.fixes {
		if f.build.Compare(build) <= 0 {
			break
		}
		m.add(Finding{CVEID: f.cve, Software: p.name, Version: installed, FixedIn: f.build.String(), Source: f.kb})
	}
}

// WindowsProducts answers the number of Windows products indexed.
func (ix *Index) WindowsProducts() int {
	n := 0
	seen := map[*winProduct]bool{}
	for _, ps := range ix.windows {
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				n++
			}
		}
	}
	return n
}
