package match

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/vulns/feeds"
)

// Microsoft 365 Apps and Office (Click-to-Run) are matched by build.
// Microsoft's security update data gives no build for them: a CVE's fix for
// Microsoft 365 Apps, Office LTSC 2021/2024 and Office 2019 is "Click to
// Run", the builds released on the month's Patch Tuesday. Microsoft's
// release history of Microsoft 365 Apps (feeds.OfficeBuild) says which builds
// those are, per update channel. A build belongs to one version line (its
// first number: 19328 is Version 2510 in every channel), and the builds of
// a line only grow, so an install is fixed when its build is at or above
// the first build of its line released on or after that Patch Tuesday:
//
//   - 16.0.19328.20178 (2510, released 2025-11-04) has the November CVEs,
//     fixed in 16.0.19328.20190 (Current Channel, 2025-11-11);
//   - 16.0.19231.20246 (2509, Monthly Enterprise Channel, 2025-11-11) has
//     none of them;
//   - a line without a release since that Patch Tuesday (out of support) has
//     the CVE with no fix in its line: the fix is moving to a newer version
//     (FixedIn is then the Current Channel build of that Patch Tuesday).
//
// Volume-licensed Office LTSC 2024, Office LTSC 2021 and Office 2019 have
// update histories of their own ("Office LTSC 2021 Volume Licensed":
// Version 2108, builds 16.0.14332.x; Office LTSC 2024: 2408, 17932.x;
// Office 2019: 1808, whose builds change their first number too, 10405,
// 10407, 10416, 10417…). Such an install (of the family, its build not
// above the newest of the family's history) is fixed when its build is at
// or above the family's first build released on or after the Patch
// Tuesday, both numbers compared:
//
//   - 16.0.14332.20615 (LTSC 2021, 2023-12-12) has CVE-2024-21413, fixed
//     in 16.0.14332.20637 (2024-02-13);
//   - 16.0.10405.20015 (Office 2019, 2023-12-12) has it too, fixed in
//     16.0.10407.20032.
//
// Not matched: builds of a line the history does not list (Insider
// builds, a volume-licensed family without a history), and CVEs of months
// the history (of that family, for volume-licensed Office) does not reach
// yet. Office 2016 (MSI) names its fixes by KB and file version, which
// installed-software inventories do not show.

// officeFamily maps an MSRC product name to the family its Click-to-Run
// fixes apply to, "" for other products (Mac, Android, Office 2016 MSI,
// SharePoint...).
func officeFamily(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "mac"), strings.Contains(n, "android"), strings.Contains(n, "ios"):
		return ""
	case strings.HasPrefix(n, "microsoft 365 apps"):
		return "Microsoft 365 Apps"
	case strings.HasPrefix(n, "microsoft office ltsc 2024"):
		return "Microsoft Office LTSC 2024"
	case strings.HasPrefix(n, "microsoft office ltsc 2021"):
		return "Microsoft Office LTSC 2021"
	case strings.HasPrefix(n, "microsoft office 2019"):
		return "Microsoft Office 2019"
	}
	return ""
}

// InstalledOfficeFamily maps an installed product ("Microsoft 365 Apps for
// enterprise - en-us", "Microsoft Office LTSC Professional Plus 2021 -
// en-us", "Microsoft Office Home and Business 2019 - en-us") to its family,
// "" for anything else (the Click-to-Run components, Office 2016 and older,
// add-ins).
func InstalledOfficeFamily(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	switch {
	case strings.HasPrefix(n, "microsoft 365 apps for"), strings.HasPrefix(n, "microsoft office 365 proplus"),
		strings.HasPrefix(n, "microsoft 365 - "), strings.HasPrefix(n, "microsoft 365 business"):
		return "Microsoft 365 Apps"
	case !strings.HasPrefix(n, "microsoft office "):
		return ""
	case strings.Contains(n, "2024"):
		return "Microsoft Office LTSC 2024"
	case strings.Contains(n, "2021"):
		return "Microsoft Office LTSC 2021"
	case strings.Contains(n, "2019"):
		return "Microsoft Office 2019"
	}
	return ""
}

// volumeLicensedFamily maps a volume-licensed history's channel to its
// family, "" for the channels of Microsoft 365 Apps.
func volumeLicensedFamily(channel string) string {
	switch strings.ToLower(strings.TrimSpace(channel)) {
	case "office ltsc 2024 volume licensed":
		return "Microsoft Office LTSC 2024"
	case "office ltsc 2021 volume licensed":
		return "Microsoft Office LTSC 2021"
	case "office 2019 volume licensed":
		return "Microsoft Office 2019"
	}
	return ""
}

