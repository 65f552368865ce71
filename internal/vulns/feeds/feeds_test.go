package feeds

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

const testdata = "../testdata/"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(testdata + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func byID(cves []CVE) map[string]CVE {
	m := map[string]CVE{}
	for _, c := range cves {
		m[c.ID] = c
	}
	return m
}

func hasMatch(c CVE, want CPEMatch) bool {
	for _, m := range c.CPEMatches {
		if m == want {
			return true
		}
	}
	return false
}

func TestReadNVDFixture(t *testing.T) {
	cves, err := ReadNVD(bytes.NewReader(readFixture(t, "nvd-subset.json")))
	if err != nil {
		t.Fatal(err)
	}
	if len(cves) != 18 {
		t.Fatalf("got %d CVEs, want 18 (19 records, 1 rejected)", len(cves))
	}
	all := byID(cves)
	if _, ok := all["CVE-2023-5129"]; ok {
		t.Error("rejected CVE-2023-5129 was kept")
	}

	webp := all["CVE-2023-4863"]
	if webp.CVSS == nil || *webp.CVSS != 8.8 || webp.Severity != "HIGH" || webp.CVSSVersion != "3.1" ||
		webp.Vector != "CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:U/C:H/I:H/A:H" {
		t.Errorf("CVE-2023-4863 score = %v %q %q %q", webp.CVSS, webp.Severity, webp.CVSSVersion, webp.Vector)
	}
	if want := time.Date(2023, 9, 12, 15, 15, 24, 327e6, time.UTC); !webp.Published.Equal(want) {
		t.Errorf("published = %v, want %v", webp.Published, want)
	}
	if !strings.HasPrefix(webp.Description, "Heap buffer overflow in libwebp") {
		t.Errorf("description = %q", webp.Description)
	}
	for _, want := range []CPEMatch{
		{Part: "a", Vendor: "google", Product: "chrome", Version: "*", Update: "*", EndExcl: "116.0.5845.187", TargetSW: "*"},
		{Part: "a", Vendor: "mozilla", Product: "firefox_esr", Version: "*", Update: "*", StartIncl: "115.0", EndExcl: "115.2.1", TargetSW: "*"},
		{Part: "a", Vendor: "webmproject", Product: "libwebp", Version: "*", Update: "*", EndExcl: "1.3.2", TargetSW: "*"},
		{Part: "a", Vendor: "microsoft", Product: "edge", Version: "*", Update: "*", EndExcl: "117.0.2045.31", TargetSW: "*"},
		{Part: "o", Vendor: "debian", Product: "debian_linux", Version: "12.0", Update: "*", TargetSW: "*"},
	} {
		if !hasMatch(webp, want) {
			t.Errorf("CVE-2023-4863 lacks %+v", want)
		}
	}
	if len(webp.CPEMatches) != 14 {
		t.Errorf("CVE-2023-4863 has %d CPE matches, want 14", len(webp.CPEMatches))
	}

	log4j := all["CVE-2021-44228"]
	if log4j.CVSS == nil || *log4j.CVSS != 10 || log4j.CVSSVersion != "3.1" || log4j.Severity != "CRITICAL" {
		t.Errorf("log4j: v3.1 must win over v2: %v %q %q", log4j.CVSS, log4j.CVSSVersion, log4j.Severity)
	}
	if !hasMatch(log4j, CPEMatch{Part: "a", Vendor: "apache", Product: "log4j", Version: "2.0", Update: "beta9", TargetSW: "*"}) {
		t.Errorf("log4j 2.0 beta9 exact match missing: %+v", log4j.CPEMatches)
	}

	action1 := all["CVE-2025-5480"]
	if action1.CVSS == nil || *action1.CVSS != 7.8 || action1.CVSSVersion != "3.0" || action1.Severity != "HIGH" {
		t.Errorf("Action1: the CNA's Secondary 3.0 score must be used when there is no Primary: %v %q %q", action1.CVSS, action1.CVSSVersion, action1.Severity)
	}
	sevenZip := all["CVE-2025-0411"]
	if sevenZip.CVSS == nil || *sevenZip.CVSS != 7.0 || sevenZip.CVSSVersion != "3.1" {
		t.Errorf("7-Zip: the NVD's Primary 3.1 score must win over the CNA's 3.0: %v %q", sevenZip.CVSS, sevenZip.CVSSVersion)
	}
	mojo := all["CVE-2025-2783"]
	if len(mojo.CPEMatches) != 1 || mojo.CPEMatches[0].TargetSW != "windows" || mojo.CPEMatches[0].EndExcl != "134.0.6998.177" {
		t.Errorf("Chrome AND running on Windows: want Chrome limited to Windows, got %+v", mojo.CPEMatches)
	}
	npp := all["CVE-2023-40031"]
	if !hasMatch(npp, CPEMatch{Part: "a", Vendor: "notepad-plus-plus", Product: "notepad++", Version: "*", Update: "*", EndIncl: "8.5.6", TargetSW: "*"}) {
		t.Errorf("Notepad++ match (unescaped, end included) missing: %+v", npp.CPEMatches)
	}
	if c := all["CVE-2024-31497"]; c.Severity != "MEDIUM" {
		t.Errorf("PuTTY severity = %q", c.Severity)
	}
}

func TestNVDConfigurationsAndMetrics(t *testing.T) {
	doc := `{"format":"NVD_CVE","vulnerabilities":[
 {"cve":{"id":"CVE-2099-0001","vulnStatus":"Analyzed","published":"2099-01-01T00:00:00.000",
  "metrics":{
   "cvssMetricV40":[{"source":"cna@example.com","type":"Secondary","cvssData":{"version":"4.0","vectorString":"CVSS:4.0/AV:N","baseScore":9.3,"baseSeverity":"CRITICAL"}}],
   "cvssMetricV31":[{"source":"nvd@nist.gov","type":"Primary","cvssData":{"version":"3.1","vectorString":"CVSS:3.1/AV:N","baseScore":8.1,"baseSeverity":"HIGH"}}]},
  "configurations":[{"operator":"AND","nodes":[
    {"operator":"OR","negate":false,"cpeMatch":[
      {"vulnerable":true,"criteria":"cpe:2.3:a:zoom:meetings:*:*:*:*:*:*:*:*","versionEndExcluding":"5.16.5"},
      {"vulnerable":true,"criteria":"cpe:2.3:a:zoom:rooms:*:*:*:*:*:windows:*:*","versionEndExcluding":"5.16.5"}]},
    {"operator":"OR","negate":false,"cpeMatch":[
      {"vulnerable":false,"criteria":"cpe:2.3:o:microsoft:windows:-:*:*:*:*:*:*:*"}]}]},
   {"nodes":[{"operator":"OR","negate":true,"cpeMatch":[
      {"vulnerable":true,"criteria":"cpe:2.3:a:negated:thing:*:*:*:*:*:*:*:*"}]}]}]}},
 {"cve":{"id":"CVE-2099-0002","vulnStatus":"Analyzed","metrics":{
   "cvssMetricV40":[{"source":"nvd@nist.gov","type":"Primary","cvssData":{"version":"4.0","baseScore":6.9,"baseSeverity":"MEDIUM"}}],
   "cvssMetricV31":[{"source":"nvd@nist.gov","type":"Primary","cvssData":{"version":"3.1","baseScore":9.8,"baseSeverity":"CRITICAL"}}]}}},
 {"cve":{"id":"CVE-2099-0003","vulnStatus":"Analyzed","metrics":{
   "cvssMetricV2":[{"source":"nvd@nist.gov","type":"Primary","cvssData":{"version":"2.0","baseScore":5.0},"baseSeverity":"MEDIUM"}]}}},
 {"cve":{"id":"CVE-2099-0004","vulnStatus":"Received","descriptions":[{"lang":"es","value":"hola"},{"lang":"en","value":"hello"}]}},
 {"cve":{"id":"CVE-2099-0005","vulnStatus":"Rejected"}},
 {"cve":{"id":"CVE-2099-0006","vulnStatus":"Analyzed","metrics":{
   "cvssMetricV2":[{"source":"nvd@nist.gov","type":"Primary","cvssData":{"version":"2.0","baseScore":2.1}}]}}}
]}`
	cves, err := ReadNVD(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(cves) != 5 {
		t.Fatalf("got %d CVEs, want 5", len(cves))
	}
	c1 := cves[0]
	if *c1.CVSS != 8.1 || c1.CVSSVersion != "3.1" {
		t.Errorf("a Primary 3.1 score must win over a Secondary 4.0 one: %v %s", *c1.CVSS, c1.CVSSVersion)
	}
	if len(c1.CPEMatches) != 2 || c1.CPEMatches[0].Product != "meetings" || c1.CPEMatches[0].TargetSW != "windows" || c1.CPEMatches[1].TargetSW != "windows" {
		t.Errorf("AND configuration: want the two vulnerable Zoom matches only, got %+v", c1.CPEMatches)
	}
	if c := cves[1]; *c.CVSS != 6.9 || c.CVSSVersion != "4.0" || c.Severity != "MEDIUM" {
		t.Errorf("Primary 4.0 must win: %v %s %s", *c.CVSS, c.CVSSVersion, c.Severity)
	}
	if c := cves[2]; *c.CVSS != 5.0 || c.Severity != "MEDIUM" {
		t.Errorf("v2 severity sits beside cvssData: %v %q", *c.CVSS, c.Severity)
	}
	if c := cves[3]; c.CVSS != nil || c.Severity != "" || c.Description != "hello" {
		t.Errorf("unscored CVE: %v %q %q", c.CVSS, c.Severity, c.Description)
	}
	if c := cves[4]; c.ID != "CVE-2099-0006" || c.Severity != "LOW" {
		t.Errorf("severity from score: %+v", c)
	}
}

func TestParseNVDErrors(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := ParseNVD(bytes.NewReader(readFixture(t, "nvd-subset.json")), func(CVE) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Errorf("callback error: got %v after %d CVEs", err, n)
	}
	for _, doc := range []string{``, `[]`, `{"format":"NVD_CVE"}`, `{"vulnerabilities":[{"cve":`, `{"format":"OTHER","vulnerabilities":[]}`} {
		if err := ParseNVD(strings.NewReader(doc), func(CVE) error { return nil }); err == nil {
			t.Errorf("ParseNVD(%q) answered no error", doc)
		}
	}
}

// nvdStream writes an NVD document of n synthetic CVEs, about 1.5 KB each.
func nvdStream(w io.Writer, n int) error {
	if _, err := fmt.Fprintf(w, `{"resultsPerPage":%d,"startIndex":0,"totalResults":%d,"format":"NVD_CVE","version":"2.0","vulnerabilities":[`, n, n); err != nil {
		return err
	}
	pad := strings.Repeat("lorem ipsum ", 100)
	for i := range n {
		sep := ","
		if i == 0 {
			sep = ""
		}
		if _, err := fmt.Fprintf(w, `%s{"cve":{"id":"CVE-2024-%05d","published":"2024-01-01T00:00:00.000","vulnStatus":"Analyzed","descriptions":[{"lang":"en","value":"%s"}],"metrics":{"cvssMetricV31":[{"type":"Primary","cvssData":{"version":"3.1","baseScore":7.5,"baseSeverity":"HIGH"}}]},"configurations":[{"nodes":[{"operator":"OR","cpeMatch":[{"vulnerable":true,"criteria":"cpe:2.3:a:v%d:p%d:*:*:*:*:*:*:*:*","versionEndExcluding":"1.%d"}]}]}]}}`, sep, i, pad, i%100, i, i); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]}")
	return err
}

// TestParseNVDStreams feeds 40,000 CVEs (about 60 MB) through a pipe and
// checks that the heap never holds more than a small part of it.
func TestParseNVDStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const n = 40000
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(nvdStream(pw, n)) }()
	var ms runtime.MemStats
	var peak uint64
	count := 0
	err := ParseNVD(pr, func(c CVE) error {
		count++
		if count%5000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("parsed %d CVEs, want %d", count, n)
	}
	if peak > 40<<20 {
		t.Errorf("heap reached %d MB while streaming: the document is being held whole", peak>>20)
	}
}

