package vulndb_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
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
	xmls, _ := filepath.Glob("../../demo/feeds/*.xml")
	if len(files) == 0 || len(xmls) == 0 {
		t.Fatal("no demo feed under demo/feeds")
	}
	for _, f := range append(files, xmls...) {
		if _, err := feeds.ParseFile(f, feeds.Handler{CVE: func(c feeds.CVE) error { b.AddCVE(c); return nil },
			OfficeBuilds: func(l []feeds.OfficeBuild) error {
				for _, r := range l {
					b.AddOfficeBuild(r)
				}
				return nil
			},
			MSRC: func(d feeds.MSRCDocument) error {
				names := map[string]string{}
				for _, p := range d.Products {
					names[p.ID] = p.Name
				}
				for _, v := range d.Vulns {
					for _, fx := range v.Fixes {
						b.AddMSRCFix(match.MSRCFix{CVEID: v.CVE, ProductID: fx.ProductID, ProductName: names[fx.ProductID], KB: fx.KB,
							FixedBuild: fx.FixedBuild, Hotpatch: fx.Hotpatch(), Release: d.ID})
					}
				}
				return nil
			}}); err != nil {
			t.Fatal(err)
		}
	}
	ix := b.Build(nil)
	// December 2025's builds: the hosts with this month's update.
	current := map[string]bool{"26100.7462": true, "22631.6345": true, "19045.6691": true, "17763.8146": true, "20348.4529": true}
	found := map[string]map[string]bool{} // software → CVEs
	behind, clean := 0, 0
	for i := range 300 {
		doc := sim.Generate(1, i)
		ep := match.Endpoint{Platform: sim.Platform(1, i)}
		if ep.Platform == "windows" {
			ep.Windows = match.WindowsOS{Name: deref(doc.System.OS), Build: deref(doc.System.OSBuild), Arch: doc.System.Arch,
				Server: doc.System.Type == "server"}
		}
		for _, s := range doc.Software {
			ep.Software = append(ep.Software, match.Software{Name: s.Name, Version: deref(s.Version), Publisher: deref(s.Publisher),
				InstallType: deref(s.InstallType), SourcePackage: deref(s.SourcePackage)})
		}
		windowsCVEs := 0
		for _, f := range ix.Match(ep) {
			if found[f.Software] == nil {
				found[f.Software] = map[string]bool{}
			}
			found[f.Software][f.CVEID] = true
			if strings.HasPrefix(f.Source, "KB") {
				windowsCVEs++
			}
			if f.Source == feeds.ClickToRun && f.Version == "16.0.19426.20186" {
				t.Errorf("endpoint %d: the current Microsoft 365 Apps build has %s", i, f.CVEID)
			}
		}
		if ep.Platform != "windows" {
			continue
		}
		switch build := ep.Windows.Build; {
		case current[build] && windowsCVEs > 0:
			t.Errorf("endpoint %d (%s %s, current): %d Windows CVEs", i, ep.Windows.Name, build, windowsCVEs)
		case !current[build] && windowsCVEs == 0:
			t.Errorf("endpoint %d (%s %s, behind): no Windows CVE", i, ep.Windows.Name, build)
		case current[build]:
			clean++
		default:
			behind++
		}
	}
	if behind == 0 || clean == 0 {
		t.Errorf("%d Windows hosts behind, %d current", behind, clean)
	}
	for sw, cves := range map[string][]string{
		"Google Chrome":   {"CVE-2024-12053", "CVE-2025-2783"},
		"7-Zip":           {"CVE-2025-0411"},
		"Mozilla Firefox": {"CVE-2024-9680"},
		// Windows itself, by build: hosts on October's or September's build
		// have November's CVEs, those on November's December's.
		"Windows 11 Version 24H2 for x64-based Systems": {"CVE-2025-62215", "CVE-2025-62218", "CVE-2025-62221", "CVE-2025-62468"},
		"Windows 11 Version 23H2 for x64-based Systems": {"CVE-2025-62215", "CVE-2025-62221", "CVE-2025-62468"},
		"Windows 10 Version 22H2 for x64-based Systems": {"CVE-2025-62215", "CVE-2025-62221"},
		// Windows 10 Enterprise LTSC 2019 (build 17763, no display version).
		"Windows 10 Version 1809 for x64-based Systems": {"CVE-2025-62221"},
		"Windows Server 2022":                           {"CVE-2025-60713", "CVE-2025-62221"},
		"Windows Server 2019":                           {"CVE-2025-60713", "CVE-2025-62221"},
		// Microsoft 365 Apps by Click-to-Run build.
		"Microsoft 365 Apps": {"CVE-2025-60728", "CVE-2025-62199", "CVE-2025-62554"},
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
