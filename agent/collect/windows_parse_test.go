package collect

import (
	"reflect"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
)

func TestParseWindowsInventory(t *testing.T) {
	inv := &agentproto.Inventory{Datasets: map[string][]map[string]any{}, CollectedAt: time.Date(2026, 11, 20, 7, 25, 36, 0, time.UTC)}
	f, err := parseWindowsInventory(readTestdata(t, "windows-inventory.json"), inv)
	if err != nil {
		t.Fatal(err)
	}
	s := inv.System
	checks := []struct{ name, got, want string }{
		{"hostname", s.Hostname, "WS-ALICE-01"},
		{"os", deref(s.OS), "Windows 11 Pro"},
		{"osVersion", deref(s.OSVersion), "23H2"},
		{"osBuild", deref(s.OSBuild), "10.0.22631.4460"},
		{"osInstallationType", deref(s.OSInstallationType), "Client"},
		{"type", s.Type, "workstation"},
		{"domain", deref(s.Domain), "corp.example.com"},
		{"manufacturer", deref(s.Manufacturer), "LENOVO"},
		{"serial", deref(s.SerialNumber), "PF4ABC12"},
		{"cpu", deref(s.CPU), "13th Gen Intel(R) Core(TM) i7-1365U"},
		{"antivirus", deref(s.Antivirus), "Windows Defender"},
		{"timeZone", deref(s.TimeZone), "W. Europe Standard Time"},
		{"user", f.User, `CORP\alice`},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if *s.Cores != 10 || *s.RAMGB != 15.8 {
		t.Errorf("cores %d ram %v", *s.Cores, *s.RAMGB)
	}
	if !reflect.DeepEqual(s.MACAddresses, []string{"00:15:5D:01:02:03", "A4:C3:F0:12:34:56"}) {
		t.Errorf("macs %v", s.MACAddresses)
	}
	if !f.PendingReboot || f.LastBoot == nil || f.LastBoot.Format("2006-01-02T15:04") != "2026-11-20T07:02" {
		t.Errorf("facts %+v", f)
	}
	if len(inv.Disks) != 2 || inv.Disks[0].Drive != "C:" || *inv.Disks[0].SizeGB != 475.7 || *inv.Disks[0].FreeGB != 187.5 {
		t.Errorf("disks %+v", inv.Disks)
	}
	// The duplicate VC++ entry (both registry views) is listed once.
	if len(inv.Software) != 5 {
		t.Fatalf("%d software rows", len(inv.Software))
	}
	chrome, teams, zip := inv.Software[0], inv.Software[3], inv.Software[1]
	if deref(chrome.InstallType) != "msi" || deref(chrome.InstallDate) != "2024-11-20" || deref(chrome.InstalledFor) != "all users" {
		t.Errorf("chrome %+v", chrome)
	}
	if deref(teams.InstalledFor) != `CORP\alice` || deref(teams.InstallDate) != "2024-11-05" || deref(teams.InstallType) != "exe" {
		t.Errorf("teams %+v", teams)
	}
	if zip.InstallDate != nil {
		t.Errorf("7-zip date %v", *zip.InstallDate)
	}
	for name, n := range map[string]int{
		agentproto.DatasetServices: 3, agentproto.DatasetProcesses: 2, agentproto.DatasetLocalUsers: 2,
		agentproto.DatasetLocalGroups: 1, agentproto.DatasetLocalAdministrators: 2, agentproto.DatasetStartupItems: 1,
		agentproto.DatasetRoutingTables: 1, agentproto.DatasetLoggedOnUsers: 1, agentproto.DatasetNetworkAdapters: 2,
		agentproto.DatasetLogicalDisks: 2,
	} {
		if len(inv.Datasets[name]) != n {
			t.Errorf("dataset %s has %d rows, want %d", name, len(inv.Datasets[name]), n)
		}
	}
	if r := inv.Datasets[agentproto.DatasetServices][0]; r["state"] != "running" || r["startMode"] != "manual" {
		t.Errorf("service %v", r)
	}
	// 123.6 s of CPU over the 1,236 s since chrome started.
	if r := inv.Datasets[agentproto.DatasetProcesses][1]; r["memoryMB"] != 274.0 || r["cpuPercent"] != 10.0 || r["pid"] != 7312 ||
		r["path"] != `C:\Program Files\Google\Chrome\Application\chrome.exe` {
		t.Errorf("process %v", r)
	}
	if r := inv.Datasets[agentproto.DatasetNetworkAdapters][0]; r["name"] != "Wi-Fi" || r["macAddress"] != "A4:C3:F0:12:34:56" || r["ipAddress"] != "10.20.30.41" ||
		r["subnetMask"] != "255.255.255.0" || r["gateway"] != "10.20.30.1" || r["dnsServers"] != "10.20.0.10,10.20.0.11" || r["speedMbps"] != 866 || r["status"] != "Up" {
		t.Errorf("adapter %v", r)
	}
	admins := inv.Datasets[agentproto.DatasetLocalAdministrators]
	if !reflect.DeepEqual(admins, []map[string]any{adminRow(`WS-ALICE-01\Administrator`, "User", "Local"), adminRow(`CORP\Domain Admins`, "Group", "Domain")}) {
		t.Errorf("admins %v", admins)
	}
	if r := inv.Datasets[agentproto.DatasetLoggedOnUsers][0]; r["user"] != `CORP\alice` || r["sessionType"] != "console" {
		t.Errorf("session %v", r)
	}
	if r := inv.Datasets[agentproto.DatasetFirmware][0]; r["vendor"] != "LENOVO" || r["releaseDate"] != "2024-05-07" || r["mode"] != "UEFI" || r["secureBoot"] != true {
		t.Errorf("firmware %v", r)
	}
	if r := inv.Datasets[agentproto.DatasetRoutingTables][0]; r["destination"] != "0.0.0.0" || r["netmask"] != "0.0.0.0" {
		t.Errorf("route %v", r)
	}
	if r := inv.Datasets[agentproto.DatasetOSInformation][0]; r["edition"] != "Pro" || r["version"] != "23H2" || r["build"] != "22631.4460" || r["architecture"] != "amd64" || r["installDate"] != "2024-02-12" {
		t.Errorf("os %v", r)
	}
	for name, rows := range inv.Datasets {
		for _, r := range rows {
			assertKeys(t, name, r)
		}
	}
}

func TestParseWindowsUpdates(t *testing.T) {
	ups, err := parseWindowsUpdates(readTestdata(t, "windows-updates.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 4 {
		t.Fatalf("%d updates", len(ups))
	}
	cu := ups[0]
	if deref(cu.KB) != "KB5046633" || deref(cu.Severity) != "Critical" || cu.Source != "OS - Mandatory" || !cu.RebootRequired ||
		!reflect.DeepEqual(cu.Categories, []string{"Security Updates", "Windows 11"}) || cu.ReleaseDate == nil {
		t.Errorf("cumulative update %+v", cu)
	}
	def := ups[1]
	if deref(def.KB) != "KB2267602" || deref(def.Severity) != "Unspecified" || def.Source != "OS - Mandatory" || def.RebootRequired {
		t.Errorf("definition update %+v", def)
	}
	if p := ups[2]; p.Source != "OS - Optional" || deref(p.Severity) != "Unspecified" || !p.RebootRequired || p.ReleaseDate != nil {
		t.Errorf("preview %+v", p)
	}
	if d := ups[3]; d.KB != nil || !reflect.DeepEqual(d.Categories, []string{"Drivers"}) || deref(d.ProductKey) == "" {
		t.Errorf("driver %+v", d)
	}
	none, err := parseWindowsUpdates([]byte("\r\n"))
	if err != nil || len(none) != 0 {
		t.Errorf("empty output: %v %v", none, err)
	}
}

func TestParseWingetUpgrade(t *testing.T) {
	rows := parseWingetUpgrade(readTestdata(t, "winget-upgrade.txt"))
	if len(rows) != 12 {
		for _, r := range rows {
			t.Logf("%+v", r)
		}
		t.Fatalf("%d rows, want 12", len(rows))
	}
	want := map[string]wingetRow{
		"Mozilla.Firefox":               {"Mozilla Firefox (x64 en-US)", "Mozilla.Firefox", "131.0.3", "132.0.2", "winget"},
		"Tencent.QQ.NT":                 {"腾讯QQ", "Tencent.QQ.NT", "9.9.15.27597", "9.9.16.29927", "winget"},
		"Zoom.Zoom":                     {"Zoom Workplace", "Zoom.Zoom", "< 6.2.5.47961", "6.2.11.52287", "winget"},
		"Microsoft.EdgeWebView2Runtime": {"Microsoft Edge WebView2 Runtime", "Microsoft.EdgeWebView2Runtime", "Unknown", "131.0.2903.70", "winget"},
		"Microsoft.VCRedist.2015+.x64":  {"Microsoft Visual C++ 2015-2022 Redist…", "Microsoft.VCRedist.2015+.x64", "14.40.33810.0", "14.42.34433.0", "winget"},
		"Discord.Discord":               {"Discord", "Discord.Discord", "1.0.9168", "1.0.9171", "winget"},
	}
	got := map[string]wingetRow{}
	for _, r := range rows {
		got[r.ID] = r
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: got %+v, want %+v", id, got[id], w)
		}
	}
	ups := wingetUpdates(rows)
	if len(ups) != 11 {
		t.Errorf("%d updates, want 11 (the truncated id left out)", len(ups))
	}
	ff := ups[0]
	if ff.Title != "Mozilla Firefox (x64 en-US) 132.0.2" || deref(ff.WingetID) != "Mozilla.Firefox" || ff.Source != "Applications" ||
		deref(ff.InstalledVersion) != "131.0.3" || deref(ff.LatestVersion) != "132.0.2" {
		t.Errorf("firefox %+v", ff)
	}
	if vc := ups[8]; vc.Title != "Microsoft Visual C++ 2015-2022 Redist 14.42.34433.0" {
		t.Errorf("truncated name: %q", vc.Title)
	}
	if none := parseWingetUpgrade(readTestdata(t, "winget-upgrade-none.txt")); len(none) != 0 {
		t.Errorf("none: %+v", none)
	}
}

func TestWindowsDate(t *testing.T) {
	for in, want := range map[string]string{"20241120": "2024-11-20", "2024-11-20": "2024-11-20", "11/5/2024": "2024-11-05", "": "", "garbage": ""} {
		if got := windowsDate(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestWindowsTimeZones(t *testing.T) {
	for win, iana := range windowsIANA {
		if _, err := time.LoadLocation(iana); err != nil {
			t.Errorf("%s: %s is not an IANA zone: %v", win, iana, err)
		}
	}
	row := timeZoneRow("W. Europe Standard Time", windowsIANA["W. Europe Standard Time"], time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	if row["ianaName"] != "Europe/Berlin" || row["timeZone"] != "W. Europe Standard Time" {
		t.Errorf("%v", row)
	}
}

// Captions as Win32_OperatingSystem reports them (public inventories and
// activation scripts): the edition is not the last word when an LTSC/LTSB
// caption ends with its year.
func TestWindowsEdition(t *testing.T) {
	for caption, want := range map[string]string{
		"Microsoft Windows 11 Pro":                             "Pro",
		"Microsoft Windows 10 Enterprise LTSC 2019":            "Enterprise LTSC",
		"Microsoft Windows 10 Enterprise N LTSC 2019":          "Enterprise N LTSC",
		"Microsoft Windows 10 Enterprise LTSC 2021":            "Enterprise LTSC",
		"Microsoft Windows 11 Enterprise LTSC 2024":            "Enterprise LTSC",
		"Microsoft Windows 11 IoT Enterprise LTSC 2024":        "IoT Enterprise LTSC",
		"Microsoft Windows 10 Enterprise 2016 LTSB":            "Enterprise LTSB",
		"Microsoft Windows 10 Enterprise 2016 LTSB Evaluation": "Enterprise LTSB Evaluation",
		"Microsoft Windows 10 Enterprise multi-session":        "Enterprise multi-session",
		"Microsoft Windows Server 2019 Standard":               "Standard",
		"Microsoft Windows Server 2022 Datacenter":             "Datacenter",
		"Microsoft Windows Server 2012 R2 Standard ":           "Standard",
		"Microsoft Windows 10 Education":                       "Education",
		"Microsoft® Windows Server® 2008 Enterprise ":          "Enterprise",
		"Microsoft Windows 11":                                 "",
		"":                                                     "",
		"Ubuntu 24.04":                                         "",
	} {
		if got := WindowsEdition(caption); got != want {
			t.Errorf("WindowsEdition(%q) = %q, want %q", caption, got, want)
		}
	}
}
