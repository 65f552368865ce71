// Package match finds the vulnerabilities of an endpoint's installed
// software. Applications (Windows, macOS and non-packaged software) are
// mapped to NVD products through a catalog (cpemap.json) and compared with
// the CPE version ranges of the NVD; Linux distribution packages (deb, rpm)
// are compared only with the OSV advisories of their distribution release,
// by source package and with the distribution's version order, so that
// backported fixes count (an upstream version number says little about a
// patched distribution package). The index is built once and read by any
// number of goroutines.
package match

import (
	"sort"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/vulns/feeds"
	"github.com/patchd/patchd/internal/vulns/version"
)

// Builder collects feed records into an Index. It is not safe for
// concurrent use.
type Builder struct {
	products map[string]*productRules
	osv      map[string][]osvRule
	windows  map[string]*winProduct // MSRC product id → Windows product
	// officeFixes: Office family → CVE → the Patch Tuesday of its
	// Click-to-Run fix; officeBuilds: the Microsoft 365 Apps release history.
	officeFixes  map[string]map[string]time.Time
	officeBuilds []officeBuildRow
	rules        int
	strings      map[string]string // interned CVE ids and bounds
}

// NewBuilder answers an empty builder.
func NewBuilder() *Builder {
	return &Builder{products: map[string]*productRules{}, osv: map[string][]osvRule{}, strings: map[string]string{}}
}

func (b *Builder) intern(s string) string {
	if v, ok := b.strings[s]; ok {
		return v
	}
	b.strings[s] = s
	return s
}

// productRules holds the CPE rules of one vendor:product, arranged so that
// a lookup does not scan them all:
//   - upper: rules with only an end bound (the vast majority, "before
//     116.0.5845.187"), sorted by that bound; the affected ones are a suffix
//     found by binary search;
//   - exact: rules naming one version, keyed by version.Canonical;
//   - other: rules with a start bound, scanned;
//   - all: rules with no bound at all (every version).
type productRules struct {
	upper []upperRule
	exact map[string][]ruleRef
	other []rangeRule // sorted by start
	// otherMaxEnd is the highest end among other; otherOpen is set when one
	// of them has no end. A version past otherMaxEnd skips them all (an
	// up-to-date application is past every historic range).
	otherMaxEnd    version.Version
	otherMaxIncl   bool
	otherOpen      bool
	otherHasMaxEnd bool
	all            []ruleRef
}

type ruleRef struct {
	cve      string
	targetSW string
}

type upperRule struct {
	end  version.Version
	incl bool // versionEndIncluding rather than versionEndExcluding
	ruleRef
}

type rangeRule struct {
	start     version.Version
	startIncl bool
	hasEnd    bool
	end       version.Version
	endIncl   bool
	fixedIn   string
	ruleRef
}

type osvRule struct {
	id       string
	cves     []string
	ranges   []feeds.AffectedRange
	versions []string
}

// AddCVE adds the application CPE rules of a CVE (operating system and
// hardware CPEs are not matched against installed software).
func (b *Builder) AddCVE(c feeds.CVE) {
	id := b.intern(c.ID)
	for _, m := range c.CPEMatches {
		if m.Part != "a" {
			continue
		}
		key := b.intern(m.Vendor + ":" + m.Product)
		pr := b.products[key]
		if pr == nil {
			pr = &productRules{}
			b.products[key] = pr
		}
		ref := ruleRef{cve: id, targetSW: b.intern(normalTarget(m.TargetSW))}
		b.rules++
		exact := m.Version
		if u := m.Update; u != "" && u != "*" && u != "-" {
			exact += u // "1.0.2" + "k", "2.0" + "beta9"
		}
		hasStart := m.StartIncl != "" || m.StartExcl != ""
		hasEnd := m.EndIncl != "" || m.EndExcl != ""
		switch {
		case exact != "" && exact != "*" && exact != "-" && !hasStart && !hasEnd:
			if pr.exact == nil {
				pr.exact = map[string][]ruleRef{}
			}
			k := version.Canonical(version.Generic, exact)
			pr.exact[k] = append(pr.exact[k], ref)
		case hasStart:
			r := rangeRule{ruleRef: ref, hasEnd: hasEnd}
			if m.StartIncl != "" {
				r.start, r.startIncl = version.Parse(version.Generic, m.StartIncl), true
			} else {
				r.start = version.Parse(version.Generic, m.StartExcl)
			}
			if m.EndIncl != "" {
				r.end, r.endIncl = version.Parse(version.Generic, m.EndIncl), true
			} else if m.EndExcl != "" {
				r.end, r.fixedIn = version.Parse(version.Generic, m.EndExcl), b.intern(m.EndExcl)
			}
			pr.other = append(pr.other, r)
		case hasEnd:
			if m.EndIncl != "" {
				pr.upper = append(pr.upper, upperRule{end: version.Parse(version.Generic, m.EndIncl), incl: true, ruleRef: ref})
			} else {
				pr.upper = append(pr.upper, upperRule{end: version.Parse(version.Generic, m.EndExcl), ruleRef: ref})
			}
		default:
			pr.all = append(pr.all, ref)
		}
	}
}

