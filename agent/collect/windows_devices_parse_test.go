package collect

import (
	"testing"
	"time"
)

func TestWindowsDeviceDatasets(t *testing.T) {
	ds, err := windowsDeviceDatasets(readTestdata(t, "windows-devices.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "sound-devices", ds["sound-devices"], []map[string]any{
		{"name": "Realtek(R) Audio", "manufacturer": "Realtek", "status": "OK"},
		{"name": "Intel(R) Display Audio", "manufacturer": "Intel(R) Corporation", "status": "OK"},
	})
	checkRows(t, "monitors", ds["monitors"], []map[string]any{
		{"name": "DELL P2423D", "manufacturer": "Dell", "serialNumber": "3JJMJK3", "resolution": "2560x1440", "manufactureYear": 2023},
		// The panel of a laptop: no friendly name, serial "0".
		{"name": "Built-in Display", "manufacturer": "LG Display", "serialNumber": nil, "resolution": "1920x1200", "manufactureYear": 2021},
	})
	row := func(name, mfr, vid, pid, class string, serial any) map[string]any {
		return map[string]any{"name": name, "manufacturer": mfr, "vendorId": vid, "productId": pid, "deviceClass": class, "serialNumber": serial}
	}
	// The root hub has no VID/PID and the interfaces (MI_00) are not
	// devices; instance ids with "&" are made up by Windows, not serials.
	checkRows(t, "usb-devices", ds["usb-devices"], []map[string]any{
		row("Generic USB Hub", "(Standard USB HUBs)", "05E3", "0610", "Hub", nil),
		row("USB Composite Device", "(Standard USB Host Controller)", "046D", "C31C", "USB", nil),
		row("USB Input Device", "(Standard system devices)", "046D", "C077", "HIDClass", nil),
		row("SanDisk Ultra USB Device", "Compatible USB storage device", "0781", "5581", "Mass Storage", "4C530001231120115142"),
		row("Intel(R) Wireless Bluetooth(R)", "Intel Corporation", "8087", "0026", "Bluetooth", nil),
	})
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	checkRows(t, "installed-updates", ds["installed-updates"], []map[string]any{
		// Every definition update is KB2267602: one row, the newest.
		installedUpdateRow("KB2267602", "Security Intelligence Update for Microsoft Defender Antivirus - KB2267602 (Version 1.421.1408.0) - Current Channel (Broad)",
			"Definition Update", at("2026-11-21T06:12:44Z"), "Windows Defender"),
		// Installed through patchd's Windows Update session.
		installedUpdateRow("KB5044033", "2026-11 Cumulative Update for .NET Framework 3.5 and 4.8.1 for Windows 11, version 24H2 for x64 (KB5044033)",
			"Update", at("2026-11-20T10:04:31Z"), "patchd"),
		installedUpdateRow("KB5046617", "2026-11 Cumulative Update for Windows 11 Version 24H2 for x64-based Systems (KB5046617)",
			"Security Update", at("2026-11-13T03:21:09Z"), `NT AUTHORITY\SYSTEM`),
		installedUpdateRow("", "Intel Corporation - Display - 31.0.101.5590", "Update", at("2026-10-30T02:00:00Z"), "UpdateOrchestrator"),
		// Only Get-HotFix knows it: its title is the KB. KB5012170 has no
		// date and is left out.
		installedUpdateRow("KB5045935", "KB5045935", "Update", at("2026-10-08T22:00:00Z"), `NT AUTHORITY\SYSTEM`),
	})

	// An inventory of an older script: the datasets are there, empty.
	inv := newCollector(Options{}).inv
	if _, err := parseWindowsInventory(readTestdata(t, "windows-inventory.json"), &inv); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sound-devices", "monitors", "usb-devices", "installed-updates"} {
		if rows, ok := inv.Datasets[name]; !ok || rows == nil {
			t.Errorf("dataset %s: %v, %v", name, rows, ok)
		}
	}
}

func TestParseWindowsActivity(t *testing.T) {
	logons, events, err := parseWindowsActivity(readTestdata(t, "windows-activity.json"))
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	// Window Manager and Font Driver Host sessions and the computer
	// account are not people.
	checkRows(t, "logon-history", logons, []map[string]any{
		logonRow(`CORP\jsmith`, "Interactive", at("2026-11-20T07:58:12Z"), true),
		logonRow(`CORP\jsmith`, "Interactive", at("2026-11-20T07:57:20Z"), false),
		logonRow(`CORP\adm-jsmith`, "RemoteInteractive", at("2026-11-19T15:02:03Z"), true),
		logonRow(`CORP\jsmith`, "CachedInteractive", at("2026-11-18T08:01:00Z"), true),
	})
	zero := func(log, level string) map[string]any {
		return map[string]any{"log": log, "level": level, "count": 0, "lastEventAt": nil, "topSource": ""}
	}
	checkRows(t, "event-log-summary", events, []map[string]any{
		zero("System", "Critical"),
		{"log": "System", "level": "Error", "count": 14, "lastEventAt": "2026-11-21T01:12:09Z", "topSource": "Service Control Manager"},
		{"log": "System", "level": "Warning", "count": 31, "lastEventAt": "2026-11-21T01:40:00Z", "topSource": "Microsoft-Windows-Time-Service"},
		zero("Application", "Critical"),
		{"log": "Application", "level": "Error", "count": 3, "lastEventAt": "2026-11-20T16:22:51Z", "topSource": "Application Error"},
		zero("Application", "Warning"),
		{"log": "Security", "level": "Audit Failure", "count": 5, "lastEventAt": "2026-11-20T07:57:20Z", "topSource": "Microsoft-Windows-Security-Auditing"},
	})
}
