package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
)

const dateLayout = "2006-01-02"

// Generate returns the inventory of endpoint index of the fleet seeded with
// seed, as it stands before the simulator changes anything. It is pure: the
// same arguments give the same inventory, CollectedAt included (Epoch).
func Generate(seed int64, index int) agentproto.Inventory {
	return generate(newProfile(seed, index), nil)
}

// Platform returns the platform (windows, linux or macos) of endpoint index
// of the fleet seeded with seed, as it enrolls.
func Platform(seed int64, index int) string { return newProfile(seed, index).platform }

// changes records what commands did to an endpoint since it was generated;
// the next inventory reflects them. It is saved in the state file.
type changes struct {
	// Installed maps the identity of each deployed update to when it was
	// installed (RFC 3339).
	Installed map[string]string `json:"installed,omitempty"`
	// Added lists package ids installed by DEPLOY_SOFTWARE.
	Added []string `json:"added,omitempty"`
	// Removed lists names uninstalled by UNINSTALL_SOFTWARE.
	Removed []string `json:"removed,omitempty"`
}

// app is a chosen software row with what the update logic needs to know.
type app struct {
	sw       agentproto.Software
	prod     product
	version  string
	outdated bool
}

type generator struct {
	p   *profile
	ch  *changes
	inv agentproto.Inventory
	// apps is the software list before it is flattened into the inventory.
	apps []app
	// osPatched says whether this month's OS update (the one that changes
	// the build number) is installed.
	osPatched bool
	kernelOld bool
	// installedNow are the updates commands installed, for the history.
	installedNow []installedUpdate
}

type installedUpdate struct {
	agentproto.Update
	at string
}

func generate(p *profile, ch *changes) agentproto.Inventory {
	g := &generator{p: p, ch: ch}
	g.inv.CollectedAt = Epoch
	switch p.kind {
	case kindWorkstation, kindWindowsServer:
		g.windowsSoftware()
		g.windowsUpdates()
	case kindLinux:
		g.linuxSoftwareAndUpdates()
	case kindMac:
		g.macSoftware()
		g.macUpdates()
	}
	g.applyChanges()
	g.system()
	g.disks()
	g.inv.Datasets = g.datasets()
	return g.inv
}

