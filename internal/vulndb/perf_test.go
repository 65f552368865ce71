package vulndb_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/vulndb"
	"github.com/patchd/patchd/internal/vulns/feeds"
	"github.com/patchd/patchd/internal/vulns/match"
	"github.com/patchd/patchd/sim"
)

// writeNVDYear writes a synthetic NVD JSON 2.0 feed of n CVEs shaped like a
// real year file: an English description, a CVSS 3.1 metric, and six CPE
// matches in one configuration.
func writeNVDYear(tb testing.TB, name string, n int) {
	f, err := os.Create(name)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintf(w, `{"resultsPerPage":%d,"startIndex":0,"totalResults":%d,"format":"NVD_CVE","version":"2.0","timestamp":"2025-01-01T00:00:00.000","vulnerabilities":[`, n, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		if i > 0 {
			w.WriteString(",")
		}
		var matches []map[string]any
		for j := range 6 {
			matches = append(matches, map[string]any{"vulnerable": true,
				"criteria":            fmt.Sprintf("cpe:2.3:a:vendor%d:product%d:*:*:*:*:*:*:*:*", r.IntN(5000), j),
				"versionEndExcluding": fmt.Sprintf("%d.%d.%d", r.IntN(30), r.IntN(20), r.IntN(100)), "matchCriteriaId": "0"})
		}
		score := float64(r.IntN(100)) / 10
		item := map[string]any{"cve": map[string]any{"id": fmt.Sprintf("CVE-2024-%d", 10000+i), "sourceIdentifier": "cve@mitre.org",
			"published": "2024-03-01T12:00:00.000", "lastModified": "2024-11-01T12:00:00.000", "vulnStatus": "Analyzed",
			"descriptions": []map[string]string{{"lang": "en", "value": "A synthetic vulnerability in a synthetic product that lets a remote attacker do something bad through a crafted request."}},
			"metrics": map[string]any{"cvssMetricV31": []map[string]any{{"source": "nvd@nist.gov", "type": "Primary",
				"cvssData": map[string]any{"version": "3.1", "vectorString": "CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:U/C:H/I:H/A:H", "baseScore": score, "baseSeverity": feeds.SeverityFromScore(score)}}}},
			"configurations": []map[string]any{{"nodes": []map[string]any{{"operator": "OR", "negate": false, "cpeMatch": matches}}}}}}
		b, _ := json.Marshal(item)
		w.Write(b)
	}
	w.WriteString("]}")
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
}

// BenchmarkImportNVDYear imports a 40,000-CVE NVD year file into an empty
// store (the first import) and again (every record updated in place).
func BenchmarkImportNVDYear(b *testing.B) {
	name := filepath.Join(b.TempDir(), "nvdcve-2.0-2024.json")
	writeNVDYear(b, name, 40000)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		s := storetest.Open(b)
		b.StartTimer()
		start := time.Now()
		res, err := vulndb.ImportFiles(ctx, s, []string{name}, vulndb.By{Actor: "test"})
		if err != nil || res.Stored.CVEs != 40000 {
			b.Fatalf("import = %+v %v", res, err)
		}
		first := time.Since(start)
		start = time.Now()
		if _, err := vulndb.ImportFiles(ctx, s, []string{name}, vulndb.By{Actor: "test"}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(first.Seconds(), "first-import-s")
		b.ReportMetric(time.Since(start).Seconds(), "re-import-s")
	}
}