// officeCVE is a CVE fixed by the Click-to-Run builds of one Patch Tuesday.
type officeCVE struct {
	cve  string
	date time.Time
}

type officeRelease struct {
	date    time.Time
	minor   int
	channel string
}

// officeIndex is the Office part of the index.
type officeIndex struct {
	cves map[string][]officeCVE // family → CVEs, by date then id
	// lines maps a version line (19328) to its releases, by date then
	// build.
	lines map[int][]officeRelease
	// current lists the Current Channel releases by date.
	current []officeRelease
	// currentMajor is the line of each entry of current.
	currentMajor []int
	latest       time.Time // the newest release day of the history
	// vl holds the volume-licensed histories: family → releases by date
	// then build.
	vl map[string][]vlRelease
}

// vlRelease is one build of a volume-licensed history.
type vlRelease struct {
	date         time.Time
	major, minor int
}

func (r vlRelease) less(major, minor int) bool {
	return r.major < major || r.major == major && r.minor < minor
}

func (b *Builder) addOfficeFix(f MSRCFix) {
	fam := officeFamily(f.ProductName)
	day, ok := feeds.PatchTuesday(f.Release)
	if fam == "" || !ok {
		return
	}
	if b.officeFixes == nil {
		b.officeFixes = map[string]map[string]time.Time{}
	}
	m := b.officeFixes[fam]
	if m == nil {
		m = map[string]time.Time{}
		b.officeFixes[fam] = m
	}
	cve := b.intern(f.CVEID)
	if o, ok := m[cve]; !ok || day.Before(o) {
		m[cve] = day
		if !ok {
			b.rules++
		}
	}
}

// AddOfficeBuild adds one release of the Microsoft 365 Apps release
// history.
func (b *Builder) AddOfficeBuild(r feeds.OfficeBuild) {
	major, minor, ok := feeds.ParseOfficeBuild(r.Build)
	if !ok || r.Released.IsZero() {
		return
	}
	b.officeBuilds = append(b.officeBuilds, officeBuildRow{major: major, family: volumeLicensedFamily(r.Channel),
		rel: officeRelease{date: r.Released.UTC(), minor: minor, channel: r.Channel}})
}

type officeBuildRow struct {
	major  int
	family string // a volume-licensed history's family, "" for Microsoft 365 Apps
	rel    officeRelease
}

func buildOffice(fixes map[string]map[string]time.Time, rows []officeBuildRow) *officeIndex {
	if len(fixes) == 0 || len(rows) == 0 {
		return nil
	}
	ox := &officeIndex{cves: map[string][]officeCVE{}, lines: map[int][]officeRelease{}, vl: map[string][]vlRelease{}}
	for fam, m := range fixes {
		list := make([]officeCVE, 0, len(m))
		for cve, day := range m {
			list = append(list, officeCVE{cve: cve, date: day})
		}
		sort.Slice(list, func(i, j int) bool {
			if !list[i].date.Equal(list[j].date) {
				return list[i].date.Before(list[j].date)
			}
			return list[i].cve < list[j].cve
		})
		ox.cves[fam] = list
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if !a.rel.date.Equal(b.rel.date) {
			return a.rel.date.Before(b.rel.date)
		}
		if a.major != b.major {
			return a.major < b.major
		}
		return a.rel.minor < b.rel.minor
	})
	for _, r := range rows {
		if r.family != "" {
			ox.vl[r.family] = append(ox.vl[r.family], vlRelease{date: r.rel.date, major: r.major, minor: r.rel.minor})
			continue
		}
		ox.lines[r.major] = append(ox.lines[r.major], r.rel)
		if r.rel.channel == "Current" {
			ox.current = append(ox.current, r.rel)
			ox.currentMajor = append(ox.currentMajor, r.major)
		}
		if r.rel.date.After(ox.latest) {
			ox.latest = r.rel.date
		}
	}
	return ox
}

// fixedIn answers the first build of line major released on or after day,
// and whether the line has one; known is false when the history cannot say
// (the line is not listed, or the history ends before day).
func (ox *officeIndex) fixedIn(major int, day time.Time) (minor int, inLine, known bool) {
	rels := ox.lines[major]
	if len(rels) == 0 || ox.latest.Before(day) {
		return 0, false, false
	}
	i := sort.Search(len(rels), func(i int) bool { return !rels[i].date.Before(day) })
	if i == len(rels) {
		return 0, false, true
	}
	minor = rels[i].minor
	for _, r := range rels[i+1:] {
		minor = min(minor, r.minor)
	}
	return minor, true, true
}

