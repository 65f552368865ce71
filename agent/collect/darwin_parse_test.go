package collect

import (
	"reflect"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
)

func TestParseSystemProfiler(t *testing.T) {
	inv := &agentproto.Inventory{Datasets: map[string][]map[string]any{}}
	if err := parseSystemProfiler(readTestdata(t, "system_profiler.json"), inv); err != nil {
		t.Fatal(err)
	}
	s := inv.System
	if deref(s.OS) != "macOS" || deref(s.OSVersion) != "15.1" || deref(s.OSBuild) != "24B83" || deref(s.CPU) != "Apple M2 Pro" ||
		*s.Cores != 12 || *s.RAMGB != 32 || deref(s.Model) != "MacBook Pro (Mac14,10)" || deref(s.SerialNumber) != "C02XK1ZJMD6T" {
		t.Errorf("system %+v", s)
	}
	if len(inv.Software) != 4 {
		t.Fatalf("%d apps", len(inv.Software))
	}
	want := []string{"Safari|18.1|Apple Inc.|2024-10-28|all users", "Google Chrome|131.0.6778.86|Google LLC|2024-11-19|all users",
		"Slack|4.41.97|Mac App Store|2024-11-01|alice", "HomebrewTool||||all users"}
	for i, sw := range inv.Software {
		got := sw.Name + "|" + deref(sw.Version) + "|" + deref(sw.Publisher) + "|" + deref(sw.InstallDate) + "|" + deref(sw.InstalledFor)
		if got != want[i] || deref(sw.InstallType) != "app" {
			t.Errorf("app %d: %s, want %s", i, got, want[i])
		}
	}
	intel := &agentproto.Inventory{Datasets: map[string][]map[string]any{}}
	if err := parseSystemProfiler(readTestdata(t, "system_profiler-intel.json"), intel); err != nil {
		t.Fatal(err)
	}
	if deref(intel.System.CPU) != "6-Core Intel Core i7" || *intel.System.Cores != 6 || deref(intel.System.OSVersion) != "13.6.9" {
		t.Errorf("intel %+v", intel.System)
	}
}

func TestParseSoftwareUpdateList(t *testing.T) {
	list := parseSoftwareUpdateList(readTestdata(t, "softwareupdate-list.txt"))
	if len(list) != 5 {
		t.Fatalf("%d entries: %+v", len(list), list)
	}
	if list[0] != (macUpdate{Label: "macOS Sonoma 14.7.1-23H222", Title: "macOS Sonoma 14.7.1", Version: "14.7.1", SizeKiB: 1521244, Recommended: true, Restart: true}) {
		t.Errorf("first %+v", list[0])
	}
	if list[2].Restart || list[2].Label != "Safari18.1SonomaAuto-18.1" {
		t.Errorf("safari %+v", list[2])
	}
	ups := macUpdates(list)
	if u := ups[0]; u.Source != "OS - Mandatory" || !u.RebootRequired || deref(u.ProductKey) != "macOS Sonoma 14.7.1-23H222" || u.Title != "macOS Sonoma 14.7.1" {
		t.Errorf("sonoma %+v", u)
	}
	if u := ups[1]; u.Source != "OS - Optional" {
		t.Errorf("sequoia upgrade %+v", u)
	}
	if u := ups[2]; u.Source != "Applications" || u.Title != "Safari 18.1" || u.RebootRequired {
		t.Errorf("safari %+v", u)
	}
	if u := ups[4]; u.Source != "OS - Mandatory" || !reflect.DeepEqual(u.Categories, []string{"Security Updates"}) || deref(u.Severity) != "Important" {
		t.Errorf("security response %+v", u)
	}
	if none := parseSoftwareUpdateList(readTestdata(t, "softwareupdate-list-none.txt")); len(none) != 0 {
		t.Errorf("none %+v", none)
	}
}

func TestMacSmallParsers(t *testing.T) {
	if v := parseSwVers(readTestdata(t, "sw_vers.txt")); v["ProductVersion"] != "15.1" || v["BuildVersion"] != "24B83" {
		t.Errorf("sw_vers %v", v)
	}
	if u := parseIORegUUID(readTestdata(t, "ioreg.txt")); u != "5E2C8F1A-7B3D-4E6F-9A0B-1C2D3E4F5A6B" {
		t.Errorf("uuid %q", u)
	}
	if bt, ok := parseKernBoottime([]byte("{ sec = 1732086000, usec = 123456 } Wed Nov 20 07:00:00 2024\n")); !ok || bt.Unix() != 1732086000 {
		t.Errorf("boottime %v", bt)
	}
	ps := parsePS(readTestdata(t, "ps-macos.txt"))
	if len(ps) != 3 || ps[0]["cpuPercent"] != 0.0 || ps[1]["cpuPercent"] != 12.5 || ps[2]["name"] != "Google Chrome" || ps[2]["memoryMB"] != 500.0 ||
		ps[2]["path"] != "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" {
		t.Errorf("ps %v", ps)
	}
	lc := parseLaunchctlList(readTestdata(t, "launchctl-list.txt"))
	if len(lc) != 4 || lc[1]["state"] != "running" || lc[2]["state"] != "stopped" || lc[2]["account"] != "root" {
		t.Errorf("launchctl %v", lc)
	}
	if m := parseDsclMembers(readTestdata(t, "dscl-admin.txt")); !reflect.DeepEqual(m, []string{"root", "alice"}) {
		t.Errorf("admins %v", m)
	}
	if u := parseDsclUIDs(readTestdata(t, "dscl-users.txt")); u["alice"] != 501 || u["nobody"] != -2 || len(u) != 6 {
		t.Errorf("uids %v", u)
	}
}

func TestDarwinNetworkAndSessions(t *testing.T) {
	if psArgs[1] != "pid=,user=,rss=,%cpu=,comm=" {
		t.Errorf("parsePS reads another ps format than %q", psArgs[1])
	}
	gw, ifc := parseRouteGet([]byte("   route to: default\ndestination: default\n       mask: default\n    gateway: 192.168.1.1\n  interface: en0\n      flags: <UP,GATEWAY,DONE,STATIC,PRCLONING>\n"))
	if gw != "192.168.1.1" || ifc != "en0" {
		t.Errorf("route get: %q %q", gw, ifc)
	}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.Local)
	rows := darwinSessionRows([]whoEntry{{User: "alice", Line: "console", Since: "Dec 30"}, {User: "bob", Line: "ttys001", Since: "Jan 5", Host: "10.0.0.9"}}, now)
	if rows[0]["sessionType"] != "console" || rows[0]["logonAt"] != time.Date(2025, 12, 30, 0, 0, 0, 0, time.Local).UTC().Format(time.RFC3339) ||
		rows[1]["sessionType"] != "ssh" || rows[1]["clientAddress"] != "10.0.0.9" {
		t.Errorf("%v", rows)
	}
	for _, r := range rows {
		assertKeys(t, "logged-on-users", r)
	}
}