func TestReadKEVFixture(t *testing.T) {
	kevs, err := ReadKEV(bytes.NewReader(readFixture(t, "kev-subset.json")))
	if err != nil {
		t.Fatal(err)
	}
	if len(kevs) != 10 {
		t.Fatalf("got %d entries, want 10", len(kevs))
	}
	m := map[string]KEV{}
	for _, k := range kevs {
		m[k.CVEID] = k
	}
	moveit := m["CVE-2023-34362"]
	if !moveit.Ransomware || moveit.VendorProject != "Progress" || moveit.Product != "MOVEit Transfer" ||
		!moveit.DateAdded.Equal(time.Date(2023, 6, 2, 0, 0, 0, 0, time.UTC)) ||
		!moveit.DueDate.Equal(time.Date(2023, 6, 23, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("MOVEit entry: %+v", moveit)
	}
	webp := m["CVE-2023-4863"]
	if webp.Ransomware || !webp.DueDate.Equal(time.Date(2023, 10, 4, 0, 0, 0, 0, time.UTC)) || webp.Name == "" {
		t.Errorf("webp entry: %+v", webp)
	}
	if _, err := ReadKEV(strings.NewReader(`{"vulnerabilities":`)); err == nil {
		t.Error("truncated KEV answered no error")
	}
}

func TestReadOSVFixtures(t *testing.T) {
	deb, err := ReadOSV(bytes.NewReader(readFixture(t, "osv-debian12.json")))
	if err != nil {
		t.Fatal(err)
	}
	if len(deb) != 7 {
		t.Fatalf("got %d Debian advisories, want 7", len(deb))
	}
	var found bool
	for _, a := range deb {
		if a.ID == "DEBIAN-CVE-2023-5363" {
			found = true
			if a.Ecosystem != "debian:12" || a.Package != "openssl" || len(a.CVEs) != 1 || a.CVEs[0] != "CVE-2023-5363" ||
				len(a.Ranges) != 1 || a.Ranges[0] != (AffectedRange{Introduced: "0", Fixed: "3.0.11-1~deb12u2"}) {
				t.Errorf("openssl advisory: %+v", a)
			}
		}
	}
	if !found {
		t.Error("DEBIAN-CVE-2023-5363 missing")
	}
	alma, err := ReadOSV(bytes.NewReader(readFixture(t, "osv-almalinux9.json")))
	if err != nil {
		t.Fatal(err)
	}
	if len(alma) != 3 {
		t.Fatalf("got %d AlmaLinux advisories, want 3", len(alma))
	}
	g := alma[1]
	if g.ID != "ALSA-2023:5455" || g.Ecosystem != "almalinux:9" || g.Package != "glibc" || len(g.CVEs) != 3 || g.CVEs[2] != "CVE-2023-4911" {
		t.Errorf("glibc advisory: %+v", g)
	}
}

func TestReadOSVShapes(t *testing.T) {
	single := `{"id":"UBUNTU-CVE-2024-0001","aliases":["CVE-2024-0001","GHSA-xxxx"],"withdrawn":"2024-05-01T00:00:00Z",
	 "severity":[{"type":"CVSS_V3","score":"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}],
	 "affected":[{"package":{"ecosystem":"Ubuntu:22.04:LTS","name":"curl"},
	   "ranges":[{"type":"GIT","events":[{"introduced":"abc"}]},
	             {"type":"ECOSYSTEM","events":[{"introduced":"0"},{"fixed":"7.81.0-1ubuntu1.15"},{"introduced":"8.0"},{"last_affected":"8.1"},{"introduced":"9"}]}],
	   "versions":["7.81.0-1ubuntu1.14"]},
	  {"package":{"ecosystem":"Rocky Linux:9","name":"curl"},"ranges":[{"type":"ECOSYSTEM","events":[{"fixed":"7.76.1-26.el9"}]}]},
	  {"package":{"ecosystem":"","name":"nothing"}}]}`
	advs, err := ReadOSV(strings.NewReader(single))
	if err != nil {
		t.Fatal(err)
	}
	if len(advs) != 2 {
		t.Fatalf("got %d advisories, want 2", len(advs))
	}
	u := advs[0]
	want := []AffectedRange{{Introduced: "0", Fixed: "7.81.0-1ubuntu1.15"}, {Introduced: "8.0", LastAffected: "8.1"}, {Introduced: "9"}}
	if u.Ecosystem != "ubuntu:22.04" || fmt.Sprint(u.Ranges) != fmt.Sprint(want) || u.Withdrawn.IsZero() ||
		len(u.CVEs) != 1 || u.CVEs[0] != "CVE-2024-0001" || len(u.Versions) != 1 || !strings.HasPrefix(u.Severity, "CVSS:3.1") {
		t.Errorf("Ubuntu advisory: %+v", u)
	}
	if r := advs[1]; r.Ecosystem != "rocky:9" || len(r.Ranges) != 1 || r.Ranges[0] != (AffectedRange{Introduced: "0", Fixed: "7.76.1-26.el9"}) {
		t.Errorf("Rocky advisory: %+v", r)
	}
	for _, doc := range []string{``, `{"affected":[]}`, `[{"id":1}]`, `"x"`} {
		if _, err := ReadOSV(strings.NewReader(doc)); err == nil {
			t.Errorf("ReadOSV(%q) answered no error", doc)
		}
	}
}

func TestNormalizeEcosystem(t *testing.T) {
	for in, want := range map[string]string{
		"Debian:12": "debian:12", "debian:12": "debian:12", "Debian 12.5": "debian:12", "Debian:11": "debian:11",
		"Ubuntu:22.04:LTS": "ubuntu:22.04", "Ubuntu:Pro:20.04:LTS": "ubuntu:20.04", "ubuntu:22.04.3": "ubuntu:22.04",
		"AlmaLinux:9": "almalinux:9", "almalinux:9.3": "almalinux:9", "Rocky Linux:9": "rocky:9", "rocky:9.2": "rocky:9",
		"Rocky Linux 8.9": "rocky:8", "Red Hat:enterprise_linux:9::appstream": "rhel:9", "Alpine:v3.18": "alpine:3.18",
		"Debian": "debian", "PyPI": "pypi", "": "", "Ubuntu 22.04.3 LTS": "ubuntu:22.04",
		"Debian GNU/Linux 12 (bookworm)": "debian:12", "AlmaLinux 9.3 (Shamrock Pampas Cat)": "almalinux:9", ":::": "",
	} {
		if got := NormalizeEcosystem(in); got != want {
			t.Errorf("NormalizeEcosystem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	for name, want := range map[string]Format{
		"nvd-subset.json": FormatNVD, "kev-subset.json": FormatKEV, "osv-debian12.json": FormatOSV, "osv-almalinux9.json": FormatOSV,
	} {
		b := readFixture(t, name)
		if f, err := Detect(b); f != want || err != nil {
			t.Errorf("Detect(%s) = %q, %v; want %q", name, f, err, want)
		}
		if f, _ := Detect(b[:300]); f != want { // a truncated head still tells
			t.Errorf("Detect(first 300 bytes of %s) = %q; want %q", name, f, want)
		}
	}
	f, r, err := DetectReader(bytes.NewReader(readFixture(t, "kev-subset.json")))
	if f != FormatKEV || err != nil {
		t.Errorf("DetectReader = %q, %v", f, err)
	}
	if kevs, err := ReadKEV(r); err != nil || len(kevs) != 10 {
		t.Errorf("reading after DetectReader: %d entries, %v", len(kevs), err)
	}
	for doc, want := range map[string]Format{
		`{"resultsPerPage":1,"vulnerabilities":[{"cve":{}}]}`:            FormatNVD,
		`{"vulnerabilities":[{"cveID":"CVE-2021-44228"}]}`:               FormatKEV,
		`{"id":"DSA-1","modified":"2024-01-01T00:00:00Z","affected":[]}`: FormatOSV,
		"\xEF\xBB\xBF{\"catalogVersion\":\"1\"}":                         FormatKEV,
		`{"CVE_data_type":"CVE","CVE_Items":[]}`:                         FormatUnknown,
		`{"hello":"world"}`:                                              FormatUnknown,
		`[1,2]`:                                                          FormatUnknown,
		`not json`:                                                       FormatUnknown,
		``:                                                               FormatUnknown,
	} {
		f, err := Detect([]byte(doc))
		if f != want || (want == FormatUnknown) != errors.Is(err, ErrUnknownFormat) {
			t.Errorf("Detect(%q) = %q, %v; want %q", doc, f, err, want)
		}
	}
}

func TestOpenPlainGzipZip(t *testing.T) {
	dir := t.TempDir()
	nvd, kev := readFixture(t, "nvd-subset.json"), readFixture(t, "kev-subset.json")
	deb, alma := readFixture(t, "osv-debian12.json"), readFixture(t, "osv-almalinux9.json")

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(nvd)
	zw.Close()
	gzPath := filepath.Join(dir, "nvdcve-2.0-2023.json.gz")
	os.WriteFile(gzPath, gz.Bytes(), 0o600)

	var zb bytes.Buffer
	z := zip.NewWriter(&zb)
	for name, b := range map[string][]byte{"osv/DEBIAN.json": deb, "osv/ALMA.json": alma, "kev.json": kev, "README.txt": []byte("not a feed")} {
		w, _ := z.Create(name)
		w.Write(b)
	}
	z.Close()
	zipPath := filepath.Join(dir, "all.zip")
	os.WriteFile(zipPath, zb.Bytes(), 0o600)

	cases := []struct {
		path string
		want Stats
	}{
		{testdata + "nvd-subset.json", Stats{Documents: 1, CVEs: 18, Rejected: 1}}, // CVE-2023-5129
		{gzPath, Stats{Documents: 1, CVEs: 18, Rejected: 1}},
		{zipPath, Stats{Documents: 3, KEVs: 10, OSV: 10}},
	}
	for _, c := range cases {
		var ids []string
		st, err := ParseFile(c.path, Handler{CVE: func(c CVE) error { ids = append(ids, c.ID); return nil }})
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if st != c.want {
			t.Errorf("%s: %+v, want %+v", c.path, st, c.want)
		}
		if len(ids) != c.want.CVEs {
			t.Errorf("%s: handler saw %d CVEs", c.path, len(ids))
		}
	}
	if _, err := ParseFile(filepath.Join(dir, "missing.json"), Handler{}); err == nil {
		t.Error("missing file answered no error")
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"hello":1}`), 0o600)
	if _, err := ParseFile(bad, Handler{}); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("unknown document: %v", err)
	}
}

func FuzzParseNVD(f *testing.F) {
	f.Add(readFixture(f, "nvd-subset.json"))
	f.Add([]byte(`{"format":"NVD_CVE","vulnerabilities":[{"cve":{"id":"CVE-1","configurations":[{"nodes":[{"cpeMatch":[{"vulnerable":true,"criteria":"cpe:2.3:a:x\\:y:z"}]}]}]}}]}`))
	f.Add([]byte(`{"vulnerabilities":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		Detect(b)
		ParseNVD(bytes.NewReader(b), func(c CVE) error {
			if c.ID == "" {
				t.Fatal("CVE without id")
			}
			return nil
		})
	})
}

func FuzzReadKEV(f *testing.F) {
	f.Add(readFixture(f, "kev-subset.json"))
	f.Add([]byte(`{"vulnerabilities":[{"cveID":" cve-1 ","dateAdded":"x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		Detect(b)
		ReadKEV(bytes.NewReader(b))
	})
}

func FuzzReadOSV(f *testing.F) {
	f.Add(readFixture(f, "osv-debian12.json"))
	f.Add(readFixture(f, "osv-almalinux9.json"))
	f.Add([]byte(`{"id":"X","affected":[{"package":{"ecosystem":"Ubuntu:Pro:::","name":"a"},"ranges":[{"type":"ECOSYSTEM","events":[{"fixed":"1"},{"introduced":"2"}]}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		Detect(b)
		ReadOSV(bytes.NewReader(b))
	})
}
