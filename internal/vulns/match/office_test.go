package match

import (
	"fmt"
	"slices"
	"testing"

	"github.com/patchd/patchd/internal/vulns/feeds"
)

func officeFindings(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Source == "Click to Run" {
			out = append(out, fmt.Sprintf("%s %s %s", f.Software, f.CVEID, f.FixedIn))
		}
	}
	return out
}

// TestMatchOfficeByBuild matches Click-to-Run installs against the real
// MSRC fixtures (November 2025: CVE-2025-62199 for Microsoft 365 Apps and
// Office LTSC 2021/2024, CVE-2025-60728 for Microsoft 365 Apps and Office
// LTSC 2024; December 2025: CVE-2025-62554 for those and Office 2019) and
// the release history of those months: Patch Tuesdays 2025-11-11 and
// 2025-12-09.
func TestMatchOfficeByBuild(t *testing.T) {
	ix := msrcIndex(t)
	const (
		m365 = "Microsoft 365 Apps for enterprise - en-us"
		nov1 = "CVE-2025-60728"
		nov2 = "CVE-2025-62199"
		dec  = "CVE-2025-62554"
	)
	app := "Microsoft 365 Apps"
	cases := []struct {
		name, version string
		want          []string
	}{
		// Version 2510: 19328.20178 (Current Channel, 2025-11-04) is one
		// release before 19328.20190 (2025-11-11); December's fix in that
		// line is 19328.20266 (Monthly Enterprise Channel, 2025-12-09).
		{m365, "16.0.19328.20178", []string{
			app + " " + nov1 + " 16.0.19328.20190", app + " " + nov2 + " 16.0.19328.20190", app + " " + dec + " 16.0.19328.20266"}},
		{m365, "16.0.19328.20189", []string{
			app + " " + nov1 + " 16.0.19328.20190", app + " " + nov2 + " 16.0.19328.20190", app + " " + dec + " 16.0.19328.20266"}},
		{m365, "16.0.19328.20190", []string{app + " " + dec + " 16.0.19328.20266"}},
		{m365, "16.0.19328.20244", []string{app + " " + dec + " 16.0.19328.20266"}},
		{m365, "16.0.19328.20265", []string{app + " " + dec + " 16.0.19328.20266"}},
		{m365, "16.0.19328.20266", nil},
		{m365, "16.0.19328.20292", nil},
		// Version 2511 first shipped 2025-12-03 (19426.20170), after
		// November's fixes; December's is 19426.20186.
		{m365, "16.0.19426.20170", []string{app + " " + dec + " 16.0.19426.20186"}},
		{m365, "16.0.19426.20186", nil},
		{m365, "16.0.19530.20144", nil},
		// Semi-Annual Enterprise Channel, Version 2408: 17928.20730 in
		// November, 17928.20742 in December.
		{m365, "16.0.17928.20729", []string{
			app + " " + nov1 + " 16.0.17928.20730", app + " " + nov2 + " 16.0.17928.20730", app + " " + dec + " 16.0.17928.20742"}},
		{m365, "16.0.17928.20730", []string{app + " " + dec + " 16.0.17928.20742"}},
		{m365, "16.0.17928.20742", nil},
		// Version 2507 got its last build (19029.20300) in November: its
		// December fix is moving to the Current Channel's 19426.20186.
		{m365, "16.0.19029.20300", []string{app + " " + dec + " 16.0.19426.20186"}},
		// Version 2506 (last build 2025-10-14): no fix in its line.
		{m365, "16.0.18925.20268", []string{
			app + " " + nov1 + " 16.0.19328.20190", app + " " + nov2 + " 16.0.19328.20190", app + " " + dec + " 16.0.19426.20186"}},
		// A line the history does not list (an Office LTSC 2021 volume
		// build, an older Microsoft 365 Apps line): not matched.
		{"Microsoft Office LTSC Professional Plus 2021 - en-us", "16.0.14332.21000", nil},
		{m365, "16.0.18129.20158", nil},
		// Retail Office 2019/2021/2024 run Current Channel builds; each
		// family has the CVEs whose fix names it: Office 2019 only
		// December's, Office LTSC 2021 not CVE-2025-60728.
		{"Microsoft Office Home and Business 2019 - en-us", "16.0.19328.20178", []string{"Microsoft Office 2019 " + dec + " 16.0.19328.20266"}},
		{"Microsoft Office Professional 2021 - en-us", "16.0.19328.20178", []string{
			"Microsoft Office LTSC 2021 " + nov2 + " 16.0.19328.20190", "Microsoft Office LTSC 2021 " + dec + " 16.0.19328.20266"}},
		{"Microsoft Office Home 2024 - en-us", "16.0.19328.20178", []string{
			"Microsoft Office LTSC 2024 " + nov1 + " 16.0.19328.20190", "Microsoft Office LTSC 2024 " + nov2 + " 16.0.19328.20190",
			"Microsoft Office LTSC 2024 " + dec + " 16.0.19328.20266"}},
		// The Click-to-Run components and other names are not Office.
		{"Office 16 Click-to-Run Licensing Component", "16.0.19328.20178", nil},
	}
	for _, c := range cases {
		got := officeFindings(ix.Match(Endpoint{Platform: "windows", Software: []Software{{Name: c.name, Publisher: "Microsoft Corporation", Version: c.version}}}))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s:\n got %q\nwant %q", c.name, c.version, got, c.want)
		}
	}
	// Not on other platforms.
	if got := ix.Match(Endpoint{Platform: "darwin", Software: []Software{{Name: m365, Version: "16.0.19328.20178"}}}); len(officeFindings(got)) != 0 {
		t.Errorf("macOS: %v", got)
	}
}

