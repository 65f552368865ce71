package sim

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
)

func TestGenerateIsDeterministic(t *testing.T) {
	for _, i := range []int{0, 1, 7, 123, 4999} {
		a, b := Generate(42, i), Generate(42, i)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("endpoint %d: two generations differ", i)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("endpoint %d: JSON differs", i)
		}
	}
	if reflect.DeepEqual(Generate(1, 5), Generate(2, 5)) {
		t.Fatal("different seeds gave the same endpoint")
	}
}

// fleetSample generates n endpoints of seed 1.
func fleetSample(t testing.TB, n int) []agentproto.Inventory {
	t.Helper()
	invs := make([]agentproto.Inventory, n)
	for i := range invs {
		invs[i] = Generate(1, i)
	}
	return invs
}

func TestGenerateCountsAndMix(t *testing.T) {
	const n = 1500
	kinds := map[string]int{}
	hostnames := map[string]bool{}
	ips := map[string]bool{}
	totalUpdates := 0
	for i, inv := range fleetSample(t, n) {
		if sw := len(inv.Software); sw < 130 || sw > 170 {
			t.Errorf("endpoint %d (%s, %s): %d software rows, want 130-170", i, inv.System.Hostname, *inv.System.OS, sw)
		}
		if up := len(inv.Updates); up < 5 || up > 15 {
			t.Errorf("endpoint %d (%s): %d updates, want 5-15", i, inv.System.Hostname, up)
		}
		totalUpdates += len(inv.Updates)
		if hostnames[inv.System.Hostname] {
			t.Errorf("hostname %s twice", inv.System.Hostname)
		}
		hostnames[inv.System.Hostname] = true
		p := newProfile(1, i)
		if ips[p.ip] {
			t.Errorf("address %s twice", p.ip)
		}
		ips[p.ip] = true
		switch {
		case strings.HasPrefix(*inv.System.OS, "Microsoft Windows Server"):
			kinds["windows-server"]++
		case strings.HasPrefix(*inv.System.OS, "Microsoft Windows"):
			kinds["windows-workstation"]++
		case *inv.System.OS == "macOS":
			kinds["macos"]++
		default:
			kinds["linux"]++
		}
		names := map[string]bool{}
		for _, s := range inv.Software {
			if names[s.Name] {
				t.Errorf("endpoint %d: %q listed twice", i, s.Name)
			}
			names[s.Name] = true
		}
	}
	want := map[string]float64{"windows-workstation": 0.55, "windows-server": 0.15, "linux": 0.20, "macos": 0.10}
	for k, share := range want {
		got := float64(kinds[k]) / n
		if got < share-0.04 || got > share+0.04 {
			t.Errorf("%s: %.1f%% of the fleet, want about %.0f%%", k, got*100, share*100)
		}
	}
	if avg := float64(totalUpdates) / n; avg < 8 || avg > 12 {
		t.Errorf("average missing updates %.1f, want about 10", avg)
	}
}

func TestThirdPartyUpdatesMatchInstalledSoftware(t *testing.T) {
	severities := map[string]bool{}
	for i, inv := range fleetSample(t, 600) {
		byID := map[string]agentproto.Software{}
		for _, s := range inv.Software {
			byID[s.Name] = s
		}
		for _, u := range inv.Updates {
			if u.Severity != nil {
				severities[*u.Severity] = true
			}
			switch u.Source {
			case "Applications":
				// patchd-agent sends winget's rows as Unspecified.
				if u.Severity != nil && (u.WingetID == nil || *u.Severity != "Unspecified") {
					t.Errorf("endpoint %d: third-party update %q has a severity", i, u.Title)
				}
				if u.WingetID == nil && u.PackageName == nil {
					t.Errorf("endpoint %d: third-party update %q names no package", i, u.Title)
				}
				if u.InstalledVersion == nil || u.LatestVersion == nil || *u.InstalledVersion == *u.LatestVersion {
					t.Errorf("endpoint %d: third-party update %q: bad versions", i, u.Title)
					continue
				}
				name := strings.TrimSuffix(u.Title, " "+*u.LatestVersion)
				sw, ok := byID[name]
				if !ok {
					t.Errorf("endpoint %d: update %q for software that is not installed", i, u.Title)
					continue
				}
				if *sw.Version != *u.InstalledVersion {
					t.Errorf("endpoint %d: %q installed %s, update says %s", i, name, *sw.Version, *u.InstalledVersion)
				}
			case "OS - Mandatory", "OS - Optional":
				if u.Severity == nil {
					t.Errorf("endpoint %d: OS update %q without severity", i, u.Title)
				}
				if u.PackageName != nil {
					sw, ok := byID[*u.PackageName]
					if !ok || *sw.Version != *u.InstalledVersion || u.Distro == nil {
						t.Errorf("endpoint %d: package update %q does not match the package list", i, u.Title)
					}
				}
			default:
				t.Errorf("endpoint %d: update %q has source %q", i, u.Title, u.Source)
			}
			if len(u.Categories) == 0 || u.ReleaseDate == nil {
				t.Errorf("endpoint %d: update %q lacks categories or release date", i, u.Title)
			}
		}
	}
	for _, s := range []string{"Critical", "Important", "Moderate", "Low", "Unspecified"} {
		if !severities[s] {
			t.Errorf("no update of severity %s in the sample", s)
		}
	}
}