// catalogProducts reads the CPE keys of the matcher's product catalog.
func catalogProducts(tb testing.TB) []string {
	raw, err := os.ReadFile("../vulns/match/cpemap.json")
	if err != nil {
		tb.Fatal(err)
	}
	var entries []struct {
		CPE []string `json:"cpe"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.CPE...)
	}
	return out
}

// storeRules stores n synthetic CPE rules, ten per CVE: 600 on each
// catalog product (as busy as Chrome in the real NVD), the rest on
// products no endpoint has.
func storeRules(tb testing.TB, s *store.Store, n int) {
	ctx := context.Background()
	products := catalogProducts(tb)
	r := rand.New(rand.NewPCG(3, 4))
	var batch store.FeedBatch
	var cve feeds.CVE
	for i := range n {
		key := fmt.Sprintf("other%d:product%d", i/100, i/100)
		if i < len(products)*600 {
			key = products[i/600]
		}
		vendor, product, _ := cutColon(key)
		// As in the real NVD, almost every range ends below what a
		// maintained fleet runs; one in 300 reaches current versions.
		end := fmt.Sprintf("0.%d.%d", r.IntN(10), r.IntN(7000))
		if r.IntN(300) == 0 {
			end = fmt.Sprintf("%d.%d.%d", r.IntN(140), r.IntN(10), r.IntN(7000))
		}
		m := feeds.CPEMatch{Part: "a", Vendor: vendor, Product: product, Version: "*", TargetSW: "*", EndExcl: end}
		if r.IntN(5) == 0 {
			m.StartIncl = "0." + strconv.Itoa(r.IntN(10))
		}
		if cve.ID == "" {
			cve = feeds.CVE{ID: fmt.Sprintf("CVE-2020-%d", 100000+i/10)}
		}
		cve.CPEMatches = append(cve.CPEMatches, m)
		if len(cve.CPEMatches) == 10 {
			batch.CVEs = append(batch.CVEs, cve)
			cve = feeds.CVE{}
		}
		if len(batch.CVEs) == 1000 {
			if err := s.StoreFeeds(ctx, batch); err != nil {
				tb.Fatal(err)
			}
			batch = store.FeedBatch{}
		}
	}
	if cve.ID != "" {
		batch.CVEs = append(batch.CVEs, cve)
	}
	if err := s.StoreFeeds(ctx, batch); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.BumpFeedVersion(ctx); err != nil {
		tb.Fatal(err)
	}
}

func cutColon(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// TestFleetMatchPerformance loads a fleet of simulated endpoints (the
// inventories patchd-sim sends) and 250,000 CPE rules, then times the full
// recompute through the store (first: every finding inserted; second:
// nothing changed) and the recompute of one endpoint after its inventory
// changed. PATCHD_PERF=1 runs it; PATCHD_PERF_ENDPOINTS sets the fleet
// size (default 10,000).
func TestFleetMatchPerformance(t *testing.T) {
	s, o, n := perfFleetStore(t)
	ctx := context.Background()
	start := time.Now()
	ids, apps := loadFleet(t, s, o.ID, n)
	t.Logf("fleet: %d endpoints, %.0f applications each on average, loaded in %v", n, float64(apps)/float64(n), time.Since(start).Round(time.Second))
	start = time.Now()
	storeRules(t, s, 250000)
	t.Logf("rules: 250,000 stored in %v", time.Since(start).Round(time.Millisecond))

	m := &vulndb.Matcher{Store: s, Holder: "perf"}
	start = time.Now()
	if _, _, _, err := m.Index(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("index built from the store in %v", time.Since(start).Round(time.Millisecond))
	// The inventories marked every endpoint dirty: the first pass matches
	// them all and inserts every finding; then a full recompute after a
	// feed change (nothing changes, every endpoint is matched and diffed).
	matchFleetTwice(t, s, m, n)
	// One endpoint's inventory change: the worker's whole pass (lease,
	// dirty mark, inventory read, match, diff written).
	timeInventoryChanges(t, s, m, o.ID, func(i int) (string, agentproto.Inventory, string) {
		idx := (i * 197) % n
		return ids[idx], sim.Generate(1, idx), sim.Platform(1, idx)
	})
}

// loadFleet enrolls n simulated endpoints and stores their inventories the
// way the server does under load: many agents at once, the inventories
// written in shared transactions by the store's Ingester (one by one, the
// 10,000 inventories took several minutes on PostgreSQL).
func loadFleet(t *testing.T, s *store.Store, orgID string, n int) ([]string, int) {
	indexes := make([]int, n)
	for i := range indexes {
		indexes[i] = i
	}
	return loadFleetOf(t, s, orgID, indexes)
}

// loadFleetOf is loadFleet of the simulated endpoints of the given indexes
// (ids[k] is the id of indexes[k]).
func loadFleetOf(t *testing.T, s *store.Store, orgID string, indexes []int) ([]string, int) {
	ctx := context.Background()
	g := s.NewIngester()
	defer g.Close()
	n := len(indexes)
	ids := make([]string, n)
	var apps atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	const agents = 16
	for w := range agents {
		wg.Go(func() {
			for k := w; k < n; k += agents {
				i := indexes[k]
				doc := sim.Generate(1, i)
				platform := sim.Platform(1, i)
				id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: orgID, MachineUID: fmt.Sprint("m", i), Hostname: doc.System.Hostname,
					Platform: platform, SecretHash: fmt.Sprint("s", i)}, time.Now())
				if err == nil {
					var norm inventory.Normalized
					if norm, err = inventory.Check(&doc, platform, "", time.Now()); err == nil {
						err = g.Submit(ctx, orgID, id, norm, "h", time.Now())
					}
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
				ids[k] = id
				apps.Add(int64(len(doc.Software)))
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	return ids, int(apps.Load())
}

// logLoad logs the machine's load average: the figures are only as good
// as the machine was idle.
// matchFleetTwice times the matcher's first pass over the n endpoints
// (every finding inserted) and a full recompute after a feed change
// (nothing changes), then lets it settle with one more pass.
func matchFleetTwice(t *testing.T, s *store.Store, m *vulndb.Matcher, n int) {
	t.Helper()
	ctx := context.Background()
	feedVersion, _ := s.VulnState(ctx, store.StateFeedVersion)
	if err := s.SetVulnState(ctx, store.StateMatchedVersion, feedVersion); err != nil {
		t.Fatal(err)
	}
	for _, pass := range []string{"first match of every endpoint (all findings inserted)", "full recompute after a feed change"} {
		start := time.Now()
		st, ok, err := m.RunOnce(ctx)
		if err != nil || !ok || st.Endpoints != n {
			t.Fatalf("%s: %+v %v %v", pass, st, ok, err)
		}
		t.Logf("%s: %v for %d endpoints (findings %d, added %d, removed %d)", pass, time.Since(start).Round(time.Millisecond),
			st.Endpoints, st.Findings, st.Changes.Added, st.Changes.Removed)
		if err := s.SetVulnState(ctx, store.StateMatchedVersion, -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
}

// timeInventoryChanges makes 200 inventory changes, the i-th to the
// endpoint, simulated inventory and platform pick answers with ten of its
// applications updated, and logs how long the matcher's pass over each
// changed endpoint took (p50, p99, max).
func timeInventoryChanges(t *testing.T, s *store.Store, m *vulndb.Matcher, orgID string, pick func(i int) (string, agentproto.Inventory, string)) {
	t.Helper()
	ctx := context.Background()
	var times []time.Duration
	for i := range 200 {
		id, doc, platform := pick(i)
		for j := range min(10, len(doc.Software)) { // ten applications updated
			v := "999." + strconv.Itoa(i)
			doc.Software[j].Version = &v
		}
		norm, err := inventory.Check(&doc, platform, "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReplaceInventory(ctx, orgID, id, norm, "h2", time.Now()); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		st, _, err := m.RunOnce(ctx)
		if err != nil || st.Endpoints != 1 {
			t.Fatalf("one endpoint: %+v %v", st, err)
		}
		times = append(times, time.Since(start))
	}
	slicesSort(times)
	t.Logf("one endpoint's recompute after an inventory change (%d samples): p50 %v, p99 %v, max %v", len(times), times[len(times)/2].Round(time.Microsecond),
		times[len(times)*99/100-1].Round(time.Microsecond), times[len(times)-1].Round(time.Microsecond))
}

// perfFleetStore skips the test unless PATCHD_PERF is set, opens the store
// with an organization and answers the fleet size (PATCHD_PERF_ENDPOINTS,
// default 10,000); the load average is logged now and when the test ends.
func perfFleetStore(t *testing.T) (*store.Store, store.Org, int) {
	t.Helper()
	if os.Getenv("PATCHD_PERF") == "" {
		t.Skip("set PATCHD_PERF=1")
	}
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("PATCHD_PERF_ENDPOINTS")); err == nil && v > 0 {
		n = v
	}
	logLoad(t)
	t.Cleanup(func() { logLoad(t) })
	s := storetest.Open(t)
	o, err := s.CreateOrg(context.Background(), "Perf", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	return s, o, n
}

func logLoad(t *testing.T) {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("load average: %s", strings.TrimSpace(string(b)))
	}
}

func slicesSort(d []time.Duration) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}

// storeMSRCHistory stores two years of Microsoft's security update data
// shaped like the real documents: every month (January 2024 to December
// 2025) 45 Windows CVEs, each fixed on every Windows product of the real
// November and December 2025 fixtures with that month's build, and 13
// Office CVEs with a Click-to-Run fix — the real documents of June,
// September, November and December 2025 fix 42, 56, 35 and 34 CVEs on
// Windows 11 23H2 or Server 2019 and 11–15 on Microsoft 365 Apps; and the
// real Microsoft 365 Apps release history fixture. The builds of November
// and December 2025 are the real ones, earlier months step back 145
// revisions a month (23H2: 5909, 6060, 6199, 6345 from September to
// December). Returns the CVE count.
func storeMSRCHistory(tb testing.TB, s *store.Store) int {
	ctx := context.Background()
	var real []feeds.MSRCDocument
	for _, name := range []string{testdata + "msrc-2025-Nov.xml", testdata + "msrc-2025-Dec.xml"} {
		if _, err := feeds.ParseFile(name, feeds.Handler{MSRC: func(d feeds.MSRCDocument) error { real = append(real, d); return nil }}); err != nil {
			tb.Fatal(err)
		}
	}
	// Each Windows product's monthly builds in the two real documents
	// (hotpatches aside): the highest is December's, the one below it
	// November's.
	builds := map[string][]match.WinBuild{}
	for _, d := range real {
		for _, v := range d.Vulns {
			for _, f := range v.Fixes {
				b, ok := match.ParseWinBuild(f.FixedBuild)
				if ok && b[0] == 10 && !f.Hotpatch() && !slices.Contains(builds[f.ProductID], b) {
					builds[f.ProductID] = append(builds[f.ProductID], b)
				}
			}
		}
	}
	monthBuild := func(id string, m int) string {
		bs := builds[id]
		slices.SortFunc(bs, func(a, b match.WinBuild) int { return a.Compare(b) })
		dec := bs[len(bs)-1]
		nov := dec
		if len(bs) > 1 {
			nov = bs[len(bs)-2]
		}
		b := nov
		switch {
		case m == 23:
			b = dec
		case m < 22:
			b[3] = max(1, nov[3]-(22-m)*145)
		}
		return b.String()
	}
	office := []string{"11762", "11763", "11952", "11953", "12420", "12421"}
	cves := 0
	var docs []feeds.MSRCDocument
	for m := range 24 {
		month := time.Date(2024, time.Month(1+m), 1, 0, 0, 0, 0, time.UTC)
		d := feeds.MSRCDocument{ID: feeds.MSRCMonth(month), Title: month.Format("January 2006") + " Security Updates", Released: month.AddDate(0, 0, 10),
			Products: real[1].Products}
		for c := range 45 + 13 {
			score := 7.8
			v := feeds.MSRCVuln{CVE: fmt.Sprintf("CVE-%d-%d", 2024+m/12, 20000+m%12*100+c), Title: "Synthetic Windows Vulnerability", CVSS: &score, Severity: "Important"}
			if c < 45 {
				for id := range builds {
					v.Fixes = append(v.Fixes, feeds.MSRCFix{ProductID: id, KB: fmt.Sprintf("KB50%05d", m*100+len(id)), SubType: "Security Update",
						FixedBuild: monthBuild(id, m)})
				}
			} else {
				v.Title = "Synthetic Office Vulnerability"
				for _, id := range office {
					v.Fixes = append(v.Fixes, feeds.MSRCFix{ProductID: id, KB: feeds.ClickToRun, SubType: "Security Update"})
				}
			}
			d.Vulns = append(d.Vulns, v)
			cves++
		}
		docs = append(docs, d)
	}
	for _, d := range docs {
		if err := s.StoreFeeds(ctx, store.FeedBatch{MSRC: []feeds.MSRCDocument{d}}); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := vulndb.ImportFiles(ctx, s, []string{testdata + "m365-apps-builds-2025Q4.json"}, vulndb.By{Actor: "perf"}); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.BumpFeedVersion(ctx); err != nil {
		tb.Fatal(err)
	}
	return cves
}

// TestFleetMatchPerformanceWindows is TestFleetMatchPerformance with
// Windows (MSRC) data and a Windows fleet: PATCHD_PERF_ENDPOINTS (default
// 10,000) Windows endpoints of patchd-sim (workstations and servers on real
// builds of September to December 2025, Microsoft 365 Apps on most), the
// 250,000 CPE rules and two years of MSRC-shaped data (storeMSRCHistory).
// PATCHD_PERF=1 runs it.
func TestFleetMatchPerformanceWindows(t *testing.T) {
	s, o, n := perfFleetStore(t)
	ctx := context.Background()
	var indexes []int
	for i := 0; len(indexes) < n; i++ {
		if sim.Platform(1, i) == "windows" {
			indexes = append(indexes, i)
		}
	}
	start := time.Now()
	ids, apps := loadFleetOf(t, s, o.ID, indexes)
	t.Logf("fleet: %d Windows endpoints, %.0f applications each on average, loaded in %v", n, float64(apps)/float64(n), time.Since(start).Round(time.Second))
	start = time.Now()
	storeRules(t, s, 250000)
	cves := storeMSRCHistory(t, s)
	t.Logf("rules: 250,000 CPE rules and %d MSRC CVEs stored in %v", cves, time.Since(start).Round(time.Millisecond))

	m := &vulndb.Matcher{Store: s, Holder: "perf"}
	start = time.Now()
	ix, _, _, err := m.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("index built from the store in %v (%d Windows products, %d Office CVE rules)", time.Since(start).Round(time.Millisecond),
		ix.WindowsProducts(), ix.OfficeCVEs())
	matchFleetTwice(t, s, m, n)
	timeInventoryChanges(t, s, m, o.ID, func(i int) (string, agentproto.Inventory, string) {
		k := (i * 197) % n
		return ids[k], sim.Generate(1, indexes[k]), "windows"
	})
}
