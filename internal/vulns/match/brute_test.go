package match

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/vulns/feeds"
	"github.com/patchd/patchd/internal/vulns/version"
)

// TestIndexAgreesWithBruteForce checks the sorted and pruned index against
// a plain scan of every rule with version.InRange, on random rules and
// versions crowded around the same few values (to hit every boundary).
func TestIndexAgreesWithBruteForce(t *testing.T) {
	cat, err := LoadCatalog(strings.NewReader(`[{"display":"App","cpe":["v:app"],"names":["app"]}]`))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	ver := func() string {
		switch r.Intn(4) {
		case 0:
			return fmt.Sprintf("%d.%d", r.Intn(4), r.Intn(3))
		case 1:
			return fmt.Sprintf("%d.%d.0", r.Intn(4), r.Intn(3))
		case 2:
			return fmt.Sprintf("%d.%d-rc%d", r.Intn(4), r.Intn(3), r.Intn(2))
		}
		return fmt.Sprintf("%d", r.Intn(4))
	}
	for round := 0; round < 50; round++ {
		var rules []feeds.CPEMatch
		b := NewBuilder()
		for i := 0; i < 40; i++ {
			m := feeds.CPEMatch{Part: "a", Vendor: "v", Product: "app", Version: "*", TargetSW: "*"}
			switch r.Intn(6) {
			case 0:
				m.Version = ver()
			case 1:
				m.EndExcl = ver()
			case 2:
				m.EndIncl = ver()
			case 3:
				m.StartIncl, m.EndExcl = ver(), ver()
			case 4:
				m.StartExcl, m.EndIncl = ver(), ver()
			case 5:
				m.StartIncl = ver()
			}
			rules = append(rules, m)
			b.AddCVE(feeds.CVE{ID: fmt.Sprintf("CVE-0-%d", i), CPEMatches: []feeds.CPEMatch{m}})
		}
		ix := b.Build(cat)
		for k := 0; k < 40; k++ {
			v := ver()
			var want []string
			for i, m := range rules {
				if version.InRange(version.Generic, v, version.Range{Exact: m.Version, StartIncl: m.StartIncl, StartExcl: m.StartExcl, EndIncl: m.EndIncl, EndExcl: m.EndExcl}) {
					want = append(want, fmt.Sprintf("CVE-0-%d", i))
				}
			}
			got := cves(ix.Match(Endpoint{Platform: "windows", Software: []Software{{Name: "App", Version: v}}}))
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, version %q:\n got %v\nwant %v\nrules %+v", round, v, got, want, rules)
			}
		}
	}
}
