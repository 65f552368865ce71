package match

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/vulns/feeds"
)

// The synthetic fleet: 250,000 CPE rules, 600 on each catalog product (as
// busy as Chrome or Firefox are in the real NVD) and 100 on each of about
// 1,360 other products; endpoints of 150 applications, 60 of them known to
// the catalog and 90 not.
const (
	benchRules           = 250000
	benchRulesPerKnown   = 600
	benchRulesPerOther   = 100
	benchAppsPerHost     = 150
	benchKnownPerHost    = 60
	benchFleet           = 10000
	benchDistinctHosts   = 1000
	benchUnknownNamePool = 3000
)

type benchApp struct{ name, publisher string }

func catalogApps(c *Catalog) ([]benchApp, []string) {
	var apps []benchApp // one installed name per product
	keys := map[string]bool{}
	taken := map[*catalogEntry]bool{}
	var names []string
	for n := range c.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, e := range c.byName[n] {
			if taken[e] {
				continue
			}
			taken[e] = true
			pub := ""
			if len(e.Publishers) > 0 {
				pub = e.Publishers[0]
			}
			apps = append(apps, benchApp{n, pub})
			for _, k := range e.CPE {
				keys[k] = true
			}
		}
	}
	var cpes []string
	for k := range keys {
		cpes = append(cpes, k)
	}
	sort.Strings(cpes)
	return apps, cpes
}

func randVersion(r *rand.Rand, minMajor int) string {
	return fmt.Sprintf("%d.%d.%d.%d", minMajor+r.Intn(130-minMajor), r.Intn(10), r.Intn(6000), r.Intn(300))
}

func syntheticIndex(tb testing.TB) (*Index, []benchApp) {
	tb.Helper()
	r := rand.New(rand.NewSource(42))
	cat := DefaultCatalog()
	apps, known := catalogApps(cat)
	b := NewBuilder()
	n := 0
	addRules := func(key string, count int) {
		vendor, product, _ := cut(key)
		for i := 0; i < count && n < benchRules; i++ {
			m := feeds.CPEMatch{Part: "a", Vendor: vendor, Product: product, Version: "*", TargetSW: "*"}
			switch k := r.Intn(100); {
			case k < 65:
				m.EndExcl = randVersion(r, 1)
			case k < 70:
				m.EndIncl = randVersion(r, 1)
			case k < 90:
				m.Version = randVersion(r, 1)
			default: // a branch: 115.0 <= v < 115.2.1
				major := 1 + r.Intn(129)
				m.StartIncl = fmt.Sprintf("%d.0", major)
				m.EndExcl = fmt.Sprintf("%d.%d.%d", major, r.Intn(10), r.Intn(6000))
			}
			b.AddCVE(feeds.CVE{ID: fmt.Sprintf("CVE-%d-%05d", 2000+n%25, n), CPEMatches: []feeds.CPEMatch{m}})
			n++
		}
	}
	for _, k := range known {
		addRules(k, benchRulesPerKnown)
	}
	for i := 0; n < benchRules; i++ {
		addRules(fmt.Sprintf("vendor%d:product%d", i, i), benchRulesPerOther)
	}
	ix := b.Build(cat)
	if ix.Rules() != benchRules {
		tb.Fatalf("built %d rules, want %d", ix.Rules(), benchRules)
	}
	return ix, apps
}

func cut(key string) (string, string, bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == ':' {
			return key[:i], key[i+1:], true
		}
	}
	return key, "", false
}

// syntheticHost answers an endpoint. Rule bounds have majors 1-129. With
// stale set, every known application has a random version of major
// 100-129 (thousands of findings per endpoint: a worst case). Otherwise 90%
// of them are current (major 130: past every rule, as an up-to-date Chrome
// is past every Chrome CVE) and 10% stale, which gives tens of findings per
// endpoint, closer to a fleet that patches.
func syntheticHost(r *rand.Rand, apps []benchApp, stale bool) Endpoint {
	ep := Endpoint{Platform: "windows", Software: make([]Software, 0, benchAppsPerHost)}
	picked := map[int]bool{}
	for len(picked) < benchKnownPerHost {
		k := r.Intn(len(apps))
		if picked[k] {
			continue
		}
		picked[k] = true
		a := apps[k]
		v := randVersion(r, 100)
		if !stale && r.Intn(10) != 0 {
			v = fmt.Sprintf("130.%d.%d", r.Intn(10), r.Intn(100))
		}
		ep.Software = append(ep.Software, Software{Name: a.name, Publisher: a.publisher, Version: v, InstallType: "msi"})
	}
	for len(ep.Software) < benchAppsPerHost {
		k := r.Intn(benchUnknownNamePool)
		ep.Software = append(ep.Software, Software{Name: fmt.Sprintf("Vendor%d Utility %d (x64)", k, k), Publisher: fmt.Sprintf("Vendor%d Ltd", k), Version: randVersion(r, 1), InstallType: "exe"})
	}
	return ep
}

func BenchmarkMatchEndpoint(b *testing.B) {
	ix, apps := syntheticIndex(b)
	for _, stale := range []bool{false, true} {
		name := "patched"
		if stale {
			name = "stale"
		}
		b.Run(name, func(b *testing.B) {
			r := rand.New(rand.NewSource(7))
			hosts := make([]Endpoint, 100)
			for i := range hosts {
				hosts[i] = syntheticHost(r, apps, stale)
			}
			for _, h := range hosts { // warm the name cache, as a running server has
				ix.Match(h)
			}
			findings, i := 0, 0
			for b.Loop() {
				findings += len(ix.Match(hosts[i%len(hosts)]))
				i++
			}
			b.ReportMetric(float64(findings)/float64(i), "findings/endpoint")
		})
	}
}

func BenchmarkMatchFleet(b *testing.B) {
	ix, apps := syntheticIndex(b)
	r := rand.New(rand.NewSource(7))
	hosts := make([]Endpoint, benchDistinctHosts)
	for i := range hosts {
		hosts[i] = syntheticHost(r, apps, i%10 == 0) // one endpoint in ten is a stale one
	}
	times := make([]time.Duration, 0, benchFleet)
	findings, rounds := 0, 0
	for b.Loop() {
		times = times[:0]
		for i := 0; i < benchFleet; i++ {
			t0 := time.Now()
			findings += len(ix.Match(hosts[i%len(hosts)]))
			times = append(times, time.Since(t0))
		}
		rounds++
	}
	slices.Sort(times)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rounds*benchFleet), "ns/endpoint")
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns/endpoint")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns/endpoint")
	b.ReportMetric(float64(times[len(times)-1].Nanoseconds()), "max-ns/endpoint")
	b.ReportMetric(float64(findings)/float64(rounds*benchFleet), "findings/endpoint")
}

func BenchmarkBuildIndex(b *testing.B) {
	for b.Loop() {
		syntheticIndex(b)
	}
}