// TestMatchOfficeNeedsHistory: without a release history that reaches the
// CVE's Patch Tuesday nothing is flagged (no guess from MSRC alone).
func TestMatchOfficeNeedsHistory(t *testing.T) {
	b := NewBuilder()
	b.AddMSRCFix(MSRCFix{CVEID: "CVE-2025-62554", ProductID: "11763", ProductName: "Microsoft 365 Apps for Enterprise for 64-bit Systems",
		KB: "Click to Run", Release: "2025-Dec"})
	ix := b.Build(nil)
	ep := Endpoint{Platform: "windows", Software: []Software{{Name: "Microsoft 365 Apps for enterprise - en-us", Version: "16.0.17928.20216"}}}
	if got := officeFindings(ix.Match(ep)); len(got) != 0 {
		t.Fatalf("without a history: %v", got)
	}
}

// officeIndex builds an index of the given release histories and MSRC
// documents (testdata).
func officeTestIndex(t *testing.T, histories, docs []string) *Index {
	t.Helper()
	b := NewBuilder()
	for _, name := range histories {
		if _, err := feeds.ParseFile("../testdata/"+name, feeds.Handler{OfficeBuilds: func(l []feeds.OfficeBuild) error {
			for _, r := range l {
				b.AddOfficeBuild(r)
			}
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range docs {
		if _, err := feeds.ParseFile("../testdata/"+name, feeds.Handler{MSRC: func(d feeds.MSRCDocument) error {
			names := map[string]string{}
			for _, p := range d.Products {
				names[p.ID] = p.Name
			}
			for _, v := range d.Vulns {
				for _, f := range v.Fixes {
					b.AddMSRCFix(MSRCFix{CVEID: v.CVE, ProductID: f.ProductID, ProductName: names[f.ProductID], KB: f.KB,
						FixedBuild: f.FixedBuild, Release: d.ID})
				}
			}
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
	}
	return b.Build(nil)
}

// TestMatchOfficeVolumeLicensed matches volume-licensed Office LTSC 2021
// and Office 2019 installs against their own histories (real builds of
// December 2023, February, November and December 2024) and the real
// February 2024 MSRC document (CVE-2024-21413, Outlook, for Microsoft 365
// Apps, Office LTSC 2021 and Office 2019; CVE-2024-20673 for Office LTSC
// 2021 and Office 2019; Patch Tuesday 2024-02-13) beside November and
// December 2025's.
func TestMatchOfficeVolumeLicensed(t *testing.T) {
	ix := officeTestIndex(t, []string{"m365-apps-builds-2025Q4.json", "office-vl-builds-2023-2024.json"},
		[]string{"msrc-2024-Feb.xml", "msrc-2025-Nov.xml", "msrc-2025-Dec.xml"})
	const (
		ltsc21  = "Microsoft Office LTSC Professional Plus 2021 - en-us"
		o19     = "Microsoft Office Professional Plus 2019 - en-us"
		outlook = "CVE-2024-21413"
		office  = "CVE-2024-20673"
	)
	fam21, fam19 := "Microsoft Office LTSC 2021 ", "Microsoft Office 2019 "
	cases := []struct {
		name, version string
		want          []string
	}{
		// LTSC 2021: December 2023's build has February's CVEs, fixed in
		// 14332.20637; that build and later ones have none. November and
		// December 2025's CVEs are past the history's end: not flagged.
		{ltsc21, "16.0.14332.20615", []string{fam21 + office + " 16.0.14332.20637", fam21 + outlook + " 16.0.14332.20637"}},
		{ltsc21, "16.0.14332.20636", []string{fam21 + office + " 16.0.14332.20637", fam21 + outlook + " 16.0.14332.20637"}},
		{ltsc21, "16.0.14332.20637", nil},
		{ltsc21, "16.0.14332.20828", nil},
		{"Microsoft Office LTSC Standard 2021 - tr-tr", "16.0.14332.20615", []string{fam21 + office + " 16.0.14332.20637", fam21 + outlook + " 16.0.14332.20637"}},
		// A build newer than the history: not known, not flagged.
		{ltsc21, "16.0.14332.21040", nil},
		// Office 2019: its builds change their first number (10405, 10407,
		// 10416): both numbers count.
		{o19, "16.0.10405.20015", []string{fam19 + office + " 16.0.10407.20032", fam19 + outlook + " 16.0.10407.20032"}},
		{o19, "16.0.10407.20031", []string{fam19 + office + " 16.0.10407.20032", fam19 + outlook + " 16.0.10407.20032"}},
		{o19, "16.0.10407.20032", nil},
		{o19, "16.0.10416.20007", nil},
		{o19, "16.0.10416.20027", nil},
		// Office LTSC 2024 has a history (November and December 2024) but
		// its CVEs here are of November and December 2025: not flagged.
		{"Microsoft Office LTSC Professional Plus 2024 - en-us", "16.0.17932.20162", nil},
		// Retail Office 2019 runs Current Channel builds: matched by the
		// Microsoft 365 Apps history as before.
		{"Microsoft Office Home and Business 2019 - en-us", "16.0.19328.20178", []string{"Microsoft Office 2019 CVE-2025-62554 16.0.19328.20266"}},
	}
	for _, c := range cases {
		got := officeFindings(ix.Match(Endpoint{Platform: "windows", Software: []Software{{Name: c.name, Publisher: "Microsoft Corporation", Version: c.version}}}))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s:\n got %q\nwant %q", c.name, c.version, got, c.want)
		}
	}
	// Without the volume-licensed history the same install is not matched.
	plain := officeTestIndex(t, []string{"m365-apps-builds-2025Q4.json"}, []string{"msrc-2024-Feb.xml"})
	if got := officeFindings(plain.Match(Endpoint{Platform: "windows", Software: []Software{{Name: ltsc21, Version: "16.0.14332.20615"}}})); len(got) != 0 {
		t.Errorf("without its history: %q", got)
	}
}