func normalTarget(t string) string {
	if t == "*" || t == "-" {
		return ""
	}
	return strings.ToLower(t)
}

// AddOSV adds an OSV advisory; withdrawn advisories are ignored.
func (b *Builder) AddOSV(a feeds.OSVAdvisory) {
	if !a.Withdrawn.IsZero() || a.Ecosystem == "" || a.Package == "" {
		return
	}
	cves := make([]string, 0, max(1, len(a.CVEs)))
	for _, c := range a.CVEs {
		cves = append(cves, b.intern(c))
	}
	if len(cves) == 0 {
		cves = append(cves, b.intern(a.ID))
	}
	key := osvKey(a.Ecosystem, a.Package)
	b.osv[key] = append(b.osv[key], osvRule{id: a.ID, cves: cves, ranges: a.Ranges, versions: a.Versions})
	b.rules++
}

func osvKey(ecosystem, pkg string) string { return ecosystem + "\x00" + pkg }

// Build answers the index; the builder must not be used afterwards.
func (b *Builder) Build(catalog *Catalog) *Index {
	if catalog == nil {
		catalog = DefaultCatalog()
	}
	for _, pr := range b.products {
		sort.SliceStable(pr.other, func(i, j int) bool {
			c := pr.other[i].start.Compare(pr.other[j].start)
			if c != 0 {
				return c < 0
			}
			return pr.other[i].startIncl && !pr.other[j].startIncl
		})
		for _, r := range pr.other {
			switch {
			case !r.hasEnd:
				pr.otherOpen = true
			case !pr.otherHasMaxEnd:
				pr.otherMaxEnd, pr.otherMaxIncl, pr.otherHasMaxEnd = r.end, r.endIncl, true
			default:
				switch c := r.end.Compare(pr.otherMaxEnd); {
				case c > 0:
					pr.otherMaxEnd, pr.otherMaxIncl = r.end, r.endIncl
				case c == 0:
					pr.otherMaxIncl = pr.otherMaxIncl || r.endIncl
				}
			}
		}
		sort.SliceStable(pr.upper, func(i, j int) bool {
			c := pr.upper[i].end.Compare(pr.upper[j].end)
			if c != 0 {
				return c < 0
			}
			// At an equal bound "excluding" comes first: its affected set
			// is the smaller one, which keeps the order monotone.
			return !pr.upper[i].incl && pr.upper[j].incl
		})
	}
	ix := &Index{products: b.products, osv: b.osv, windows: buildWindows(b.windows), office: buildOffice(b.officeFixes, b.officeBuilds),
		rules: b.rules, catalog: catalog}
	b.products, b.osv, b.windows, b.strings, b.officeFixes, b.officeBuilds = nil, nil, nil, nil, nil, nil
	return ix
}

// Index answers which CVEs affect installed software. It is immutable and
// safe for concurrent use.
type Index struct {
	products map[string]*productRules
	osv      map[string][]osvRule
	windows  windowsIndex
	office   *officeIndex // nil without Click-to-Run fixes and a release history
	rules    int
	catalog  *Catalog
}

// Rules answers the number of CPE, OSV and MSRC rules indexed.
func (ix *Index) Rules() int { return ix.rules }
