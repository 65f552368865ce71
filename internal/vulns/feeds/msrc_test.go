package feeds

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func parseMSRCFixture(t *testing.T, name string) MSRCDocument {
	t.Helper()
	var docs []MSRCDocument
	f, err := Parse(bytes.NewReader(readFixture(t, name)), Handler{MSRC: func(d MSRCDocument) error { docs = append(docs, d); return nil }})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if f != FormatMSRC || len(docs) != 1 {
		t.Fatalf("%s: format %q, %d documents; want msrc, 1", name, f, len(docs))
	}
	return docs[0]
}

func msrcVuln(t *testing.T, d MSRCDocument, cve string) MSRCVuln {
	t.Helper()
	for _, v := range d.Vulns {
		if v.CVE == cve {
			return v
		}
	}
	t.Fatalf("%s: no %s", d.ID, cve)
	return MSRCVuln{}
}

func fixesFor(v MSRCVuln, product string) []MSRCFix {
	var out []MSRCFix
	for _, f := range v.Fixes {
		if f.ProductID == product {
			out = append(out, f)
		}
	}
	return out
}

func TestParseMSRCNovember2025(t *testing.T) {
	d := parseMSRCFixture(t, "msrc-2025-Nov.xml")
	if d.ID != "2025-Nov" || d.Title != "November 2025 Security Updates" || !d.Released.Equal(time.Date(2025, 11, 11, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("header: %q %q %v", d.ID, d.Title, d.Released)
	}
	if len(d.Products) != 36 || len(d.Vulns) != 5 {
		t.Fatalf("%d products, %d CVEs; want 36, 5", len(d.Products), len(d.Vulns))
	}
	names := map[string]string{}
	for _, p := range d.Products {
		names[p.ID] = p.Name
	}
	for id, name := range map[string]string{"12243": "Windows 11 Version 23H2 for x64-based Systems", "11924": "Windows Server 2022 (Server Core installation)",
		"11569": "Windows 10 Version 1809 for x64-based Systems", "10816": "Windows Server 2016"} {
		if names[id] != name {
			t.Errorf("product %s = %q, want %q", id, names[id], name)
		}
	}
	k := msrcVuln(t, d, "CVE-2025-62215")
	if !k.Exploited || k.Disclosed || k.CVSS == nil || *k.CVSS != 7.0 || k.Severity != "Important" ||
		k.Vector != "CVSS:3.1/AV:L/AC:H/PR:L/UI:N/S:U/C:H/I:H/A:H/E:F/RL:O/RC:C" || k.Title != "Windows Kernel Elevation of Privilege Vulnerability" {
		t.Errorf("CVE-2025-62215 = %+v", k)
	}
	if got, want := fixesFor(k, "12243"), []MSRCFix{{ProductID: "12243", KB: "KB5068865", FixedBuild: "10.0.22631.6199", SubType: "Security Update",
		URL: "https://catalog.update.microsoft.com/v7/site/Search.aspx?q=KB5068865"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("23H2 fixes = %+v, want %+v", got, want)
	}
	// Server 2022 has its monthly update and a hotpatch, with a lower build.
	s22 := fixesFor(k, "11923")
	if len(s22) != 2 || s22[0].KB != "KB5068787" || s22[0].FixedBuild != "10.0.20348.4405" || s22[0].Hotpatch() ||
		s22[1].KB != "KB5068840" || s22[1].FixedBuild != "10.0.20348.4346" || !s22[1].Hotpatch() {
		t.Errorf("Server 2022 fixes = %+v", s22)
	}
	// Release Notes and Known Issue remediations are no fixes.
	for _, f := range k.Fixes {
		if !strings.HasPrefix(f.KB, "KB50") {
			t.Errorf("fix %+v", f)
		}
	}
	r := msrcVuln(t, d, "CVE-2025-60713")
	if r.Exploited || *r.CVSS != 7.8 || len(fixesFor(r, "12243")) != 0 || len(fixesFor(r, "11571")) != 1 {
		t.Errorf("CVE-2025-60713 = %+v", r)
	}
	// Office: Click-to-Run products get a "Click to Run" fix with no build
	// (the document's FixedBuild is a link), Office 2016 (MSI) a KB and the
	// file version it brings.
	o := msrcVuln(t, d, "CVE-2025-62199")
	if got, want := fixesFor(o, "11763"), []MSRCFix{{ProductID: "11763", KB: ClickToRun, SubType: "Security Update",
		URL: "https://aka.ms/OfficeSecurityReleases"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Microsoft 365 Apps fixes = %+v, want %+v", got, want)
	}
	if got, want := fixesFor(o, "10754"), []MSRCFix{{ProductID: "10754", KB: "KB5002809", FixedBuild: "16.0.5526.1000", SubType: "Security Update",
		URL: "https://www.microsoft.com/en-us/download/details.aspx?id=108440"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Office 2016 fixes = %+v, want %+v", got, want)
	}
	if len(fixesFor(o, "11574")) != 0 || len(fixesFor(o, "11952")) != 1 || len(fixesFor(o, "12421")) != 1 {
		t.Errorf("CVE-2025-62199 fixes = %+v", o.Fixes)
	}
	// CVE-2025-60728: Microsoft 365 Apps and Office LTSC 2024 only.
	e := msrcVuln(t, d, "CVE-2025-60728")
	var ids []string
	for _, f := range e.Fixes {
		ids = append(ids, f.ProductID+" "+f.KB)
	}
	if strings.Join(ids, ",") != "11762 Click to Run,11763 Click to Run,12420 Click to Run,12421 Click to Run" {
		t.Errorf("CVE-2025-60728 fixes = %v", ids)
	}
}

// The JSON form (the API's default) reads to the same document as the XML.
func TestParseMSRCJSONMatchesXML(t *testing.T) {
	x := parseMSRCFixture(t, "msrc-2025-Dec.xml")
	j := parseMSRCFixture(t, "msrc-2025-Dec.json")
	if !reflect.DeepEqual(x, j) {
		t.Fatalf("JSON and XML differ:\nxml  %+v\njson %+v", x, j)
	}
	v := msrcVuln(t, j, "CVE-2025-62221")
	if !v.Exploited || *v.CVSS != 7.8 || len(v.Fixes) != 29 {
		t.Errorf("CVE-2025-62221 = %+v (%d fixes)", v, len(v.Fixes))
	}
}

func TestDetectMSRC(t *testing.T) {
	for _, c := range []struct {
		head string
		want Format
	}{
		{`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<cvrf:cvrfdoc xmlns:cvrf="http://www.icasi.org/CVRF/schema/cvrf/1.1">`, FormatMSRC},
		{`<cvrfdoc>`, FormatMSRC},
		{`{"DocumentTitle":{"Value":"December 2025 Security Updates"}`, FormatMSRC},
		{`<html><body>`, FormatUnknown},
		{`<?xml version="1.0"?><rss>`, FormatUnknown},
	} {
		got, _ := Detect([]byte(c.head))
		if got != c.want {
			t.Errorf("Detect(%q) = %q, want %q", c.head, got, c.want)
		}
	}
}

func TestParseMSRCRejectsBadDocuments(t *testing.T) {
	for _, doc := range []string{
		`<cvrf:cvrfdoc xmlns:cvrf="x"><cvrf:DocumentTitle>t</cvrf:DocumentTitle></cvrf:cvrfdoc>`, // no ID
		`<cvrf:cvrfdoc xmlns:cvrf="x"><cvrf:DocumentTracking>`,                                   // truncated
		`{"DocumentTitle":{"Value":"x"},"Vulnerability":[`,                                       // truncated
		`{"DocumentTitle":{"Value":"x"}}`,                                                        // no ID
	} {
		if _, err := Parse(strings.NewReader(doc), Handler{MSRC: func(MSRCDocument) error { return nil }}); err == nil {
			t.Errorf("Parse(%q): no error", doc)
		}
	}
}

// The Microsoft 365 Apps release history (a real cut of Microsoft's table,
// testdata/README.md).
func TestParseOfficeBuilds(t *testing.T) {
	var got []OfficeBuild
	f, err := Parse(bytes.NewReader(readFixture(t, "m365-apps-builds-2025Q4.json")), Handler{OfficeBuilds: func(l []OfficeBuild) error {
		got = l
		return nil
	}})
	if err != nil || f != FormatOfficeBuilds {
		t.Fatalf("format %q, %v", f, err)
	}
	if len(got) != 36 {
		t.Fatalf("%d releases, want 36", len(got))
	}
	want := OfficeBuild{Released: time.Date(2025, 11, 11, 0, 0, 0, 0, time.UTC), Channel: "Current", Version: "2510", Build: "19328.20190"}
	if !slices.Contains(got, want) {
		t.Errorf("no %+v", want)
	}
	for _, doc := range []string{
		`{"DataForGeeks":{},"Data":[{"ReleaseDate":"11/11/2025","Channel":"Current","Build":"19328.20190"}]}`,
		`{"DataForGeeks":{},"Data":[{"ReleaseDate":"2025-11-11","Channel":"Current","Build":"2510"}]}`,
		`{"DataForGeeks":{},"Data":[{"ReleaseDate":"2025-11-11","Channel":"","Build":"19328.20190"}]}`,
		`{"DataForGeeks":{},"Data":[`,
	} {
		if _, err := Parse(strings.NewReader(doc), Handler{}); err == nil {
			t.Errorf("Parse(%q): no error", doc)
		}
	}
}

// Volume-licensed Office builds: a patchdOfficeBuilds document of rows of
// the same shape (testdata/README.md), read as an Office release history.
func TestParseOfficeVolumeLicensedBuilds(t *testing.T) {
	var got []OfficeBuild
	f, err := Parse(bytes.NewReader(readFixture(t, "office-vl-builds-2023-2024.json")), Handler{OfficeBuilds: func(l []OfficeBuild) error {
		got = l
		return nil
	}})
	if err != nil || f != FormatOfficeBuilds || len(got) != 10 {
		t.Fatalf("format %q, %d rows, %v", f, len(got), err)
	}
	want := OfficeBuild{Released: time.Date(2024, 2, 13, 0, 0, 0, 0, time.UTC), Channel: "Office 2019 Volume Licensed", Version: "1808", Build: "10407.20032"}
	if !slices.Contains(got, want) {
		t.Errorf("no %+v in %+v", want, got)
	}
	if _, err := Parse(strings.NewReader(`{"patchdOfficeBuilds":{},"Data":[{"ReleaseDate":"2024-02-13","Channel":"Office 2019 Volume Licensed","Build":"1808"}]}`), Handler{}); err == nil {
		t.Error("a row without a build: no error")
	}
}

func TestPatchTuesday(t *testing.T) {
	for month, want := range map[string]string{"2025-Nov": "2025-11-11", "2025-Dec": "2025-12-09", "2026-Jan": "2026-01-13", "2024-Oct": "2024-10-08"} {
		got, ok := PatchTuesday(month)
		if !ok || got.Format("2006-01-02") != want {
			t.Errorf("PatchTuesday(%s) = %v, want %s", month, got, want)
		}
	}
	if _, ok := PatchTuesday("November"); ok {
		t.Error("PatchTuesday(November) ok")
	}
}
