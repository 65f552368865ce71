package match

import (
	"slices"
	"sort"
	"strings"

	"github.com/patchd/patchd/internal/vulns/feeds"
	"github.com/patchd/patchd/internal/vulns/version"
)

// Software is one installed application or package of an endpoint, as the
// agent reports it.
type Software struct {
	Name        string
	Publisher   string
	Version     string
	InstallType string // "deb", "rpm", "msi", "exe", "app", "winget", …
	// SourcePackage is the source package of a deb or rpm binary package
	// ("openssl" for libssl3); empty means the binary name is used.
	SourcePackage string
}

// Endpoint is what the matcher needs to know about one computer.
type Endpoint struct {
	Platform string // "windows", "darwin" (or "macos"), "linux"
	Distro   string // Linux distribution and release, "debian:12", "Ubuntu 22.04", "almalinux:9.3"
	// Windows is the endpoint's Windows (name, build with revision,
	// architecture), matched by build against the MSRC data.
	Windows  WindowsOS
	Software []Software
}

// Finding is one vulnerability of one installed product.
type Finding struct {
	CVEID    string
	Software string // the product's display name, or the source package on Linux
	Version  string // the installed version
	FixedIn  string // the first fixed version when the feed says it, else ""
	Source   string // the NVD product ("google:chrome"), the OSV advisory id, or the KB that fixes Windows ("KB5068865")
}

// Match answers the findings of one endpoint: one per (CVE, software),
// grouped by software in the order of ep.Software, CVEs in order within a
// group.
func (ix *Index) Match(ep Endpoint) []Finding {
	var m matcher
	m.ix = ix
	m.platform = platformTargets(ep.Platform)
	distro := feeds.NormalizeEcosystem(ep.Distro)
	scheme := version.SchemeFor(distro)
	seen := make(map[string]bool, 16) // software names that produced findings
	repeated := false
	if m.platform["windows"] && ep.Windows.Build != "" {
		// Windows itself: one group, one product, sorted by CVE.
		m.matchWindows(ep.Windows)
		if len(m.out) > 0 {
			slices.SortFunc(m.out, compareFindings)
			m.out = slices.CompactFunc(m.out, sameFinding)
			seen[m.out[0].Software] = true
		}
	}
	for _, sw := range ep.Software {
		if strings.TrimSpace(sw.Version) == "" {
			continue
		}
		start := len(m.out)
		if isPackage(sw.InstallType) {
			// Distribution packages: OSV only, never NVD CPE ranges.
			if distro != "" {
				m.matchPackage(distro, scheme, sw)
			}
		} else {
			m.matchApplication(sw)
		}
		if len(m.out) == start {
			continue
		}
		group := m.out[start:]
		slices.SortFunc(group, compareFindings)
		m.out = append(m.out[:start], slices.CompactFunc(group, sameFinding)...)
		// Groups are sorted by CVE only when every finding of the group
		// names one product, and that product has not been seen before;
		// otherwise a final pass dedupes across groups.
		name := m.out[start].Software
		if seen[name] {
			repeated = true
		}
		seen[name] = true
		for _, f := range m.out[start+1:] {
			if f.Software != name {
				repeated = true
				break
			}
		}
	}
	if repeated {
		// The same product installed twice, or binaries of one source
		// package: keep one finding per (software, CVE).
		slices.SortStableFunc(m.out, compareFindings)
		m.out = slices.CompactFunc(m.out, sameFinding)
	}
	return m.out
}

func compareFindings(a, b Finding) int {
	if c := strings.Compare(a.Software, b.Software); c != 0 {
		return c
	}
	if c := strings.Compare(a.CVEID, b.CVEID); c != 0 {
		return c
	}
	return strings.Compare(b.FixedIn, a.FixedIn) // a known fix first
}

func sameFinding(a, b Finding) bool { return a.CVEID == b.CVEID && a.Software == b.Software }

type matcher struct {
	ix       *Index
	platform map[string]bool
	out      []Finding
}

func (m *matcher) add(f Finding) { m.out = append(m.out, f) }

func isPackage(installType string) bool {
	switch strings.ToLower(strings.TrimSpace(installType)) {
	case "deb", "dpkg", "rpm":
		return true
	}
	return false
}

// osTargets are target_sw values that name an operating system; a rule
// limited to another operating system than the endpoint's is skipped.
var osTargets = map[string]bool{
	"windows": true, "macos": true, "mac_os_x": true, "mac_os": true, "linux": true, "android": true,
	"iphone_os": true, "ios": true, "ipados": true, "chrome_os": true, "chromeos": true,
}

func platformTargets(p string) map[string]bool {
	switch strings.ToLower(strings.TrimSpace(p)) {
	case "windows", "win", "win32", "win64":
		return map[string]bool{"windows": true}
	case "darwin", "macos", "mac", "osx", "mac_os_x":
		return map[string]bool{"macos": true, "mac_os_x": true, "mac_os": true}
	case "linux":
		return map[string]bool{"linux": true}
	}
	return nil
}

func (m *matcher) targetFits(t string) bool {
	return t == "" || m.platform == nil || !osTargets[t] || m.platform[t]
}