// volumeLicensed reports whether a build of family is one of its
// volume-licensed history: the family has a history and the build is not
// above its newest build (retail installs of the family run Current
// Channel builds, newer than any volume-licensed one).
func (ox *officeIndex) volumeLicensed(family string, major, minor int) bool {
	rels := ox.vl[family]
	if len(rels) == 0 {
		return false
	}
	newest := rels[0]
	for _, r := range rels[1:] {
		if newest.less(r.major, r.minor) {
			newest = r
		}
	}
	return !newest.less(major, minor)
}

// fixedInVL answers the family's first build released on or after day;
// known is false when its history ends before day.
func (ox *officeIndex) fixedInVL(family string, day time.Time) (fix vlRelease, known bool) {
	rels := ox.vl[family]
	i := sort.Search(len(rels), func(i int) bool { return !rels[i].date.Before(day) })
	if i == len(rels) {
		return vlRelease{}, false
	}
	fix = rels[i]
	for _, r := range rels[i+1:] {
		if r.less(fix.major, fix.minor) {
			fix = r
		}
	}
	return fix, true
}

// currentOn answers the Current Channel build first released on or after
// day ("16.0.19328.20190"), "" when the history has none.
func (ox *officeIndex) currentOn(day time.Time) string {
	i := sort.Search(len(ox.current), func(i int) bool { return !ox.current[i].date.Before(day) })
	if i == len(ox.current) {
		return ""
	}
	return officeBuildString(ox.currentMajor[i], ox.current[i].minor)
}

func officeBuildString(major, minor int) string {
	return "16.0." + strconv.Itoa(major) + "." + strconv.Itoa(minor)
}

// matchOffice adds the findings of a Click-to-Run Office install.
func (m *matcher) matchOffice(sw Software) {
	ox := m.ix.office
	if ox == nil {
		return
	}
	fam := InstalledOfficeFamily(sw.Name)
	if fam == "" || !strings.HasPrefix(strings.TrimSpace(sw.Version), "16.0.") {
		return
	}
	major, minor, ok := feeds.ParseOfficeBuild(sw.Version)
	if !ok {
		return
	}
	if fam != "Microsoft 365 Apps" && ox.volumeLicensed(fam, major, minor) {
		m.matchOfficeVL(fam, sw.Version, major, minor)
		return
	}
	var (
		lastDay            time.Time
		fix                string
		affected, haveLast bool
	)
	for _, c := range ox.cves[fam] {
		if !haveLast || !c.date.Equal(lastDay) {
			lastDay, haveLast = c.date, true
			fixMinor, inLine, known := ox.fixedIn(major, c.date)
			switch {
			case !known:
				affected = false
			case inLine:
				affected, fix = minor < fixMinor, officeBuildString(major, fixMinor)
			default:
				affected, fix = true, ox.currentOn(c.date)
			}
		}
		if affected {
			m.add(Finding{CVEID: c.cve, Software: fam, Version: sw.Version, FixedIn: fix, Source: feeds.ClickToRun})
		}
	}
}

// matchOfficeVL adds the findings of a volume-licensed Office install.
func (m *matcher) matchOfficeVL(fam, version string, major, minor int) {
	ox := m.ix.office
	var (
		lastDay  time.Time
		fix      vlRelease
		known    bool
		haveLast bool
	)
	for _, c := range ox.cves[fam] {
		if !haveLast || !c.date.Equal(lastDay) {
			lastDay, haveLast = c.date, true
			fix, known = ox.fixedInVL(fam, c.date)
		}
		if known && !fix.less(major, minor) && (fix.major != major || fix.minor != minor) {
			m.add(Finding{CVEID: c.cve, Software: fam, Version: version, FixedIn: officeBuildString(fix.major, fix.minor), Source: feeds.ClickToRun})
		}
	}
}

// OfficeCVEs answers the number of CVEs with a Click-to-Run fix indexed
// (each family counted), 0 without a release history.
func (ix *Index) OfficeCVEs() int {
	if ix.office == nil {
		return 0
	}
	n := 0
	for _, l := range ix.office.cves {
		n += len(l)
	}
	return n
}
