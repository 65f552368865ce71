package match

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/vulns/feeds"
)

// fixtureIndex builds an index from the NVD and OSV fixtures, plus extra CVEs.
func fixtureIndex(t testing.TB, extra ...feeds.CVE) *Index {
	t.Helper()
	b := NewBuilder()
	for _, name := range []string{"nvd-subset.json", "osv-debian12.json", "osv-almalinux9.json"} {
		if _, err := feeds.ParseFile("../testdata/"+name, feeds.Handler{CVE: func(c feeds.CVE) error { b.AddCVE(c); return nil },
			OSV: func(a feeds.OSVAdvisory) error { b.AddOSV(a); return nil }}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range extra {
		b.AddCVE(c)
	}
	return b.Build(nil)
}

func cves(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.CVEID)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestMatchApplications(t *testing.T) {
	zoomCVE := feeds.CVE{ID: "CVE-2099-1000", CPEMatches: []feeds.CPEMatch{
		{Part: "a", Vendor: "zoom", Product: "meetings", Version: "*", EndExcl: "5.16.5", TargetSW: "*"}}}
	androidOnly := feeds.CVE{ID: "CVE-2099-1001", CPEMatches: []feeds.CPEMatch{
		{Part: "a", Vendor: "google", Product: "chrome", Version: "*", EndExcl: "200.0", TargetSW: "android"}}}
	windowsOnly := feeds.CVE{ID: "CVE-2099-1002", CPEMatches: []feeds.CPEMatch{
		{Part: "a", Vendor: "7-zip", Product: "7-zip", Version: "23.01", TargetSW: "windows"}}}
	legacyEdge := feeds.CVE{ID: "CVE-2099-1003", CPEMatches: []feeds.CPEMatch{ // as EdgeHTML-era records are written
		{Part: "a", Vendor: "microsoft", Product: "edge", Version: "-", TargetSW: "*"},
		{Part: "a", Vendor: "microsoft", Product: "edge", Version: "*", EndExcl: "118.0", TargetSW: "*"}}}
	office := feeds.CVE{ID: "CVE-2099-1004", CPEMatches: []feeds.CPEMatch{
		{Part: "a", Vendor: "microsoft", Product: "365_apps", Version: "-", Update: "*", TargetSW: "*"}}}
	ix := fixtureIndex(t, zoomCVE, androidOnly, windowsOnly, legacyEdge, office)

	cases := []struct {
		name, publisher, version string
		platform                 string
		want                     []string
	}{
		{"Google Chrome", "Google LLC", "116.0.5845.141", "windows", []string{"CVE-2023-4863", "CVE-2024-12053", "CVE-2024-4671", "CVE-2025-2783"}},
		{"Google Chrome", "Google LLC", "116.0.5845.187", "windows", []string{"CVE-2024-12053", "CVE-2024-4671", "CVE-2025-2783"}}, // versionEndExcluding boundary
		{"Google Chrome", "Google LLC", "124.0.6367.201", "windows", []string{"CVE-2024-12053", "CVE-2025-2783"}},
		{"Google Chrome", "Google LLC", "131.0.6778.108", "windows", []string{"CVE-2025-2783"}},
		{"Google Chrome", "Google LLC", "131.0.6778.108", "darwin", nil}, // CVE-2025-2783: Chrome AND running on Windows
		{"Google Chrome", "Google LLC", "134.0.6998.177", "windows", nil},
		{"Google Chrome", "Google LLC", "199.0", "android", []string{"CVE-2099-1001"}},
		{"Google Chrome", "", "116.0.5845.96", "darwin", []string{"CVE-2023-4863", "CVE-2024-12053", "CVE-2024-4671"}},
		// Edge: Chromium Edge is microsoft:edge in the NVD since 2023, as EdgeHTML Edge was
		// without versions; rangesOnly keeps those versionless rules out.
		{"Microsoft Edge", "Microsoft Corporation", "116.0.1938.81", "windows", []string{"CVE-2023-4863", "CVE-2099-1003"}}, // four-part
		{"Microsoft Edge", "Microsoft Corporation", "117.0.2045.31", "windows", []string{"CVE-2099-1003"}},
		{"Microsoft Edge", "Microsoft Corporation", "200.0", "windows", nil},
		// Microsoft 365 Apps: the NVD publishes no build ranges, only "every version".
		{"Microsoft 365 Apps for enterprise - en-us", "Microsoft Corporation", "16.0.18129.20158", "windows", nil},
		{"Action1 Agent", "Action1 Corporation", "5.218.620.0", "windows", []string{"CVE-2025-5480"}},
		{"Action1 Agent", "Action1 Corporation", "5.218.620.1", "windows", nil},
		{"Mozilla Firefox (x64 en-US)", "Mozilla", "117.0", "windows", []string{"CVE-2023-4863", "CVE-2024-9680"}},
		{"Mozilla Firefox (x64 en-US)", "Mozilla", "117.0.1", "windows", []string{"CVE-2024-9680"}},
		// ESR must use the firefox_esr ranges: 115.16.1 is fixed there, though < 131.0.2 and < 117.0.1.
		{"Mozilla Firefox 115.16.1 ESR (x64 en-US)", "Mozilla", "115.16.1", "windows", nil},
		{"Mozilla Firefox 115.2.0 ESR (x64 en-US)", "Mozilla", "115.2.0", "windows", []string{"CVE-2023-4863", "CVE-2024-9680"}},
		{"Mozilla Firefox ESR (x64 en-US)", "Mozilla", "115.2.1", "windows", []string{"CVE-2024-9680"}},
		{"Notepad++ (64-bit x64)", "Notepad++ Team", "8.5.6", "windows", []string{"CVE-2023-40031"}}, // versionEndIncluding
		{"Notepad++ (64-bit x64)", "Notepad++ Team", "8.5.7", "windows", nil},
		{"7-Zip 23.01 (x64)", "Igor Pavlov", "23.01", "windows", []string{"CVE-2024-11477", "CVE-2025-0411", "CVE-2099-1002"}},
		{"7-Zip 23.01 (x64)", "Igor Pavlov", "23.01", "darwin", []string{"CVE-2024-11477", "CVE-2025-0411"}},
		{"7-Zip 24.07 (x64)", "Igor Pavlov", "24.07", "windows", []string{"CVE-2025-0411"}},
		{"7-Zip 24.09 (x64)", "Igor Pavlov", "24.09", "windows", nil},
		{"Zoom", "Zoom Video Communications, Inc.", "5.16.2", "windows", []string{"CVE-2099-1000"}},
		{"Zoom", "ZOOM Corporation", "5.16.2", "windows", nil}, // same name, another vendor
		{"Zoom", "", "5.16.2", "windows", nil},                 // too common a name to trust alone
		{"PuTTY release 0.80 (64-bit)", "Simon Tatham", "0.80.0.0", "windows", []string{"CVE-2024-31497"}},
		{"PuTTY release 0.81 (64-bit)", "Simon Tatham", "0.81.0.0", "windows", nil},
		{"PuTTY release 0.67", "Simon Tatham", "0.67", "windows", nil}, // before versionStartIncluding
		{"WinSCP 6.1.2", "Martin Prikryl", "6.1.2", "windows", []string{"CVE-2024-31497"}},
		{"MOVEit Transfer", "Progress Software Corporation", "2023.0.0", "windows", []string{"CVE-2023-34362"}},
		{"MOVEit Transfer", "Progress Software Corporation", "2022.1.4", "windows", []string{"CVE-2023-34362"}},
		{"MOVEit Transfer", "Progress Software Corporation", "2022.1.5", "windows", []string{"CVE-2023-34362"}}, // the NVD's bound, one above the vendor's
		{"MOVEit Transfer", "Progress Software Corporation", "2022.1.6", "windows", nil},
		{"MOVEit Transfer", "Progress Software Corporation", "2023.0.2", "windows", nil},
		{"MOVEit Transfer", "Progress Software Corporation", "2020.1.6", "windows", []string{"CVE-2023-34362"}}, // versionEndIncluding
		{"MOVEit Transfer", "Progress Software Corporation", "2020.1.7", "windows", nil},
		{"VLC media player", "VideoLAN", "3.0.18", "windows", []string{"CVE-2023-47359"}},
		{"VLC media player", "VideoLAN", "3.0.20", "windows", nil},
		{"WinRAR 6.22 (64-bit)", "win.rar GmbH", "6.22.0", "windows", []string{"CVE-2023-38831"}},
		{"WinRAR 6.23 (64-bit)", "win.rar GmbH", "6.23.0", "windows", nil},
		{"Some Unknown Tool", "ACME", "1.0", "windows", nil},
	}
	for _, c := range cases {
		fs := ix.Match(Endpoint{Platform: c.platform, Software: []Software{{Name: c.name, Publisher: c.publisher, Version: c.version, InstallType: "msi"}}})
		if got := cves(fs); !slices.Equal(got, c.want) {
			t.Errorf("%s %s (%s) on %s: got %v, want %v", c.name, c.version, c.publisher, c.platform, got, c.want)
		}
	}

	fs := ix.Match(Endpoint{Platform: "windows", Software: []Software{{Name: "Google Chrome", Publisher: "Google LLC", Version: "116.0.5845.141"}}})
	want := Finding{CVEID: "CVE-2023-4863", Software: "Google Chrome", Version: "116.0.5845.141", FixedIn: "116.0.5845.187", Source: "google:chrome"}
	if len(fs) != 4 || fs[0] != want {
		t.Errorf("finding = %+v, want first %+v", fs, want)
	}
}

func TestMatchDebian(t *testing.T) {
	ix := fixtureIndex(t)
	cases := []struct {
		name, source, version string
		want                  []string
	}{
		{"openssl", "", "3.0.11-1~deb12u1", []string{"CVE-2023-5363"}},
		{"libssl3", "openssl", "3.0.11-1~deb12u1", []string{"CVE-2023-5363"}},
		{"libssl3", "openssl", "3.0.11-1~deb12u2", nil}, // the fixed backport
		{"openssl", "", "3.0.11-1~deb12u2", nil},        // NVD says 3.0.11 < 3.0.12: must not be used
		{"libssl3", "openssl (3.0.13-1~deb12u1)", "3.0.13-1~deb12u1", nil},
		{"libwebp7", "libwebp", "1.2.4-0.2", []string{"CVE-2023-4863"}},
		{"libwebp7", "libwebp", "1.2.4-0.2+deb12u1", nil},
		{"libc6", "glibc", "2.36-9+deb12u1", []string{"CVE-2023-4911"}},
		{"libc6", "glibc", "2.36-9+deb12u3", nil},
		{"libc6", "glibc", "2.36-9+deb12u7", nil},
		{"xz-utils", "", "5.4.1-0.2", nil}, // bookworm never had the backdoor
		{"liblzma5", "xz-utils", "5.4.1-0.2", nil},
		{"google-chrome-stable", "", "116.0.5845.96-1", nil},
	}
	for _, c := range cases {
		for _, distro := range []string{"debian:12", "Debian 12.5", "Debian:12"} {
			fs := ix.Match(Endpoint{Platform: "linux", Distro: distro, Software: []Software{{Name: c.name, SourcePackage: c.source, Version: c.version, InstallType: "deb"}}})
			if got := cves(fs); !slices.Equal(got, c.want) {
				t.Errorf("%s %s (%s) on %s: got %v, want %v", c.name, c.version, c.source, distro, got, c.want)
			}
		}
	}
	// Several binaries of one source give one finding per CVE.
	fs := ix.Match(Endpoint{Platform: "linux", Distro: "debian:12", Software: []Software{
		{Name: "openssl", Version: "3.0.11-1~deb12u1", InstallType: "deb"},
		{Name: "libssl3", SourcePackage: "openssl", Version: "3.0.11-1~deb12u1", InstallType: "deb"},
	}})
	want := []Finding{{CVEID: "CVE-2023-5363", Software: "openssl", Version: "3.0.11-1~deb12u1", FixedIn: "3.0.11-1~deb12u2", Source: "DEBIAN-CVE-2023-5363"}}
	if !slices.Equal(fs, want) {
		t.Errorf("got %+v, want %+v", fs, want)
	}
	// Another release or no release: nothing.
	for _, distro := range []string{"debian:11", ""} {
		if fs := ix.Match(Endpoint{Platform: "linux", Distro: distro, Software: []Software{{Name: "openssl", Version: "3.0.0-1", InstallType: "deb"}}}); len(fs) != 0 {
			t.Errorf("%q: %+v", distro, fs)
		}
	}
	// A library on bullseye uses the bullseye fix.
	if fs := ix.Match(Endpoint{Distro: "debian:11", Software: []Software{{Name: "libwebp6", SourcePackage: "libwebp", Version: "0.6.1-2.1+deb11u1", InstallType: "deb"}}}); len(fs) != 1 {
		t.Errorf("bullseye libwebp: %+v", fs)
	}
}

func TestMatchAlmaLinux(t *testing.T) {
	ix := fixtureIndex(t)
	cases := []struct {
		name, source, version string
		want                  int
	}{
		{"openssl", "", "3.0.7-24.el9", 5}, // epoch missing from the agent's version
		{"openssl-libs", "openssl-3.0.7-24.el9.src.rpm", "1:3.0.7-24.el9", 5},
		{"openssl", "", "1:3.0.7-27.el9", 0},
		{"openssl", "", "3.0.7-27.el9", 0},
		{"glibc", "", "2.34-60.el9", 3},
		{"glibc", "", "2.34-60.el9_2.7", 0},
		{"glibc-common", "glibc", "2.34-83.el9.7", 0},
		{"libwebp", "", "1.2.0-6.el9_1", 1},
		{"libwebp", "", "1.2.0-7.el9_2", 0},
	}
	for _, c := range cases {
		fs := ix.Match(Endpoint{Platform: "linux", Distro: "almalinux:9.3", Software: []Software{{Name: c.name, SourcePackage: c.source, Version: c.version, InstallType: "rpm"}}})
		if len(fs) != c.want {
			t.Errorf("%s %s: %d findings %+v, want %d", c.name, c.version, len(fs), fs, c.want)
		}
	}
}

func TestOSVRules(t *testing.T) {
	b := NewBuilder()
	b.AddOSV(feeds.OSVAdvisory{ID: "X-1", CVEs: []string{"CVE-2099-1"}, Ecosystem: "ubuntu:22.04", Package: "curl",
		Ranges: []feeds.AffectedRange{{Introduced: "7.80.0-1", LastAffected: "7.81.0-1ubuntu1.14"}}})
	b.AddOSV(feeds.OSVAdvisory{ID: "X-2", CVEs: []string{"CVE-2099-2"}, Ecosystem: "ubuntu:22.04", Package: "curl",
		Withdrawn: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Ranges: []feeds.AffectedRange{{Introduced: "0"}}})
	b.AddOSV(feeds.OSVAdvisory{ID: "X-3", Ecosystem: "ubuntu:22.04", Package: "curl", Versions: []string{"7.81.0-1ubuntu1.99"}})
	b.AddOSV(feeds.OSVAdvisory{ID: "X-4", CVEs: []string{"CVE-2099-4"}, Ecosystem: "ubuntu:22.04", Package: "vim",
		Ranges: []feeds.AffectedRange{{Introduced: "0"}}})
	ix := b.Build(nil)
	run := func(pkg, v string) []string {
		return cves(ix.Match(Endpoint{Distro: "Ubuntu 22.04.3 LTS", Software: []Software{{Name: pkg, Version: v, InstallType: "deb"}}}))
	}
	for _, c := range []struct {
		pkg, v string
		want   []string
	}{
		{"curl", "7.79.0-1", nil},
		{"curl", "7.80.0-1", []string{"CVE-2099-1"}},
		{"curl", "7.81.0-1ubuntu1.14", []string{"CVE-2099-1"}}, // last_affected is inclusive
		{"curl", "7.81.0-1ubuntu1.15", nil},
		{"curl", "7.81.0-1ubuntu1.99", []string{"X-3"}}, // listed version, advisory without CVE
		{"vim", "2:8.2.3995-1ubuntu2", []string{"CVE-2099-4"}},
	} {
		if got := run(c.pkg, c.v); !slices.Equal(got, c.want) {
			t.Errorf("%s %s: got %v, want %v", c.pkg, c.v, got, c.want)
		}
	}
}

func TestExactAndUpdateRules(t *testing.T) {
	cat, err := LoadCatalog(strings.NewReader(`[{"display":"Log4j","cpe":["apache:log4j"],"names":["apache log4j"]}]`))
	if err != nil {
		t.Fatal(err)
	}
	b := NewBuilder()
	if _, err := feeds.ParseFile("../testdata/nvd-subset.json", feeds.Handler{CVE: func(c feeds.CVE) error { b.AddCVE(c); return nil }}); err != nil {
		t.Fatal(err)
	}
	ix := b.Build(cat)
	for v, want := range map[string]int{"2.0-beta9": 1, "2.0-rc2": 1, "2.0": 1, "2.0.0": 1, "2.0.1": 1, "2.3.1": 0, "2.12.1": 1, "2.12.2": 0, "2.14.1": 1, "2.15.0": 0, "2.17.1": 0, "1.2.17": 0} {
		fs := ix.Match(Endpoint{Platform: "windows", Software: []Software{{Name: "Apache Log4j", Version: v}}})
		if len(fs) != want {
			t.Errorf("log4j %s: %d findings, want %d", v, len(fs), want)
		}
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{
		"Mozilla Firefox (x64 en-US)":                     "mozilla firefox",
		"Mozilla Firefox 115.3.1 ESR (x64 en-US)":         "mozilla firefox esr",
		"7-Zip 23.01 (x64)":                               "7-zip",
		"Notepad++ (64-bit x64)":                          "notepad++",
		"Java 8 Update 381 (64-bit)":                      "java update",
		"Java(TM) SE Development Kit 17.0.8 (64-bit)":     "java se development kit",
		"Python 3.11.4 (64-bit)":                          "python",
		"PuTTY release 0.79 (64-bit)":                     "putty",
		"Microsoft .NET Runtime - 8.0.1 (x64)":            "microsoft .net runtime",
		"Adobe Acrobat Reader DC MUI":                     "adobe acrobat reader dc mui",
		"Google Chrome.app":                               "google chrome",
		"Win64 OpenSSL v3.1.2":                            "openssl",
		"Microsoft® Teams™":                               "microsoft teams",
		"Git version 2.42.0":                              "git",
		"Wireshark 4.0.8 64-bit":                          "wireshark",
		"Eclipse Temurin JDK with Hotspot 17.0.8+7 (x64)": "eclipse temurin jdk with hotspot",
		"Some App (remove only)":                          "some app",
		"":                                                "",
		"((((":                                            "",
	} {
		if got := NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCatalogResolve(t *testing.T) {
	c := DefaultCatalog()
	if c.Len() < 150 {
		t.Errorf("catalog knows %d names, want at least 150", c.Len())
	}
	for _, tc := range []struct{ name, pub, want string }{
		{"Mozilla Firefox (x64 en-US)", "Mozilla", "mozilla:firefox"},
		{"Mozilla Firefox 128.3.1 ESR (x64 en-US)", "Mozilla", "mozilla:firefox_esr"},
		{"Microsoft Edge", "Microsoft Corporation", "microsoft:edge_chromium"},
		{"Notepad++ (64-bit x64)", "Notepad++ Team", "notepad-plus-plus:notepad++"},
		{"Adobe Acrobat Reader DC", "Adobe Systems Incorporated", "adobe:acrobat_reader_dc"},
		{"VLC media player", "VideoLAN", "videolan:vlc_media_player"},
		{"IntelliJ IDEA Community Edition 2023.2", "JetBrains s.r.o.", "jetbrains:intellij_idea"},
		{"PowerShell 7-x64", "Microsoft Corporation", "microsoft:powershell"},
		{"Java 8 Update 381", "Oracle Corporation", "oracle:jre"},
		{"Java 8 Update 381", "", ""}, // "java" alone is not enough
		{"Eclipse Temurin JDK with Hotspot 17.0.8+7 (x64)", "Eclipse Adoptium", "eclipse:temurin"},
		{"MOVEit Transfer", "Progress Software Corporation", "progress:moveit_transfer"},
		{"Python 3.11.4 (64-bit)", "Python Software Foundation", "python:python"},
		{"Python 3.11.4 (64-bit)", "ActiveState", ""},
		{"Git", "The Git Development Community", "git-scm:git"},
	} {
		ps := c.Resolve(tc.name, tc.pub)
		got := ""
		if len(ps) > 0 {
			got = ps[0].CPEs[0]
		}
		if got != tc.want {
			t.Errorf("Resolve(%q, %q) = %q, want %q", tc.name, tc.pub, got, tc.want)
		}
	}
	if _, err := LoadCatalog(strings.NewReader(`[{"display":"X","cpe":["nocolon"],"names":["x"]}]`)); err == nil {
		t.Error("bad cpe key accepted")
	}
	if _, err := os.Stat("cpemap.json"); err != nil {
		t.Error(err)
	}
}

// TestConcurrentMatch lets -race check that one index serves many
// goroutines (the catalog's name cache is the only shared state written).
func TestConcurrentMatch(t *testing.T) {
	ix := fixtureIndex(t)
	ep := Endpoint{Platform: "windows", Software: []Software{
		{Name: "Google Chrome", Publisher: "Google LLC", Version: "116.0.5845.141"},
		{Name: "7-Zip 23.01 (x64)", Publisher: "Igor Pavlov", Version: "23.01"},
	}}
	want := len(ix.Match(ep))
	done := make(chan int)
	for g := 0; g < 4; g++ {
		go func() {
			n := 0
			for i := 0; i < 50; i++ {
				sw := append(slices.Clone(ep.Software), Software{Name: fmt.Sprintf("Tool %d-%d", g, i), Version: "1"})
				n = len(ix.Match(Endpoint{Platform: "windows", Software: sw}))
			}
			done <- n
		}()
	}
	for g := 0; g < 4; g++ {
		if n := <-done; n != want {
			t.Errorf("concurrent match found %d, want %d", n, want)
		}
	}
}

func TestOracleJavaVersions(t *testing.T) {
	java := feeds.CVE{ID: "CVE-2099-2000", CPEMatches: []feeds.CPEMatch{
		{Part: "a", Vendor: "oracle", Product: "jre", Version: "1.8.0", Update: "update381", TargetSW: "*"},
		{Part: "a", Vendor: "oracle", Product: "jdk", Version: "1.8.0", Update: "update_381", TargetSW: "*"},
		{Part: "a", Vendor: "oracle", Product: "jdk", Version: "17.0.8", Update: "*", TargetSW: "*"}}}
	ix := fixtureIndex(t, java)
	for _, c := range []struct {
		name, version string
		want          int
	}{
		{"Java 8 Update 381 (64-bit)", "8.0.3810.9", 1},
		{"Java 8 Update 391 (64-bit)", "8.0.3910.10", 0},
		{"Java(TM) SE Development Kit 8 Update 381", "1.8.0_381", 1},
		{"Java(TM) SE Development Kit 17.0.8 (64-bit)", "17.0.8.0", 1},
		{"Java(TM) SE Development Kit 17.0.9 (64-bit)", "17.0.9.0", 0},
	} {
		fs := ix.Match(Endpoint{Platform: "windows", Software: []Software{{Name: c.name, Publisher: "Oracle Corporation", Version: c.version}}})
		if len(fs) != c.want {
			t.Errorf("%s %s: %+v, want %d findings", c.name, c.version, fs, c.want)
		}
		if len(fs) == 1 && fs[0].Version != c.version {
			t.Errorf("finding shows %q, want the installed %q", fs[0].Version, c.version)
		}
	}
}
