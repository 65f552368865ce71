package match

import (
	"fmt"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/vulns/feeds"
)

// msrcIndex builds an index from the real MSRC fixtures (November and
// December 2025) and the Microsoft 365 Apps release history of those months.
func msrcIndex(t testing.TB) *Index {
	t.Helper()
	b := NewBuilder()
	if _, err := feeds.ParseFile("../testdata/m365-apps-builds-2025Q4.json", feeds.Handler{OfficeBuilds: func(l []feeds.OfficeBuild) error {
		for _, r := range l {
			b.AddOfficeBuild(r)
		}
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"msrc-2025-Nov.xml", "msrc-2025-Dec.xml"} {
		if _, err := feeds.ParseFile("../testdata/"+name, feeds.Handler{MSRC: func(d feeds.MSRCDocument) error {
			names := map[string]string{}
			for _, p := range d.Products {
				names[p.ID] = p.Name
			}
			for _, v := range d.Vulns {
				for _, f := range v.Fixes {
					b.AddMSRCFix(MSRCFix{CVEID: v.CVE, ProductID: f.ProductID, ProductName: names[f.ProductID], KB: f.KB,
						FixedBuild: f.FixedBuild, Hotpatch: f.Hotpatch(), Release: d.ID})
				}
			}
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
	}
	return b.Build(nil)
}

// windowsFindings renders findings as "CVE KB fixedIn", one per line.
func windowsFindings(fs []Finding) (product string, lines []string) {
	for _, f := range fs {
		product = f.Software
		lines = append(lines, fmt.Sprintf("%s %s %s", f.CVEID, f.Source, f.FixedIn))
	}
	return product, lines
}

func TestMatchWindowsByBuild(t *testing.T) {
	ix := msrcIndex(t)
	const (
		w11x64  = "Windows 11 Version 23H2 for x64-based Systems"
		w11arm  = "Windows 11 Version 23H2 for ARM64-based Systems"
		w24h2   = "Windows 11 Version 24H2 for x64-based Systems"
		w10     = "Windows 10 Version 22H2 for x64-based Systems"
		w1809   = "Windows 10 Version 1809 for x64-based Systems"
		w21h2   = "Windows 10 Version 21H2 for x64-based Systems"
		s2019   = "Windows Server 2019"
		s2022   = "Windows Server 2022"
		s2022c  = "Windows Server 2022 (Server Core installation)"
		s2025   = "Windows Server 2025"
		s2022e  = "Windows Server 2022, 23H2 Edition (Server Core installation)"
		pro11   = "Windows 11 Pro"
		ent10   = "Windows 10 Enterprise"
		ltsc19  = "Windows 10 Enterprise LTSC 2019"
		ltsc21  = "Windows 10 Enterprise LTSC 2021"
		srv19   = "Windows Server 2019 Standard"
		srv22   = "Windows Server 2022 Datacenter"
		srv25   = "Windows Server 2025 Standard"
		srv23h2 = "Windows Server Datacenter"
	)
	cases := []struct {
		os          WindowsOS
		wantProduct string
		want        []string // "CVE KB fixed-build", by CVE
	}{
		// Windows 11 23H2: November's KB5068865 is 22631.6199, December's
		// KB5071417 is 22631.6345. One revision below November's fix:
		// every fixture CVE of 23H2 (not CVE-2025-60713, a server CVE).
		{WindowsOS{Name: pro11, Build: "10.0.22631.6198", Arch: "amd64"}, w11x64, []string{
			"CVE-2025-62215 KB5068865 10.0.22631.6199", "CVE-2025-62218 KB5068865 10.0.22631.6199",
			"CVE-2025-62221 KB5071417 10.0.22631.6345", "CVE-2025-62468 KB5071417 10.0.22631.6345"}},
		// November's build: only December's CVEs are left.
		{WindowsOS{Name: pro11, Build: "10.0.22631.6199", Arch: "amd64"}, w11x64, []string{
			"CVE-2025-62221 KB5071417 10.0.22631.6345", "CVE-2025-62468 KB5071417 10.0.22631.6345"}},
		{WindowsOS{Name: pro11, Build: "10.0.22631.6344", Arch: "amd64"}, w11x64, []string{
			"CVE-2025-62221 KB5071417 10.0.22631.6345", "CVE-2025-62468 KB5071417 10.0.22631.6345"}},
		// December's build and later ones fix everything (cumulative).
		{WindowsOS{Name: pro11, Build: "10.0.22631.6345", Arch: "amd64"}, "", nil},
		{WindowsOS{Name: pro11, Build: "10.0.22631.6491", Arch: "amd64"}, "", nil},
		// An old build (10.0.22631.4460, November 2024) has all of them.
		{WindowsOS{Name: pro11, Build: "10.0.22631.4460", Arch: "amd64"}, w11x64, []string{
			"CVE-2025-62215 KB5068865 10.0.22631.6199", "CVE-2025-62218 KB5068865 10.0.22631.6199",
			"CVE-2025-62221 KB5071417 10.0.22631.6345", "CVE-2025-62468 KB5071417 10.0.22631.6345"}},
		// The "OS build" form, without 10.0.
		{WindowsOS{Name: pro11, Build: "22631.6344", Arch: "amd64"}, w11x64, []string{
			"CVE-2025-62221 KB5071417 10.0.22631.6345", "CVE-2025-62468 KB5071417 10.0.22631.6345"}},
		// The ARM64 product of the same version.
		{WindowsOS{Name: pro11, Build: "10.0.22631.6198", Arch: "arm64"}, w11arm, []string{
			"CVE-2025-62215 KB5068865 10.0.22631.6199", "CVE-2025-62218 KB5068865 10.0.22631.6199",
			"CVE-2025-62221 KB5071417 10.0.22631.6345", "CVE-2025-62468 KB5071417 10.0.22631.6345"}},
		// Windows 11 24H2: KB5068861 26100.7171, then KB5072033 26100.7462.
		// The hotpatch KB5068966 (26100.7092) is not the monthly line: a
		// build between the two is still flagged.
		{WindowsOS{Name: pro11, Build: "10.0.26100.7170", Arch: "amd64"}, w24h2, []string{
			"CVE-2025-62215 KB5068861 10.0.26100.7171", "CVE-2025-62218 KB5068861 10.0.26100.7171",
			"CVE-2025-62221 KB5072033 10.0.26100.7462", "CVE-2025-62468 KB5072033 10.0.26100.7462"}},
		{WindowsOS{Name: pro11, Build: "10.0.26100.7171", Arch: "amd64"}, w24h2, []string{
			"CVE-2025-62221 KB5072033 10.0.26100.7462", "CVE-2025-62468 KB5072033 10.0.26100.7462"}},
		{WindowsOS{Name: pro11, Build: "10.0.26100.7462", Arch: "amd64"}, "", nil},
		// Windows 10 22H2: KB5068781 19045.6575, KB5071546 19045.6691; the
		// Defender Firewall CVE is not Windows 10's.
		{WindowsOS{Name: ent10, Build: "10.0.19045.6574", Arch: "amd64"}, w10, []string{
			"CVE-2025-62215 KB5068781 10.0.19045.6575", "CVE-2025-62218 KB5068781 10.0.19045.6575",
			"CVE-2025-62221 KB5071546 10.0.19045.6691"}},
		{WindowsOS{Name: ent10, Build: "10.0.19045.6575", Arch: "amd64"}, w10, []string{"CVE-2025-62221 KB5071546 10.0.19045.6691"}},
		{WindowsOS{Name: ent10, Build: "10.0.19045.6691", Arch: "amd64"}, "", nil},
		// LTSC 2019 reports no display version: its build (17763) is
		// Windows 10 1809's, a client product (not Server 2019's RRAS CVE).
		{WindowsOS{Name: ltsc19, Build: "10.0.17763.8026", Arch: "amd64"}, w1809, []string{
			"CVE-2025-62215 KB5068791 10.0.17763.8027", "CVE-2025-62218 KB5068791 10.0.17763.8027",
			"CVE-2025-62221 KB5071544 10.0.17763.8146"}},
		// LTSC 2021 is Windows 10 21H2 (19044).
		{WindowsOS{Name: ltsc21, Build: "10.0.19044.6690", Arch: "amd64"}, w21h2, []string{"CVE-2025-62221 KB5071546 10.0.19044.6691"}},
		// Server 2019 (same build number as LTSC 2019): the server CVE,
		// not the client-only one.
		{WindowsOS{Name: srv19, Build: "10.0.17763.8026", Arch: "amd64", Server: true}, s2019, []string{
			"CVE-2025-60713 KB5068791 10.0.17763.8027", "CVE-2025-62215 KB5068791 10.0.17763.8027",
			"CVE-2025-62221 KB5071544 10.0.17763.8146"}},
		{WindowsOS{Name: srv19, Build: "10.0.17763.8027", Arch: "amd64", Server: true}, s2019, []string{"CVE-2025-62221 KB5071544 10.0.17763.8146"}},
		// Server 2022: KB5068787 20348.4405 (the hotpatch KB5068840 is
		// 20348.4346), KB5071547 20348.4529.
		{WindowsOS{Name: srv22, Build: "10.0.20348.4404", Arch: "amd64", Server: true}, s2022, []string{
			"CVE-2025-60713 KB5068787 10.0.20348.4405", "CVE-2025-62215 KB5068787 10.0.20348.4405",
			"CVE-2025-62221 KB5071547 10.0.20348.4529"}},
		{WindowsOS{Name: srv22, Build: "10.0.20348.4405", Arch: "amd64", Server: true}, s2022, []string{"CVE-2025-62221 KB5071547 10.0.20348.4529"}},
		{WindowsOS{Name: srv22, Build: "10.0.20348.4529", Arch: "amd64", Server: true}, "", nil},
		// Server Core: the "(Server Core installation)" product.
		{WindowsOS{Name: srv22, Build: "10.0.20348.4404", Arch: "amd64", Server: true, InstallationType: "Server Core"}, s2022c, []string{
			"CVE-2025-60713 KB5068787 10.0.20348.4405", "CVE-2025-62215 KB5068787 10.0.20348.4405",
			"CVE-2025-62221 KB5071547 10.0.20348.4529"}},
		// A server whose agent reports type workstation is still told by
		// its name.
		{WindowsOS{Name: srv25, Build: "10.0.26100.7170", Arch: "amd64"}, s2025, []string{
			"CVE-2025-60713 KB5068861 10.0.26100.7171", "CVE-2025-62215 KB5068861 10.0.26100.7171",
			"CVE-2025-62221 KB5072033 10.0.26100.7462", "CVE-2025-62468 KB5072033 10.0.26100.7462"}},
		// Server 2022 23H2 Edition exists only as Server Core: a host
		// without the installation type gets that product.
		// (November's KB5068779, 25398.1965, is below this build.)
		{WindowsOS{Name: srv23h2, Build: "10.0.25398.2024", Arch: "amd64", Server: true}, s2022e, []string{
			"CVE-2025-62221 KB5071542 10.0.25398.2025", "CVE-2025-62468 KB5071542 10.0.25398.2025"}},
		{WindowsOS{Name: srv23h2, Build: "10.0.25398.1964", Arch: "amd64", Server: true}, s2022e, []string{
			"CVE-2025-60713 KB5068779 10.0.25398.1965", "CVE-2025-62215 KB5068779 10.0.25398.1965",
			"CVE-2025-62221 KB5071542 10.0.25398.2025", "CVE-2025-62468 KB5071542 10.0.25398.2025"}},
		// Unknown build numbers and unparsable builds: nothing.
		{WindowsOS{Name: pro11, Build: "10.0.99999.1", Arch: "amd64"}, "", nil},
		{WindowsOS{Name: pro11, Build: "23H2", Arch: "amd64"}, "", nil},
		{WindowsOS{Name: pro11, Build: "", Arch: "amd64"}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.os.Name+" "+c.os.Build+" "+c.os.Arch+" "+c.os.InstallationType, func(t *testing.T) {
			product, got := windowsFindings(ix.Match(Endpoint{Platform: "windows", Windows: c.os}))
			if product != c.wantProduct || strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("product %q, findings\n%s\nwant %q,\n%s", product, strings.Join(got, "\n"), c.wantProduct, strings.Join(c.want, "\n"))
			}
		})
	}
	// The same build on another platform is not Windows.
	if fs := ix.Match(Endpoint{Platform: "linux", Windows: WindowsOS{Name: pro11, Build: "10.0.22631.6198"}}); len(fs) != 0 {
		t.Errorf("linux endpoint: %v", fs)
	}
}

// Windows findings and application findings of one endpoint stay one per
// (software, CVE), Windows first.
func TestMatchWindowsWithSoftware(t *testing.T) {
	b := NewBuilder()
	b.AddMSRCFix(MSRCFix{CVEID: "CVE-2025-62215", ProductID: "12243", ProductName: "Windows 11 Version 23H2 for x64-based Systems", KB: "KB5068865", FixedBuild: "10.0.22631.6199"})
	b.AddCVE(feeds.CVE{ID: "CVE-2099-1000", CPEMatches: []feeds.CPEMatch{{Part: "a", Vendor: "7-zip", Product: "7-zip", Version: "*", EndExcl: "24.09", TargetSW: "*"}}})
	ix := b.Build(nil)
	fs := ix.Match(Endpoint{Platform: "windows", Windows: WindowsOS{Name: "Windows 11 Pro", Build: "10.0.22631.6000", Arch: "amd64"},
		Software: []Software{{Name: "7-Zip 24.08 (x64)", Publisher: "Igor Pavlov", Version: "24.08", InstallType: "exe"}}})
	if len(fs) != 2 || fs[0].CVEID != "CVE-2025-62215" || fs[0].Source != "KB5068865" || fs[1].CVEID != "CVE-2099-1000" {
		t.Fatalf("findings = %+v", fs)
	}
}

func TestParseWinBuild(t *testing.T) {
	if b, ok := ParseWinBuild("22631.4460"); !ok || b != (WinBuild{10, 0, 22631, 4460}) {
		t.Errorf("OS build 22631.4460 = %v %v", b, ok)
	}
	for s, want := range map[string]bool{"10.0.22631.4460": true, "10.0.22631": true, "6.3.9600.22000": true, "10.0": false, "23H2": false,
		"9600.22000": false, "22631": false,
		"10.0.22631.x": false, "10.0.-1.2": false, "1.2.3.4.5": false} {
		if _, ok := ParseWinBuild(s); ok != want {
			t.Errorf("ParseWinBuild(%q) ok = %v", s, ok)
		}
	}
	a, _ := ParseWinBuild("10.0.22631.999")
	b, _ := ParseWinBuild("10.0.22631.4460")
	if a.Compare(b) >= 0 || b.Compare(a) <= 0 || a.Compare(a) != 0 {
		t.Error("builds compare as numbers, not strings")
	}
}
