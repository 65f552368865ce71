package collect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linuxDeviceTree builds a file tree from testdata/linux-devices.txt (files
// as `head` prints them: "==> /path <==" then the content) and the EDIDs
// of the two displays, and returns its root.
func linuxDeviceTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	var path string
	var content strings.Builder
	flush := func() {
		if path == "" {
			return
		}
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		content.Reset()
	}
	for _, l := range strings.SplitAfter(string(readTestdata(t, "linux-devices.txt")), "\n") {
		if p, ok := strings.CutPrefix(l, "==> "); ok {
			flush()
			path = strings.TrimSuffix(strings.TrimSpace(p), " <==")
			continue
		}
		if path != "" {
			content.WriteString(l)
		}
	}
	flush()
	for conn, file := range map[string]string{"card0-DP-1": "edid-dell-u2723qe.bin", "card0-eDP-1": "edid-auo-b140han06.bin"} {
		if err := os.WriteFile(filepath.Join(root, "sys/class/drm", conn, "edid"), readTestdata(t, file), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for dev, driver := range map[string]string{"0000:00:17.0": "ahci", "0000:01:00.0": "nvme"} {
		if err := os.Symlink("../../../bus/pci/drivers/"+driver, filepath.Join(root, "sys/bus/pci/devices", dev, "driver")); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestParseEDID(t *testing.T) {
	e, err := parseEDID(readTestdata(t, "edid-dell-u2723qe.bin"))
	if err != nil {
		t.Fatal(err)
	}
	want := edidInfo{Manufacturer: "DEL", ProductCode: 0x4282, Serial: "7Y2KPN3", Name: "DELL U2723QE", Year: 2022, WidthCM: 60, HeightCM: 34, Resolution: "3840x2160"}
	if e != want {
		t.Errorf("got %+v\nwant %+v", e, want)
	}
	p, err := parseEDID(readTestdata(t, "edid-auo-b140han06.bin"))
	if err != nil {
		t.Fatal(err)
	}
	// A laptop panel: no name and no serial number, the vendor's text.
	if p.Manufacturer != "AUO" || p.Name != "" || p.Serial != "" || p.Text != "AUO" || p.Resolution != "1920x1080" || p.Year != 2021 {
		t.Errorf("panel %+v", p)
	}
	if _, err := parseEDID(make([]byte, 128)); err == nil {
		t.Error("zeros parsed as an EDID")
	}
}

func TestLinuxDevicesFromSysfs(t *testing.T) {
	root := linuxDeviceTree(t)

	monitors, err := linuxMonitors(root)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "monitors", monitors, []map[string]any{
		{"name": "DELL U2723QE", "manufacturer": "Dell", "serialNumber": "7Y2KPN3", "resolution": "3840x2160", "manufactureYear": 2022},
		{"name": "Built-in Display", "manufacturer": "AU Optronics", "serialNumber": nil, "resolution": "1920x1080", "manufactureYear": 2021},
	})

	usb, err := linuxUSBDevices(root, parseHWIDs(readTestdata(t, "usb.ids")))
	if err != nil {
		t.Fatal(err)
	}
	row := func(name, mfr, vid, pid, class string, serial any) map[string]any {
		return map[string]any{"name": name, "manufacturer": mfr, "vendorId": vid, "productId": pid, "deviceClass": class, "serialNumber": serial}
	}
	checkRows(t, "usb-devices", usb, []map[string]any{
		row("USB Keyboard", "Logitech", "046D", "C31C", "HIDClass", nil),
		// No strings in the device: usb.ids names it.
		row("M105 Optical Mouse", "Logitech, Inc.", "046D", "C077", "HIDClass", nil),
		// Video and audio interfaces: a camera.
		row("Integrated_Webcam_HD", "CN0FFMHCLOG0023SB2L6A01", "0BDA", "5634", "Camera", "200901010001"),
		row("AX201 Bluetooth", "Intel Corp.", "8087", "0026", "Bluetooth", nil),
		row("SanDisk 3.2Gen1", "USB", "0781", "5581", "Mass Storage", "4C530001231120115142"),
		// A root hub's serial is its controller's address: left out.
		row("xHCI Host Controller", "Linux 6.1.0-27-amd64 xhci-hcd", "1D6B", "0002", "Hub", nil),
	})
	if rows, _ := linuxUSBDevices(root, hwIDs{}); rows[1]["name"] != "USB device 046D:C077" || rows[1]["manufacturer"] != "" {
		t.Errorf("without usb.ids: %v", rows[1])
	}

	sound, err := linuxSoundDevices(root)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "sound-devices", sound, []map[string]any{
		{"name": "Realtek ALC3246", "manufacturer": "Realtek", "status": "OK"},
		{"name": "Intel Tigerlake HDMI", "manufacturer": "Intel", "status": "OK"},
		{"name": "USB Audio Device", "manufacturer": "C-Media Electronics Inc.", "status": "OK"},
	})

	controllers, err := linuxStorageControllers(root, parseHWIDs(readTestdata(t, "pci.ids")))
	if err != nil {
		t.Fatal(err)
	}
	// The graphics card (class 03) is not a storage controller.
	checkRows(t, "scsi-controllers", controllers, []map[string]any{
		{"name": "Tiger Lake-LP SATA Controller", "manufacturer": "Intel Corporation", "driver": "ahci"},
		{"name": "NVMe SSD Controller PM9A1/PM9A3/980PRO", "manufacturer": "Samsung Electronics Co Ltd", "driver": "nvme"},
	})
	controllers, _ = linuxStorageControllers(root, hwIDs{})
	checkRows(t, "scsi-controllers", controllers, []map[string]any{
		{"name": "SATA controller 8086:A0D3", "manufacturer": "Intel", "driver": "ahci"},
		{"name": "NVMe controller 144D:A80A", "manufacturer": "Samsung", "driver": "nvme"},
	})

	// A server or a container: no such folders.
	empty := t.TempDir()
	for name, f := range map[string]func(string) ([]map[string]any, error){
		"monitors": linuxMonitors, "sound": linuxSoundDevices,
		"controllers": func(r string) ([]map[string]any, error) { return linuxStorageControllers(r, hwIDs{}) },
		"usb":         func(r string) ([]map[string]any, error) { return linuxUSBDevices(r, hwIDs{}) },
	} {
		if rows, err := f(empty); err == nil || len(rows) != 0 {
			t.Errorf("%s without a source: %v, %v", name, rows, err)
		}
	}
}

func TestUSBDeviceClass(t *testing.T) {
	for _, c := range []struct {
		device string
		ifaces []string
		want   string
	}{
		{"09", nil, "Hub"},
		{"00", []string{"03", "03"}, "HIDClass"},
		{"00", []string{"01", "01", "03"}, "AudioEndpoint"}, // a headset
		{"ef", []string{"0e", "0e", "01", "01"}, "Camera"},
		{"00", []string{"08"}, "Mass Storage"},
		{"e0", nil, "Bluetooth"},
		{"00", nil, "Unknown"},
		{"42", nil, "Unknown"},
	} {
		if got := usbDeviceClass(c.device, c.ifaces); got != c.want {
			t.Errorf("usbDeviceClass(%s, %v) = %s, want %s", c.device, c.ifaces, got, c.want)
		}
	}
}