func TestInventoryJSONRoundTrip(t *testing.T) {
	for i, inv := range fleetSample(t, 300) {
		b, err := json.Marshal(inv)
		if err != nil {
			t.Fatalf("endpoint %d: %v", i, err)
		}
		var back agentproto.Inventory
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("endpoint %d: %v", i, err)
		}
		again, err := json.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(b) {
			t.Fatalf("endpoint %d: JSON changed in a round trip", i)
		}
		if len(b) > agentproto.MaxInventoryBytes/64 {
			t.Errorf("endpoint %d: inventory of %d bytes is larger than expected", i, len(b))
		}
	}
}

func TestDatasetsFollowTheirSchema(t *testing.T) {
	seen := map[string]int{}
	for i, inv := range fleetSample(t, 400) {
		for name, rows := range inv.Datasets {
			keys, ok := datasetKeys[name]
			if !ok {
				t.Fatalf("endpoint %d: dataset %q is not documented", i, name)
			}
			seen[name] += len(rows)
			for _, row := range rows {
				if len(row) != len(keys) {
					t.Fatalf("endpoint %d: %s row has %d keys, want %d", i, name, len(row), len(keys))
				}
				for _, k := range keys {
					if _, ok := row[k]; !ok {
						t.Fatalf("endpoint %d: %s row lacks %q", i, name, k)
					}
				}
			}
		}
	}
	for _, d := range datasetColumns {
		if seen[d.name] == 0 {
			t.Errorf("dataset %s never has a row", d.name)
		}
	}
}

func TestDatasetsDocumented(t *testing.T) {
	doc := readFile(t, "DATASETS.md")
	for _, d := range datasetColumns {
		section := "## " + d.name + "\n"
		at := strings.Index(doc, section)
		if at < 0 {
			t.Errorf("DATASETS.md has no section %q", strings.TrimSpace(section))
			continue
		}
		body := doc[at+len(section):]
		if end := strings.Index(body, "\n## "); end >= 0 {
			body = body[:end]
		}
		for _, k := range d.keys {
			if !strings.Contains(body, "`"+k+"`") {
				t.Errorf("DATASETS.md section %s does not document key %q", d.name, k)
			}
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Generate(1, i%1000)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Windows hosts report real builds of the last months: December 2025's
// (this month's update installed), November's, and on hosts that lag,
// October's or September's; the third computer of a fleet runs Windows 10
// Enterprise LTSC 2019 without a display version.
func TestWindowsBuildsAreRealAndSpread(t *testing.T) {
	month := map[string]string{} // build → month
	for _, f := range []osFlavor{win11_24h2, win11_23h2, win10_22h2, ltsc2019, srv2022, srv2019} {
		month[f.newBuild], month[f.oldBuild] = "Dec", "Nov"
		month[f.behind[0]], month[f.behind[1]] = "Oct", "Sep"
	}
	for _, b := range []string{"26100.7462", "22631.6345", "19045.6691", "17763.8146", "20348.4529", // December 2025
		"26100.7171", "22631.6199", "19045.6575", "17763.8027", "20348.4405", // November
		"26100.6899", "22631.6060", "19045.6456", "17763.7919", "20348.4294", // October
		"26100.6584", "22631.5909", "19045.6332", "17763.7792", "20348.4171"} { // September
		if month[b] == "" {
			t.Errorf("build %s is not a flavor's", b)
		}
	}
	byMonth := map[string]int{}
	products := map[string]int{}
	for i, inv := range fleetSample(t, 400) {
		if Platform(1, i) != "windows" {
			continue
		}
		b := *inv.System.OSBuild
		m := month[b]
		if m == "" {
			t.Fatalf("endpoint %d (%s): build %s of no known month", i, *inv.System.OS, b)
		}
		byMonth[m]++
		os := *inv.System.OS
		switch {
		case strings.Contains(os, "LTSC 2019"):
			products["ltsc2019"]++
			if *inv.System.OSVersion != "10.0.17763" || !strings.HasPrefix(b, "17763.") {
				t.Errorf("LTSC host %d: version %q build %s", i, *inv.System.OSVersion, b)
			}
			// The edition as the agent reads the caption, not its year.
			if rows := inv.Datasets["os-information"]; len(rows) != 1 || rows[0]["edition"] != "Enterprise LTSC" {
				t.Errorf("LTSC host %d: os-information %v", i, rows)
			}
		case strings.Contains(os, "Server 2019"):
			products["srv2019"]++
		case strings.Contains(os, "Server 2022"):
			products["srv2022"]++
		}
	}
	if !strings.Contains(*Generate(1, 2).System.OS, "LTSC 2019") || !strings.Contains(*Generate(7, 2).System.OS, "LTSC 2019") {
		t.Error("the third computer is not the LTSC 2019 workstation")
	}
	for _, m := range []string{"Dec", "Nov", "Oct", "Sep"} {
		if byMonth[m] < 5 {
			t.Errorf("%d Windows hosts on %s's build: %v", byMonth[m], m, byMonth)
		}
	}
	if byMonth["Dec"] < byMonth["Sep"] || products["srv2019"] == 0 || products["srv2022"] == 0 || products["ltsc2019"] == 0 {
		t.Errorf("by month %v, products %v", byMonth, products)
	}
}