func (m *matcher) matchApplication(sw Software) {
	if m.ix.office != nil && m.platform["windows"] {
		m.matchOffice(sw)
	}
	products := m.ix.catalog.Resolve(sw.Name, sw.Publisher)
	if len(products) == 0 {
		return
	}
	for _, p := range products {
		m.matchProduct(p, sw)
	}
}

func (m *matcher) matchProduct(p Product, sw Software) {
	installed := nvdVersion(p.VersionStyle, sw.Version)
	v := version.Parse(version.Generic, installed)
	var canon string
	for _, key := range p.CPEs {
		pr := m.ix.products[key]
		if pr == nil {
			continue
		}
		emit := func(cve, fixed string) {
			m.add(Finding{CVEID: cve, Software: p.Display, Version: sw.Version, FixedIn: fixed, Source: key})
		}
		// Rules with only an end bound: the affected ones form a suffix.
		i := sort.Search(len(pr.upper), func(i int) bool {
			r := pr.upper[i]
			c := v.Compare(r.end)
			return c < 0 || (r.incl && c == 0)
		})
		for _, r := range pr.upper[i:] {
			if m.targetFits(r.targetSW) {
				fixed := ""
				if !r.incl {
					fixed = r.end.String()
				}
				emit(r.cve, fixed)
			}
		}
		if len(pr.exact) > 0 {
			if canon == "" {
				canon = version.Canonical(version.Generic, installed)
			}
			for _, r := range pr.exact[canon] {
				if m.targetFits(r.targetSW) {
					emit(r.cve, "")
				}
			}
		}
		other := pr.other
		if len(other) > 0 && !pr.otherOpen {
			if c := v.Compare(pr.otherMaxEnd); c > 0 || (c == 0 && !pr.otherMaxIncl) {
				other = nil // past every range
			}
		}
		// Sorted by start: the candidates are the rules starting at or
		// before v.
		n := sort.Search(len(other), func(i int) bool {
			c := v.Compare(other[i].start)
			return c < 0 || (c == 0 && !other[i].startIncl)
		})
		for _, r := range other[:n] {
			if !m.targetFits(r.targetSW) {
				continue
			}
			if r.hasEnd {
				c := v.Compare(r.end)
				if c > 0 || (c == 0 && !r.endIncl) {
					continue
				}
			}
			emit(r.cve, r.fixedIn)
		}
		if p.RangesOnly {
			continue
		}
		for _, r := range pr.all {
			if m.targetFits(r.targetSW) {
				emit(r.cve, "")
			}
		}
	}
}

func (m *matcher) matchPackage(distro string, scheme version.Scheme, sw Software) {
	src := sourceName(sw.SourcePackage)
	if src == "" {
		src = sw.Name
	}
	rules := m.ix.osv[osvKey(distro, src)]
	if len(rules) == 0 {
		return
	}
	installed := strings.TrimSpace(sw.Version)
	for _, r := range rules {
		affected, fixed := osvAffected(scheme, installed, r)
		if !affected {
			continue
		}
		for _, cve := range r.cves {
			m.add(Finding{CVEID: cve, Software: src, Version: installed, FixedIn: fixed, Source: r.id})
		}
	}
}

// osvAffected applies an advisory's ranges: introduced <= v < fixed, or
// introduced <= v <= last_affected, or v listed explicitly.
func osvAffected(s version.Scheme, v string, r osvRule) (bool, string) {
	for _, rg := range r.ranges {
		if rg.Introduced != "" && rg.Introduced != "0" && cmpPackage(s, v, rg.Introduced) < 0 {
			continue
		}
		switch {
		case rg.Fixed != "":
			if cmpPackage(s, v, rg.Fixed) < 0 {
				return true, rg.Fixed
			}
		case rg.LastAffected != "":
			if cmpPackage(s, v, rg.LastAffected) <= 0 {
				return true, ""
			}
		default:
			return true, "" // not fixed yet
		}
	}
	for _, lv := range r.versions {
		if cmpPackage(s, v, lv) == 0 {
			return true, ""
		}
	}
	return false, ""
}

// cmpPackage compares an installed package version with an advisory's
// bound. Agents often report rpm versions without their epoch
// ("3.0.7-24.el9" for "1:3.0.7-24.el9"); the bound's epoch is then ignored
// rather than making every such package look older than every fix.
func cmpPackage(s version.Scheme, installed, bound string) int {
	if s == version.RPM && !hasEpoch(installed) {
		if i := strings.IndexByte(bound, ':'); i > 0 && isDigits(bound[:i]) {
			bound = bound[i+1:]
		}
	}
	return version.Compare(s, installed, bound)
}

func hasEpoch(v string) bool {
	i := strings.IndexByte(v, ':')
	return i > 0 && isDigits(v[:i])
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// sourceName cleans a source package field: dpkg's "openssl (3.0.11-1)"
// and rpm's "openssl-3.0.7-27.el9.src.rpm" both give "openssl".
func sourceName(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ' '); i >= 0 {
		s = s[:i]
	}
	if strings.HasSuffix(s, ".src.rpm") {
		s = strings.TrimSuffix(s, ".src.rpm")
		// name-version-release: drop the last two dash-separated fields.
		for range 2 {
			if i := strings.LastIndexByte(s, '-'); i > 0 {
				s = s[:i]
			}
		}
	}
	return s
}
