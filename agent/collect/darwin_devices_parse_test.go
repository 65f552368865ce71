package collect

import (
	"testing"
	"time"
)

func TestParseSystemProfilerDevices(t *testing.T) {
	monitors, usb, sound, err := parseSystemProfilerDevices(readTestdata(t, "system_profiler-devices.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "monitors", monitors, []map[string]any{
		{"name": "Color LCD", "manufacturer": "Apple Inc.", "serialNumber": "4251086178", "resolution": "3024x1964", "manufactureYear": nil},
		{"name": "DELL U2723QE", "manufacturer": "Dell", "serialNumber": "1279998002", "resolution": "3840x2160", "manufactureYear": 2022},
	})
	row := func(name, mfr, vid, pid, class string, serial any) map[string]any {
		return map[string]any{"name": name, "manufacturer": mfr, "vendorId": vid, "productId": pid, "deviceClass": class, "serialNumber": serial}
	}
	checkRows(t, "usb-devices", usb, []map[string]any{
		row("USB3.1 Hub", "Apple Inc.", "05AC", "8104", "Hub", nil),
		row("Magic Keyboard with Touch ID", "Apple Inc.", "05AC", "029C", "HIDClass", "F0T1234567890ABC"),
		row("Ultra", "SanDisk", "0781", "5581", "Mass Storage", "4C530001231120115142"),
	})
	checkRows(t, "sound-devices", sound, []map[string]any{
		{"name": "MacBook Pro Microphone", "manufacturer": "Apple Inc.", "status": "OK"},
		{"name": "MacBook Pro Speakers", "manufacturer": "Apple Inc.", "status": "OK"},
		{"name": "Logitech Zone Vibe 100", "manufacturer": "Logitech", "status": "OK"},
	})

	// macOS 26: SPUSBHostDataType, no display or audio type asked for.
	monitors, usb, sound, err = parseSystemProfilerDevices(readTestdata(t, "system_profiler-usbhost.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(monitors) != 0 || len(sound) != 0 {
		t.Errorf("monitors %v, sound %v", monitors, sound)
	}
	checkRows(t, "usb-devices", usb, []map[string]any{
		// Storage is not told apart in this type: by name only.
		row("Ultra", "SanDisk", "0781", "5581", "USB", "4C530001231120115142"),
		row("USB Receiver", "Logitech", "046D", "C52B", "USB", nil),
	})
}

func TestParseInstallHistory(t *testing.T) {
	rows, err := parseInstallHistory(readTestdata(t, "InstallHistory.plist"))
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	// Google Chrome (installer) and Keynote (App Store) are not updates.
	checkRows(t, "installed-updates", rows, []map[string]any{
		installedUpdateRow("", "Background Security Improvement 26.1 (a)", "Security Update", at("2026-11-12T09:01:00Z"), "softwareupdated"),
		installedUpdateRow("", "macOS Tahoe 26.1", "OS Update", at("2026-11-04T18:45:30Z"), "softwareupdated"),
		installedUpdateRow("", "XProtectPayloads 151", "Definition Update", at("2026-10-02T04:12:55Z"), "softwareupdated"),
		installedUpdateRow("", "macOS Tahoe 26 26.0", "OS Update", at("2026-09-16T17:02:11Z"), "softwareupdated"),
	})
	if _, err := parseInstallHistory([]byte("<plist><dict></dict></plist>")); err == nil {
		t.Error("a dict was taken for the history")
	}
}