func ptr[T any](v T) *T { return &v }

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// choose picks between lo and hi items: every candidate is drawn with its
// probability, then the list is trimmed or filled (weighted by probability)
// to land in range. It keeps a believable mix and a predictable size.
func choose(r *rand.Rand, probs []float64, lo, hi int) []int {
	target := between(r, lo, hi)
	type cand struct {
		i   int
		in  bool
		key float64
	}
	cands := make([]cand, 0, len(probs))
	for i, p := range probs {
		if p <= 0 {
			continue
		}
		u := r.Float64()
		// Efraimidis-Spirakis key: sorting by it samples by weight.
		cands = append(cands, cand{i: i, in: p >= 1 || u < p, key: math.Pow(u, 1/p)})
	}
	n := 0
	for _, c := range cands {
		if c.in {
			n++
		}
	}
	// order: included first, then by key descending; take the first target
	slices.SortStableFunc(cands, func(a, b cand) int {
		if a.in != b.in {
			if a.in {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.key, a.key)
	})
	if n > target {
		// drop the included ones with the lowest keys, but never a certain one
		in := cands[:n]
		certain := 0
		for _, c := range in {
			if probs[c.i] >= 1 {
				certain++
			}
		}
		slices.SortStableFunc(in, func(a, b cand) int {
			pa, pb := probs[a.i] >= 1, probs[b.i] >= 1
			if pa != pb {
				if pa {
					return -1
				}
				return 1
			}
			return cmp.Compare(b.key, a.key)
		})
		cands = in[:max(target, certain)]
	} else if len(cands) > target {
		cands = cands[:target]
	}
	out := make([]int, len(cands))
	for i, c := range cands {
		out[i] = c.i
	}
	slices.Sort(out)
	return out
}

func installDate(r *rand.Rand, p *profile, maxDaysAgo int) string {
	oldest := int(Epoch.Sub(p.installed).Hours() / 24)
	days := r.IntN(max(1, min(oldest, maxDaysAgo)))
	return Epoch.AddDate(0, 0, -days).Format(dateLayout)
}

// eligible says how likely a Windows product is on this endpoint: the
// catalog's chance, narrowed by hardware vendor, security product and role.
func (p *profile) windowsChance(pr product) float64 {
	base := pr.pWS
	if p.kind == kindWindowsServer {
		base = pr.pSV
	}
	name, pub := pr.name, pr.publisher
	switch {
	case strings.Contains(name, "OpenManage"):
		return b2f(p.hw.manufacturer == "Dell Inc.")
	case pub == "Dell Inc.":
		return gate(p.hw.manufacturer == "Dell Inc.", base)
	case pub == "HP Inc." && !strings.Contains(name, "Printing"):
		return gate(p.hw.manufacturer == "HP", base)
	case pub == "Hewlett Packard Enterprise":
		return b2f(p.hw.manufacturer == "HPE")
	case strings.HasPrefix(pub, "Lenovo"):
		return gate(p.hw.manufacturer == "LENOVO", base)
	case pub == intel || pub == "INTEL CORP" || strings.HasPrefix(pub, "Realtek") || pub == "Synaptics Incorporated" ||
		pub == "NVIDIA Corporation" || pub == "DisplayLink Corp." || pub == "Dolby Laboratories" || pub == "Broadcom Inc." && name != "VMware Tools" && !strings.Contains(name, "Workstation"):
		return gate(!p.hw.virtual, base)
	case name == "VMware Tools":
		return b2f(p.hw.manufacturer == "VMware, Inc.")
	case name == "CrowdStrike Windows Sensor":
		return b2f(p.antivirus == "CrowdStrike Falcon Sensor")
	case name == "Sophos Endpoint Agent":
		return b2f(p.antivirus == "Sophos Intercept X")
	case name == "SentinelOne Agent":
		return b2f(p.antivirus == "SentinelOne")
	case strings.Contains(name, "SQL Server 2022") || strings.Contains(name, "SQL Server 2019") && !strings.Contains(name, "CLR Types"):
		// the components of one database engine come together
		return gate(p.role == "SQL" && strings.Contains(name, p.sqlVersion), 0.97)
	case strings.Contains(name, "FSLogix") || strings.Contains(name, "Virtual Delivery Agent") || strings.Contains(name, "WebRTC"):
		return gate(p.role == "RDS", 0.8)
	case strings.Contains(name, "Tomcat"):
		return gate(p.role == "APP", 0.3)
	case strings.HasPrefix(name, "IIS ") || strings.Contains(name, "Request Routing") || strings.Contains(name, "Web Deploy"):
		return gate(p.role == "WEB" || p.role == "APP", 0.8)
	case strings.Contains(name, "Entra Connect") || strings.Contains(name, "AD Connect"):
		return gate(p.role == "DC", 0.4)
	case strings.HasPrefix(name, "Veeam Backup"):
		return gate(p.role == "BKP", 1)
	case name == "Microsoft 365 Apps for enterprise - en-us" || strings.HasPrefix(name, "Office 16"):
		if p.role == "RDS" {
			return 1
		}
	case name == "Windows PC Health Check" || name == "Dev Home" || name == "Microsoft Copilot":
		if strings.HasPrefix(p.os.id, "win10") && name != "Windows PC Health Check" {
			return 0
		}
	}
	return base
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func gate(ok bool, p float64) float64 {
	if ok {
		return p
	}
	return 0
}

// pickVersion returns the version an up-to-date or a behind endpoint holds.
func pickVersion(r *rand.Rand, pr product, outdated bool) string {
	if !outdated || len(pr.versions) < 2 {
		if pr.winget == "" && len(pr.versions) > 1 {
			return pick(r, pr.versions)
		}
		return pr.latest()
	}
	return pr.versions[r.IntN(len(pr.versions)-1)]
}

func (g *generator) windowsSoftware() {
	r := newRand(g.p.seed, g.p.index, "software")
	probs := make([]float64, len(windowsCatalog))
	for i, pr := range windowsCatalog {
		probs[i] = g.p.windowsChance(pr)
	}
	for _, i := range choose(r, probs, 140, 160) {
		g.addApp(r, windowsCatalog[i])
	}
}

func (g *generator) addApp(r *rand.Rand, pr product) {
	a := app{prod: pr}
	a.sw.Name = pr.name
	a.sw.Publisher = strOrNil(pr.publisher)
	a.sw.InstallType = strOrNil(pr.install)
	maxAge := 900
	if pr.updatable() {
		maxAge = 200
	}
	a.sw.InstallDate = ptr(installDate(r, g.p, maxAge))
	switch {
	case pr.perUser:
		a.sw.InstalledFor = ptr(g.p.loginName())
	default:
		a.sw.InstalledFor = ptr("all users")
	}
	a.version = pickVersion(r, pr, false)
	g.apps = append(g.apps, a)
}

// outdate makes n updatable apps (one per package id) run an older version.
func (g *generator) outdate(r *rand.Rand, n int) []int {
	var idx []int
	seen := map[string]bool{}
	for i, a := range g.apps {
		if a.prod.updatable() && !seen[a.prod.winget] {
			seen[a.prod.winget] = true
			idx = append(idx, i)
		}
	}
	r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	idx = idx[:min(n, len(idx))]
	slices.Sort(idx)
	for _, i := range idx {
		a := &g.apps[i]
		a.outdated = true
		a.version = pickVersion(r, a.prod, true)
	}
	return idx
}

// releaseDay is a stable date for a product version: the same on every endpoint.
func releaseDay(parts ...string) *time.Time {
	d := Epoch.AddDate(0, 0, -int(hash64(parts...)%40)-1)
	d = time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
	return &d
}

func (g *generator) thirdPartyUpdates(idx []int, viaWinget bool) {
	for _, i := range idx {
		a := g.apps[i]
		u := agentproto.Update{
			Title:            fmt.Sprintf("%s %s", a.prod.name, a.prod.latest()),
			Source:           "Applications",
			Categories:       []string{"Application Updates"},
			InstalledVersion: ptr(a.version),
			LatestVersion:    ptr(a.prod.latest()),
			ReleaseDate:      releaseDay(a.prod.winget, a.prod.latest()),
		}
		if viaWinget {
			// As patchd-agent reports a row of winget upgrade: titled
			// with winget's name of the installed product and the
			// version it goes to, severity Unspecified.
			u.WingetID = ptr(a.prod.winget)
			u.Severity = ptr("Unspecified")
		} else {
			u.PackageName = ptr(a.prod.winget)
		}
		g.inv.Updates = append(g.inv.Updates, u)
	}
}

// osUpdate is an update of the operating system offered this month.
type osUpdate struct {
	title      string
	kb         string
	productKey string
	severity   string
	source     string
	categories []string
	reboot     bool
	released   time.Time
	chance     float64
	// patchesOS marks the update that moves the OS build forward.
	patchesOS bool
}

const (
	mandatory = "OS - Mandatory"
	optional  = "OS - Optional"
)

func kbFor(parts ...string) string {
	return fmt.Sprintf("KB50%05d", 40000+hash64(parts...)%20000)
}

func (p *profile) windowsOSUpdates() []osUpdate {
	month := Epoch.Format("2006-01")
	prev := Epoch.AddDate(0, -1, 0)
	patchTuesday := time.Date(Epoch.Year(), Epoch.Month(), Epoch.Day(), 0, 0, 0, 0, time.UTC)
	f := p.os
	netFramework := map[string]string{
		"win11-24h2":     ".NET Framework 3.5 and 4.8.1 for Windows 11, version 24H2 for x64",
		"win11-23h2":     ".NET Framework 3.5 and 4.8.1 for Windows 11, version 23H2 for x64",
		"win10-22h2":     ".NET Framework 3.5, 4.8 and 4.8.1 for Windows 10 Version 22H2 for x64",
		"win10-ltsc2019": ".NET Framework 3.5, 4.7.2 and 4.8 for Windows 10 Version 1809 for x64",
		"srv2022":        ".NET Framework 3.5, 4.8 and 4.8.1 for Microsoft server operating system version 21H2 for x64",
		"srv2019":        ".NET Framework 3.5, 4.7.2 and 4.8 for Windows Server 2019 for x64",
	}[f.id]
	defVersion := fmt.Sprintf("1.421.%d.0", 400+hash64(month, "defender")%300)
	ups := []osUpdate{
		{
			title:    fmt.Sprintf("%s Cumulative Update for %s", month, f.titleName),
			kb:       kbFor(f.id, month, "cu"),
			severity: "Critical", source: mandatory, categories: []string{"Security Updates"},
			reboot: true, released: patchTuesday, chance: 0.7, patchesOS: true,
		},
		{
			title:    fmt.Sprintf("%s Cumulative Update for %s", month, netFramework),
			kb:       kbFor(f.id, month, "dotnet"),
			severity: "Important", source: mandatory, categories: []string{"Security Updates"},
			released: patchTuesday, chance: 0.45,
		},
		{
			title:    fmt.Sprintf("Security Intelligence Update for Microsoft Defender Antivirus - KB2267602 (Version %s) - Current Channel (Broad)", defVersion),
			kb:       "KB2267602",
			severity: "Unspecified", source: mandatory, categories: []string{"Definition Updates"},
			released: Epoch.AddDate(0, 0, 9), chance: 0.35,
		},
		{
			title:    fmt.Sprintf("Windows Malicious Software Removal Tool x64 - v5.%d (KB890830)", 130+int(Epoch.Month())+12*(Epoch.Year()-2025)),
			kb:       "KB890830",
			severity: "Unspecified", source: mandatory, categories: []string{"Update Rollups"},
			released: patchTuesday, chance: 0.3,
		},
		{
			title:    "Update for Microsoft Defender Antivirus antimalware platform - KB4052623 (Version 4.18.24100.7)",
			kb:       "KB4052623",
			severity: "Moderate", source: mandatory, categories: []string{"Critical Updates"},
			released: patchTuesday.AddDate(0, 0, -5), chance: 0.2,
		},
		{
			title:    fmt.Sprintf("%s Cumulative Update Preview for %s", prev.Format("2006-01"), f.titleName),
			kb:       kbFor(f.id, prev.Format("2006-01"), "preview"),
			severity: "Unspecified", source: optional, categories: []string{"Updates"},
			reboot: true, released: patchTuesday.AddDate(0, 0, -14), chance: 0.15,
		},
	}
	switch f.id {
	case "win11-23h2", "win10-22h2":
		ups = append(ups, osUpdate{
			title:    "Feature update to Windows 11, version 24H2",
			kb:       kbFor("feature", "24H2"),
			severity: "Unspecified", source: optional, categories: []string{"Feature Packs", "Upgrades"},
			reboot: true, released: time.Date(2024, 10, 1, 0, 0, 0, 0, time.UTC), chance: 0.3,
		})
	case "srv2019":
		ups = append(ups, osUpdate{
			title:    fmt.Sprintf("%s Servicing Stack Update for Windows Server 2019 for x64-based Systems", month),
			kb:       kbFor(f.id, month, "ssu"),
			severity: "Critical", source: mandatory, categories: []string{"Security Updates"},
			released: patchTuesday, chance: 0.3,
		})
	}
	if p.kind == kindWorkstation && !p.hw.virtual {
		ups = append(ups, osUpdate{
			title: "Intel Corporation - Display - 32.0.101.6129",
			// drivers have no KB; Windows Update names them by update id
			productKey: "a6c3f1d2-5b7e-4c1a-9e0f-" + fmt.Sprintf("%012x", hash64("driver", "32.0.101.6129")&0xffffffffffff),
			severity:   "Low", source: optional, categories: []string{"Drivers"},
			released: patchTuesday.AddDate(0, 0, -20), chance: 0.15,
		})
	}
	if p.role == "SQL" {
		ups = append(ups, osUpdate{
			title:    fmt.Sprintf("Security Update for SQL Server %s RTM CU%d", p.sqlVersion, map[string]int{"2022": 16, "2019": 29}[p.sqlVersion]),
			kb:       kbFor("sql"+p.sqlVersion, month),
			severity: "Important", source: mandatory, categories: []string{"Security Updates"},
			released: patchTuesday, chance: 0.6,
		})
	}
	for i := range ups {
		if ups[i].kb != "" && !strings.Contains(ups[i].title, ups[i].kb) {
			ups[i].title += " (" + ups[i].kb + ")"
		}
	}
	return ups
}

func (u osUpdate) wire() agentproto.Update {
	rel := u.released
	return agentproto.Update{
		Title: u.title, KB: strOrNil(u.kb), Severity: ptr(u.severity), Source: u.source,
		Categories: u.categories, RebootRequired: u.reboot, ReleaseDate: &rel,
		ProductKey: strOrNil(u.productKey),
	}
}

// osUpdatesMissing draws which of the offered OS updates are missing.
func (g *generator) osUpdatesMissing(r *rand.Rand, offered []osUpdate) {
	g.osPatched = true
	for _, u := range offered {
		if chance(r, u.chance) {
			g.inv.Updates = append(g.inv.Updates, u.wire())
			if u.patchesOS {
				g.osPatched = false
			}
		}
	}
}

func (g *generator) windowsUpdates() {
	r := newRand(g.p.seed, g.p.index, "updates")
	total := between(r, 6, 14)
	g.osUpdatesMissing(r, g.p.windowsOSUpdates())
	n := max(total-len(g.inv.Updates), 1)
	g.thirdPartyUpdates(g.outdate(r, n), true)
}

func (g *generator) macSoftware() {
	r := newRand(g.p.seed, g.p.index, "software")
	for _, name := range macSystemApps {
		h := hash64("macapp", name)
		v := fmt.Sprintf("%d.%d", 1+h%17, (h/17)%10)
		if name == "Safari" {
			v = "18.1"
		}
		g.apps = append(g.apps, app{
			prod:    product{name: name, publisher: "Apple Inc.", install: "app", versions: []string{v}},
			version: v,
			sw: agentproto.Software{Name: name, Publisher: ptr("Apple Inc."), InstallType: ptr("app"),
				InstalledFor: ptr("all users"), InstallDate: ptr(g.p.installed.Format(dateLayout))},
		})
	}
	probs := make([]float64, len(macCatalog))
	for i, pr := range macCatalog {
		probs[i] = pr.pWS
		switch pr.name {
		case "CrowdStrike Falcon":
			probs[i] = b2f(g.p.antivirus == "CrowdStrike Falcon")
		case "Microsoft Defender":
			probs[i] = b2f(g.p.antivirus == "Microsoft Defender")
		}
	}
	for _, i := range choose(r, probs, 140-len(macSystemApps), 160-len(macSystemApps)) {
		g.addApp(r, macCatalog[i])
	}
}

func (g *generator) macUpdates() {
	r := newRand(g.p.seed, g.p.index, "updates")
	total := between(r, 6, 14)
	released := Epoch.AddDate(0, 0, -20)
	seq := osUpdate{
		title: "macOS Sequoia 15.1.1", productKey: "macOS Sequoia 15.1.1-24B91",
		severity: "Important", source: mandatory, categories: []string{"Security Updates"},
		reboot: true, released: released, chance: 0.65, patchesOS: true,
	}
	var offered []osUpdate
	if g.p.os.id == "macos-15" {
		offered = append(offered, seq)
	} else {
		son := seq
		son.title, son.productKey = "macOS Sonoma 14.7.1", "macOS Sonoma 14.7.1-23H222"
		seq.source, seq.severity, seq.categories, seq.patchesOS, seq.chance = optional, "Unspecified", []string{"Feature Packs", "Upgrades"}, false, 0.5
		offered = append(offered, son, seq, osUpdate{
			title: "Safari 18.1.1", productKey: "Safari18.1.1SonomaAuto-18.1.1",
			severity: "Important", source: mandatory, categories: []string{"Security Updates"},
			released: released, chance: 0.5,
		})
	}
	offered = append(offered,
		osUpdate{
			title: "XProtectPayloads", productKey: "XProtectPayloads_10_15-149",
			severity: "Unspecified", source: mandatory, categories: []string{"Definition Updates"},
			released: Epoch.AddDate(0, 0, -3), chance: 0.3,
		},
		osUpdate{
			title: "Command Line Tools for Xcode 16.1", productKey: "Command Line Tools for Xcode-16.1",
			severity: "Low", source: optional, categories: []string{"Updates"},
			released: Epoch.AddDate(0, 0, -26), chance: 0.2,
		})
	g.osUpdatesMissing(r, offered)
	n := max(total-len(g.inv.Updates), 1)
	g.thirdPartyUpdates(g.outdate(r, n), false)
}

func (g *generator) linuxName(pkg linuxPackage) string {
	if g.p.os.family == "rpm" {
		return pkg.rpm
	}
	return pkg.deb
}

// linuxVersion spells the package version of a patch level the way the
// endpoint's distribution does.
func linuxVersion(pkg linuxPackage, f osFlavor, level int) string {
	// binary packages of one source share its upstream version, and so
	// their revision and patch level
	h := hash64(pkg.upstream, f.distro)
	rev := 1 + int(h%4)
	switch {
	case f.family == "rpm" && pkg.updates:
		return fmt.Sprintf("%s-%d.el9_5", pkg.upstream, rev+level)
	case f.family == "rpm":
		return fmt.Sprintf("%s-%d.el9", pkg.upstream, rev)
	case !pkg.updates:
		return fmt.Sprintf("%s-%d", pkg.upstream, rev)
	case f.distro == "debian":
		return fmt.Sprintf("%s-%d+deb12u%d", pkg.upstream, rev, level)
	default:
		return fmt.Sprintf("%s-%dubuntu0.%s.%d", pkg.upstream, rev, f.version, level)
	}
}

// latestLevel is the current patch level of a package on a distribution.
func latestLevel(pkg linuxPackage, f osFlavor) int {
	return 2 + int(hash64("level", pkg.upstream, f.distro)%6)
}

func (g *generator) linuxSoftwareAndUpdates() {
	r := newRand(g.p.seed, g.p.index, "software")
	f := g.p.os
	probs := make([]float64, len(linuxCatalog))
	for i, pkg := range linuxCatalog {
		if g.linuxName(pkg) == "" || (pkg.role != "" && pkg.role != g.p.role) {
			continue
		}
		probs[i] = pkg.p
		if strings.Contains(pkg.deb, "vm-tools") {
			probs[i] = b2f(g.p.hw.manufacturer == "VMware, Inc.")
		} else if pkg.deb == "qemu-guest-agent" {
			probs[i] = b2f(g.p.hw.manufacturer == "QEMU")
		}
	}
	chosen := choose(r, probs, 140, 160)

	ur := newRand(g.p.seed, g.p.index, "updates")
	total := between(ur, 6, 14)
	var updatable []int
	for _, i := range chosen {
		if linuxCatalog[i].updates {
			updatable = append(updatable, i)
		}
	}
	ur.Shuffle(len(updatable), func(a, b int) { updatable[a], updatable[b] = updatable[b], updatable[a] })
	behind := map[int]bool{}
	for _, i := range updatable[:min(total, len(updatable))] {
		behind[i] = true
	}

	publisher := map[string]string{
		"ubuntu": "Ubuntu Developers <ubuntu-devel-discuss@lists.ubuntu.com>",
		"debian": "Debian Project <debian-devel@lists.debian.org>",
		"rhel":   "Red Hat, Inc.",
		"rocky":  "Rocky Enterprise Software Foundation",
	}[f.distro]
	installType := f.family
	for _, i := range chosen {
		pkg := linuxCatalog[i]
		name := g.linuxName(pkg)
		latest := latestLevel(pkg, f)
		level := latest
		if behind[i] {
			level = latest - 1 - ur.IntN(2)
		}
		pub := publisher
		if pkg.vendor != "" {
			pub = pkg.vendor
		}
		a := app{
			prod:    product{name: name, publisher: pub, winget: name, install: installType, versions: []string{linuxVersion(pkg, f, latest)}},
			version: linuxVersion(pkg, f, level),
			sw: agentproto.Software{Name: name, Publisher: ptr(pub), InstallType: ptr(installType),
				InstalledFor: ptr("all users"), InstallDate: ptr(installDate(r, g.p, 400))},
			outdated: behind[i],
		}
		if pkg.p >= 1 && !pkg.updates {
			a.sw.InstallDate = ptr(g.p.installed.Format(dateLayout))
		}
		g.apps = append(g.apps, a)
		if !behind[i] {
			continue
		}
		if pkg.reboot && strings.HasPrefix(name, "linux-image") || name == "kernel" {
			g.kernelOld = true
		}
		u := agentproto.Update{
			Title:            linuxUpdateTitle(pkg, name, f, linuxVersion(pkg, f, latest)),
			Source:           optional,
			Categories:       []string{"Bug Fixes"},
			PackageName:      ptr(name),
			InstalledVersion: ptr(a.version),
			LatestVersion:    ptr(linuxVersion(pkg, f, latest)),
			RebootRequired:   pkg.reboot,
			ReleaseDate:      releaseDay(name, f.distro),
			Distro:           ptr(f.distro),
			Severity:         ptr("Unspecified"),
		}
		if pkg.security {
			u.Source = mandatory
			u.Categories = []string{"Security Updates"}
			u.Severity = ptr([]string{"Critical", "Important", "Moderate", "Low"}[weighted(rand.New(rand.NewPCG(hash64(name, f.distro), 1)), 10, 40, 35, 15)])
		}
		g.inv.Updates = append(g.inv.Updates, u)
	}
	g.osPatched = !g.kernelOld
}

func linuxUpdateTitle(pkg linuxPackage, name string, f osFlavor, latest string) string {
	n := 1000 + hash64("advisory", name, f.distro)%9000
	switch {
	case f.family == "rpm" && pkg.security:
		prefix := "RHSA"
		if f.distro == "rocky" {
			prefix = "RLSA"
		}
		return fmt.Sprintf("%s-%d:%d: %s security update", prefix, Epoch.Year(), n, name)
	case f.family == "rpm":
		prefix := "RHBA"
		if f.distro == "rocky" {
			prefix = "RLBA"
		}
		return fmt.Sprintf("%s-%d:%d: %s bug fix update", prefix, Epoch.Year(), n, name)
	case pkg.security && f.distro == "ubuntu":
		return fmt.Sprintf("USN-%d-1: %s vulnerabilities (%s)", 7000+n%1000, name, latest)
	case pkg.security:
		return fmt.Sprintf("DSA-%d-1: %s security update (%s)", 5700+n%300, name, latest)
	default:
		return fmt.Sprintf("%s %s", name, latest)
	}
}

// updateIdentity names an update the same way whether it comes from an
// inventory row or from a DEPLOY_UPDATES payload.
func updateIdentity(u agentproto.Update) string {
	switch {
	case u.KB != nil && *u.KB != "KB2267602" && *u.KB != "KB890830" && *u.KB != "KB4052623":
		return "kb:" + *u.KB
	case u.WingetID != nil && u.LatestVersion != nil:
		return "winget:" + *u.WingetID + "@" + *u.LatestVersion
	case u.PackageName != nil && u.LatestVersion != nil:
		return "pkg:" + *u.PackageName + "@" + *u.LatestVersion
	default:
		return "title:" + u.Title
	}
}

// matches says whether a deploy order names this inventory update.
func matches(d agentproto.DeployUpdate, u agentproto.Update) bool {
	eq := func(a, b *string) bool { return a != nil && b != nil && *a == *b }
	switch {
	case eq(d.KB, u.KB) && (d.Title == "" || d.Title == u.Title || u.KB == nil):
		return true
	case eq(d.WingetID, u.WingetID) && (d.LatestVersion == nil || eq(d.LatestVersion, u.LatestVersion)):
		return true
	case eq(d.PackageName, u.PackageName) && (d.LatestVersion == nil || eq(d.LatestVersion, u.LatestVersion)):
		return true
	case d.Title != "" && d.Title == u.Title:
		return true
	case eq(d.ProductKey, u.ProductKey):
		return true
	case d.Key != "" && u.ProductKey != nil && d.Key == *u.ProductKey:
		return true
	}
	return false
}

// applyChanges brings the generated state up to date with what commands did.
func (g *generator) applyChanges() {
	if g.ch != nil {
		kept := g.inv.Updates[:0]
		for _, u := range g.inv.Updates {
			at, done := g.ch.Installed[updateIdentity(u)]
			if !done {
				kept = append(kept, u)
				continue
			}
			g.installedNow = append(g.installedNow, installedUpdate{u, at})
			day := at[:min(len(at), len(dateLayout))]
			if u.Source != "Applications" && (u.KB != nil && strings.Contains(u.Title, "Cumulative Update for") && !strings.Contains(u.Title, ".NET") ||
				u.ProductKey != nil && strings.HasPrefix(*u.ProductKey, "macOS") && strings.Contains(*u.ProductKey, g.p.os.newBuild) ||
				u.PackageName != nil && (strings.HasPrefix(*u.PackageName, "linux-image") || *u.PackageName == "kernel")) {
				g.osPatched = true
			}
			for i := range g.apps {
				a := &g.apps[i]
				if a.outdated && u.LatestVersion != nil && (u.WingetID != nil && *u.WingetID == a.prod.winget || u.PackageName != nil && *u.PackageName == a.prod.winget) {
					a.version = *u.LatestVersion
					a.outdated = false
					a.sw.InstallDate = ptr(day)
				}
			}
		}
		g.inv.Updates = kept
		for _, id := range g.ch.Added {
			if pr, ok := catalogByID(g.p, id); ok && !g.hasApp(pr.name) {
				g.apps = append(g.apps, app{prod: pr, version: pr.latest(), sw: agentproto.Software{
					Name: pr.name, Publisher: strOrNil(pr.publisher), InstallType: strOrNil(pr.install),
					InstalledFor: ptr("all users"), InstallDate: ptr(Epoch.Format(dateLayout)),
				}})
			}
		}
		if len(g.ch.Removed) > 0 {
			g.apps = slices.DeleteFunc(g.apps, func(a app) bool { return slices.Contains(g.ch.Removed, a.prod.name) })
			g.inv.Updates = slices.DeleteFunc(g.inv.Updates, func(u agentproto.Update) bool {
				return u.Source == "Applications" && slices.ContainsFunc(g.ch.Removed, func(n string) bool { return strings.HasPrefix(u.Title, n+" ") })
			})
		}
	}
	// sorted by name, case-insensitively, as package managers list them
	type keyed struct {
		key string
		sw  agentproto.Software
	}
	rows := make([]keyed, len(g.apps))
	for i, a := range g.apps {
		sw := a.sw
		sw.Version = ptr(a.version)
		rows[i] = keyed{strings.ToLower(sw.Name), sw}
	}
	slices.SortStableFunc(rows, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	g.inv.Software = make([]agentproto.Software, len(rows))
	for i, r := range rows {
		g.inv.Software[i] = r.sw
	}
	if g.inv.Updates == nil {
		g.inv.Updates = []agentproto.Update{}
	}
}

func (g *generator) hasApp(name string) bool {
	return slices.ContainsFunc(g.apps, func(a app) bool { return a.prod.name == name })
}

// catalogByID finds a product by its package id for DEPLOY_SOFTWARE.
func catalogByID(p *profile, id string) (product, bool) {
	list := windowsCatalog
	if p.kind == kindMac {
		list = macCatalog
	}
	if p.kind == kindLinux {
		for _, pkg := range linuxCatalog {
			name := pkg.deb
			if p.os.family == "rpm" {
				name = pkg.rpm
			}
			if name != "" && name == id {
				return product{name: name, winget: name, install: p.os.family, versions: []string{linuxVersion(pkg, p.os, latestLevel(pkg, p.os))}}, true
			}
		}
		return product{}, false
	}
	for _, pr := range list {
		if pr.winget == id {
			return pr, true
		}
	}
	return product{}, false
}

func (g *generator) system() {
	p := g.p
	build, version := g.osBuild()
	typ := "workstation"
	if p.isServer() {
		typ = "server"
	}
	usable := float64(p.ramGB) - 0.3 - float64(p.ramGB)*0.006
	if p.kind == kindMac {
		usable = float64(p.ramGB)
	}
	g.inv.System = agentproto.System{
		Hostname:     p.hostname,
		OS:           ptr(p.osName),
		OSVersion:    ptr(version),
		OSBuild:      ptr(build),
		Arch:         p.arch(),
		Type:         typ,
		Domain:       strOrNil(p.domain),
		ADOU:         strOrNil(p.adOU),
		Manufacturer: ptr(p.hw.manufacturer),
		Model:        ptr(p.hw.model),
		SerialNumber: strOrNil(p.serial),
		CPU:          ptr(p.cpu.name),
		Cores:        ptr(p.cpu.cores),
		RAMGB:        ptr(round1(usable)),
		MACAddresses: []string{p.mac},
		Antivirus:    strOrNil(p.antivirus),
		TimeZone:     ptr(p.site.tz),
	}
}

// osBuild answers the OS build and version the endpoint reports: this
// month's when its update is installed; otherwise last month's, or on a
// Windows host that lags further behind, an older month's.
func (g *generator) osBuild() (build, version string) {
	p := g.p
	build, version = p.os.oldBuild, p.os.version
	switch {
	case g.osPatched:
		build = p.os.newBuild
		if p.kind == kindMac {
			version = p.os.release
		}
	case p.osLag > 0 && p.osLag <= len(p.os.behind):
		build = p.os.behind[p.osLag-1]
	}
	return build, version
}

func (p *profile) arch() string {
	if p.kind == kindMac {
		return "arm64"
	}
	return "amd64"
}

// disk is one volume with its fill level, shared by Disks and the datasets.
type disk struct {
	mount, fs, label, device string
	sizeGB, freeGB           float64
}

func (p *profile) diskLayout() []disk {
	r := newRand(p.seed, p.index, "disks")
	free := func(size float64) float64 {
		frac := 0.15 + r.Float64()*0.6
		if chance(r, 0.07) {
			frac = 0.02 + r.Float64()*0.07 // the low-disk-space report needs some
		}
		return round1(size * frac)
	}
	var ds []disk
	switch p.platform {
	case "windows":
		ds = append(ds, disk{mount: "C:", fs: "NTFS", label: "OS", device: "\\\\?\\Volume{" + p.machineUID + "}", sizeGB: p.diskGB})
		if p.dataDiskGB > 0 {
			ds = append(ds, disk{mount: "D:", fs: "NTFS", label: "Data", device: "\\\\?\\Volume{" + machineUID(p.seed, -p.index-1) + "}", sizeGB: p.dataDiskGB})
		}
	case "linux":
		fs := "ext4"
		root := "/dev/sda2"
		if p.os.family == "rpm" {
			fs, root = "xfs", "/dev/mapper/rl-root"
			if p.os.distro == "rhel" {
				root = "/dev/mapper/rhel-root"
			}
		} else if p.hw.manufacturer == "QEMU" {
			root = "/dev/vda2"
		}
		ds = append(ds,
			disk{mount: "/", fs: fs, device: root, sizeGB: round1(p.diskGB - 1.5)},
			disk{mount: "/boot/efi", fs: "vfat", device: strings.TrimSuffix(root, "2") + "1", sizeGB: 0.5},
		)
		if p.dataDiskGB > 0 {
			ds = append(ds, disk{mount: "/srv", fs: fs, device: "/dev/sdb1", sizeGB: p.dataDiskGB})
		}
	case "macos":
		ds = append(ds, disk{mount: "/", fs: "apfs", label: "Macintosh HD", device: "/dev/disk3s1s1", sizeGB: p.diskGB},
			disk{mount: "/System/Volumes/Data", fs: "apfs", label: "Data", device: "/dev/disk3s5", sizeGB: p.diskGB})
	}
	for i := range ds {
		ds[i].freeGB = free(ds[i].sizeGB)
	}
	if p.platform == "macos" {
		ds[0].freeGB = ds[1].freeGB // APFS volumes share the container
	}
	return ds
}

func (g *generator) disks() {
	for _, d := range g.p.diskLayout() {
		if d.mount == "/boot/efi" || d.mount == "/System/Volumes/Data" {
			continue
		}
		g.inv.Disks = append(g.inv.Disks, agentproto.Disk{Drive: d.mount, SizeGB: ptr(d.sizeGB), FreeGB: ptr(d.freeGB)})
	}
}
