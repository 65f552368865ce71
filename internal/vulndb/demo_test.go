package vulndb_test

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/patchd/patchd/internal/vulns/feeds"
	"github.com/patchd/patchd/internal/vulns/match"
	"github.com/patchd/patchd/sim"
)

// TestDemoFeedMatchesSimulator keeps demo/feeds in step with what
// patchd-sim installs: a newcomer's simulated fleet must show real CVEs,
// among them Chrome's (the simulator's Chrome versions move on with the
// releases; the feed must follow).
func TestDemoFeedMatchesSimulator(t *testing.T) {
	b := match.NewBuilder()
	files, _ := filepath.Glob("../../demo/feeds/*.json")
	if len(files) == 0 {
		t.Fatal("no demo feed under demo/feeds")
	}
	for _, f := range files {
		if _, err := feeds.ParseFile(f, feeds.Handler{CVE: func(c feeds.CVE) error { b.AddCVE(c); return nil }}); err != nil {
			t.Fatal(err)
		}
	}
	ix := b.Build(nil)
	found := map[string]map[string]bool{} // software → CVEs
	for i := range 300 {
		doc := sim.Generate(1, i)
		ep := match.Endpoint{Platform: sim.Platform(1, i)}
		for _, s := range doc.Software {
			ep.Software = append(ep.Software, match.Software{Name: s.Name, Version: deref(s.Version), Publisher: deref(s.Publisher),
				InstallType: deref(s.InstallType), SourcePackage: deref(s.SourcePackage)})
		}
		for _, f := range ix.Match(ep) {
			if found[f.Software] == nil {
				found[f.Software] = map[string]bool{}
			}
			found[f.Software][f.CVEID] = true
		}
	}
	for sw, cves := range map[string][]string{
		"Google Chrome":   {"CVE-2024-12053", "CVE-2025-2783"},
		"7-Zip":           {"CVE-2025-0411"},
		"Mozilla Firefox": {"CVE-2024-9680"},
	} {
		for _, c := range cves {
			if !found[sw][c] {
				t.Errorf("no simulated endpoint shows %s on %s; found %v", c, sw, found)
			}
		}
	}
	if len(found) < 4 {
		t.Errorf("the demo feed hits only %d products of a simulated fleet: %v", len(found), slices.Sorted(maps.Keys(found)))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
