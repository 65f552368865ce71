package collect

// Parsers and readers of the device datasets (monitors, usb-devices,
// sound-devices). The Linux readers take the root of the file tree they
// read (/ on a computer, a folder of testdata/ in the tests), so they are
// tested on any system.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// edidInfo is what the agent reads from an EDID base block.
type edidInfo struct {
	Manufacturer string // three-letter PnP id: DEL, GSM
	ProductCode  uint16
	Serial       string // the serial-number descriptor, else the numeric serial
	Name         string // the monitor-name descriptor
	Text         string // an unspecified text descriptor (laptop panels' part number)
	Year         int    // of manufacture (or model year)
	WidthCM      int
	HeightCM     int
	Resolution   string // of the first (preferred) detailed timing: 2560x1440
}

var edidHeader = []byte{0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}

// parseEDID decodes the 128-byte base block of an EDID (VESA E-EDID 1.3/1.4).
func parseEDID(b []byte) (edidInfo, error) {
	var e edidInfo
	if len(b) < 128 || string(b[:8]) != string(edidHeader) {
		return e, fmt.Errorf("edid: no EDID header in %d bytes", len(b))
	}
	id := binary.BigEndian.Uint16(b[8:10])
	e.Manufacturer = string([]byte{byte('A' - 1 + (id>>10)&0x1f), byte('A' - 1 + (id>>5)&0x1f), byte('A' - 1 + id&0x1f)})
	e.ProductCode = binary.LittleEndian.Uint16(b[10:12])
	if n := binary.LittleEndian.Uint32(b[12:16]); n != 0 && n != 0x01010101 {
		e.Serial = strconv.FormatUint(uint64(n), 10)
	}
	if b[17] > 0 {
		e.Year = 1990 + int(b[17])
	}
	e.WidthCM, e.HeightCM = int(b[21]), int(b[22])
	for off := 54; off+18 <= 126; off += 18 {
		d := b[off : off+18]
		if d[0] != 0 || d[1] != 0 {
			// A detailed timing; the first is the preferred mode.
			if e.Resolution == "" {
				h := int(d[2]) | int(d[4]&0xf0)<<4
				v := int(d[5]) | int(d[7]&0xf0)<<4
				e.Resolution = fmt.Sprintf("%dx%d", h, v)
			}
			continue
		}
		text := edidText(d[5:18])
		switch d[3] {
		case 0xff:
			if text != "" {
				e.Serial = text
			}
		case 0xfc:
			e.Name = text
		case 0xfe:
			if e.Text == "" {
				e.Text = text
			}
		}
	}
	return e, nil
}

// edidText is a descriptor's text: up to 13 bytes ended by a line feed and
// padded with spaces.
func edidText(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(strings.ToValidUTF8(strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return -1
		}
		return r
	}, s), ""))
}

// pnpVendors names the commonest display manufacturers by their PnP id
// (the EDID manufacturer id, the prefix of Windows' monitor ids); another
// id is reported as it is.
var pnpVendors = map[string]string{
	"ACR": "Acer", "AOC": "AOC", "APP": "Apple Inc.", "AUO": "AU Optronics", "AUS": "ASUS", "BNQ": "BenQ",
	"BOE": "BOE", "CMN": "Innolux", "DEL": "Dell", "EIZ": "EIZO", "ENC": "EIZO", "FUS": "Fujitsu", "GSM": "LG Electronics",
	"HPN": "HP", "HWP": "HP", "IVM": "iiyama", "LEN": "Lenovo", "LGD": "LG Display", "MSI": "MSI", "NEC": "NEC",
	"PHL": "Philips", "SAM": "Samsung", "SDC": "Samsung Display", "SEC": "Samsung", "SHP": "Sharp", "SNY": "Sony",
	"VSC": "ViewSonic", "HKC": "HKC", "IVO": "InfoVision", "MEI": "Panasonic", "TSB": "Toshiba", "GBT": "Gigabyte",
}

func pnpVendor(id string) string {
	if n, ok := pnpVendors[strings.ToUpper(id)]; ok {
		return n
	}
	return id
}

// monitorRow is one row of the monitors dataset. builtIn names a panel
// without a name descriptor "Built-in Display"; the year is reported as
// the EDID gives it, built-in panels included.
func monitorRow(e edidInfo, resolution string, builtIn bool) map[string]any {
	name := e.Name
	if name == "" && builtIn {
		name = "Built-in Display"
	}
	if name == "" {
		name = e.Text
	}
	if name == "" {
		name = fmt.Sprintf("%s %04X", e.Manufacturer, e.ProductCode)
	}
	if resolution == "" {
		resolution = e.Resolution
	}
	var year any
	if e.Year > 0 {
		year = e.Year
	}
	return map[string]any{"name": name, "manufacturer": pnpVendor(e.Manufacturer), "serialNumber": nullIfEmpty(e.Serial),
		"resolution": resolution, "manufactureYear": year}
}

// drmConnector matches a DRM connector folder: card0-HDMI-A-1, card1-eDP-1.
var drmConnector = regexp.MustCompile(`^card\d+-(.+)-\d+$`)

// linuxMonitors reads the connected DRM connectors under
// root/sys/class/drm: the EDID the display sent, the preferred mode (the
// first line of modes). A connector without an EDID (a virtual GPU's) is
// left out: nothing is known about what is behind it.
func linuxMonitors(root string) ([]map[string]any, error) {
	dir := filepath.Join(root, "sys/class/drm")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	rows := []map[string]any{}
	for _, ent := range ents {
		m := drmConnector.FindStringSubmatch(ent.Name())
		if m == nil {
			continue
		}
		p := filepath.Join(dir, ent.Name())
		if readTrim(filepath.Join(p, "status")) != "connected" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(p, "edid"))
		if err != nil || len(b) == 0 {
			continue
		}
		e, err := parseEDID(b)
		if err != nil {
			continue
		}
		mode, _, _ := strings.Cut(readTrim(filepath.Join(p, "modes")), "\n")
		builtIn := m[1] == "eDP" || m[1] == "LVDS" || m[1] == "DSI"
		rows = append(rows, monitorRow(e, strings.TrimSpace(mode), builtIn))
	}
	return rows, nil
}

// usbClasses names USB class codes with the device classes of the dataset
// (Windows' names where Windows has one).
var usbClasses = map[string]string{
	"01": "AudioEndpoint", "02": "Communications", "03": "HIDClass", "05": "Physical", "06": "Image",
	"07": "Printer", "08": "Mass Storage", "09": "Hub", "0a": "Communications", "0b": "SmartCardReader",
	"0d": "Content Security", "0e": "Camera", "0f": "Personal Healthcare", "10": "AudioEndpoint",
	"11": "Billboard", "dc": "Diagnostic", "e0": "Bluetooth", "ef": "Miscellaneous", "fe": "Application Specific",
	"ff": "Vendor Specific",
}

// usbClassOrder decides the class of a composite device from its
// interfaces: a webcam has video and audio interfaces and is a Camera, a
// headset audio and HID ones and is an AudioEndpoint.
var usbClassOrder = []string{"08", "0e", "01", "10", "06", "07", "0b", "e0", "02", "0a", "03", "ff"}

// usbDeviceClass is the class of a device from its bDeviceClass and the
// bInterfaceClass of its interfaces (class 00 and ef defer to them).
func usbDeviceClass(deviceClass string, interfaceClasses []string) string {
	deviceClass = strings.ToLower(deviceClass)
	if deviceClass != "00" && deviceClass != "ef" && deviceClass != "" {
		if n, ok := usbClasses[deviceClass]; ok {
			return n
		}
		return "Unknown"
	}
	have := map[string]bool{}
	for _, c := range interfaceClasses {
		have[strings.ToLower(c)] = true
	}
	for _, c := range usbClassOrder {
		if have[c] {
			return usbClasses[c]
		}
	}
	for _, c := range interfaceClasses {
		if n, ok := usbClasses[strings.ToLower(c)]; ok {
			return n
		}
	}
	return "Unknown"
}

// hwIDs names vendors and products from a usb.ids or pci.ids file
// (usbutils, pciutils, hwdata: the same format); the zero value names
// nothing.
type hwIDs struct {
	vendors  map[string]string
	products map[string]string // "vendor:product"
}

// parseHWIDs reads the vendors and products of usb.ids or pci.ids
// (lowercase hex ids; subsystems, and the class and language tables after
// the vendors, are not read).
//
//	046d  Logitech, Inc.
//	\tc077  M105 Optical Mouse
func parseHWIDs(b []byte) hwIDs {
	ids := hwIDs{vendors: map[string]string{}, products: map[string]string{}}
	vendor := ""
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		if l[0] == '\t' {
			if vendor == "" || len(l) < 7 || l[1] == '\t' {
				continue
			}
			ids.products[vendor+":"+strings.ToLower(l[1:5])] = strings.TrimSpace(l[5:])
			continue
		}
		if len(l) < 6 || !isHex(l[:4]) || l[4] != ' ' {
			if strings.HasPrefix(l, "C ") {
				break // device classes: the vendor list is over
			}
			vendor = ""
			continue
		}
		vendor = strings.ToLower(l[:4])
		ids.vendors[vendor] = strings.TrimSpace(l[4:])
	}
	return ids
}

func isHex(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return s != ""
}

// usbDevicePath matches a USB device folder (1-1, 2-1.4, usb1), not an
// interface (1-1:1.0).
var usbDevicePath = regexp.MustCompile(`^(usb\d+|\d+-[\d.]+)$`)

// linuxUSBDevices reads root/sys/bus/usb/devices: one row per device (root
// hubs included, as Windows lists them), named by its product string or
// usb.ids. The serial number is reported for every device but hubs (a root
// hub's "serial" is its controller's PCI address).
func linuxUSBDevices(root string, ids hwIDs) ([]map[string]any, error) {
	dir := filepath.Join(root, "sys/bus/usb/devices")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	rows := []map[string]any{}
	for _, ent := range ents {
		if !usbDevicePath.MatchString(ent.Name()) {
			continue
		}
		p := filepath.Join(dir, ent.Name())
		vendor, product := strings.ToLower(readTrim(p+"/idVendor")), strings.ToLower(readTrim(p+"/idProduct"))
		if vendor == "" {
			continue
		}
		var ifaces []string
		for _, i := range ents {
			if strings.HasPrefix(i.Name(), ent.Name()+":") {
				ifaces = append(ifaces, readTrim(filepath.Join(dir, i.Name(), "bInterfaceClass")))
			}
		}
		class := usbDeviceClass(readTrim(p+"/bDeviceClass"), ifaces)
		name := readTrim(p + "/product")
		if name == "" {
			name = ids.products[vendor+":"+product]
		}
		if name == "" {
			name = "USB device " + strings.ToUpper(vendor+":"+product)
		}
		manufacturer := readTrim(p + "/manufacturer")
		if manufacturer == "" {
			manufacturer = ids.vendors[vendor]
		}
		var serial any
		if class != "Hub" {
			serial = nullIfEmpty(readTrim(p + "/serial"))
		}
		rows = append(rows, map[string]any{"name": name, "manufacturer": manufacturer, "vendorId": strings.ToUpper(vendor),
			"productId": strings.ToUpper(product), "deviceClass": class, "serialNumber": serial})
	}
	return rows, nil
}

// pciVendors names the makers of sound and storage hardware by PCI vendor
// id (also the high half of an HD Audio codec's vendor id), for computers
// without pci.ids.
var pciVendors = map[string]string{
	"8086": "Intel", "10ec": "Realtek", "10de": "NVIDIA", "1002": "AMD", "1022": "AMD", "14f1": "Conexant",
	"111d": "IDT", "11d4": "Analog Devices", "1106": "VIA", "8384": "SigmaTel", "1013": "Cirrus Logic",
	"434d": "C-Media", "1102": "Creative", "1af4": "Red Hat", "15ad": "VMware", "17aa": "Lenovo", "1057": "Motorola",
	// storage controllers
	"1000": "Broadcom / LSI", "9005": "Microchip (Adaptec)", "1b4b": "Marvell", "144d": "Samsung", "1987": "Phison",
	"15b7": "Western Digital", "1344": "Micron", "c0a9": "Micron", "126f": "Silicon Motion", "1c5c": "SK hynix",
	"1e0f": "KIOXIA", "1179": "Toshiba", "1028": "Dell", "103c": "HP", "1d0f": "Amazon", "1414": "Microsoft",
}

// asoundCard is one card of /proc/asound/cards.
type asoundCard struct {
	Index     int
	ID        string // PCH
	Driver    string // HDA-Intel
	ShortName string // HDA Intel PCH
	LongName  string // HDA Intel PCH at 0xf7f10000 irq 32
}

// asoundCardLine is the first line of a card in /proc/asound/cards.
var asoundCardLine = regexp.MustCompile(`^\s*(\d+)\s+\[([^\]]*)\]:\s+(\S+)\s+-\s+(.*)$`)

// parseAsoundCards reads /proc/asound/cards, two lines per card:
//
//	0 [PCH            ]: HDA-Intel - HDA Intel PCH
//	                     HDA Intel PCH at 0xf7f10000 irq 32
func parseAsoundCards(b []byte) []asoundCard {
	var out []asoundCard
	for _, l := range lines(b) {
		if m := asoundCardLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, asoundCard{Index: n, ID: strings.TrimSpace(m[2]), Driver: m[3], ShortName: strings.TrimSpace(m[4])})
			continue
		}
		if len(out) > 0 && out[len(out)-1].LongName == "" && strings.TrimSpace(l) != "" {
			out[len(out)-1].LongName = strings.TrimSpace(l)
		}
	}
	return out
}

// parseHDACodec reads the name and vendor of /proc/asound/cardN/codec#M:
//
//	Codec: Realtek ALC892
//	Address: 0
//	Vendor Id: 0x10ec0892
func parseHDACodec(b []byte) (name, vendorID string) {
	for _, l := range lines(b) {
		if v, ok := strings.CutPrefix(l, "Codec: "); ok {
			name = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "Vendor Id: 0x"); ok && len(v) >= 4 {
			vendorID = strings.ToLower(v[:4])
		}
	}
	return name, vendorID
}

// linuxSoundDevices reads root/proc/asound: an HD Audio card gives one row
// per codec (the analog codec and the HDMI one are two devices, as Windows
// shows them); any other card one row, its manufacturer taken from the
// long name a USB audio card gets ("<manufacturer> <product> at usb-…").
// Every card ALSA lists is working, so the status is OK.
func linuxSoundDevices(root string) ([]map[string]any, error) {
	dir := filepath.Join(root, "proc/asound")
	b, err := os.ReadFile(filepath.Join(dir, "cards"))
	if err != nil {
		return nil, err
	}
	rows := []map[string]any{}
	for _, c := range parseAsoundCards(b) {
		codecs, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("card%d", c.Index), "codec#*"))
		sort.Strings(codecs)
		n := 0
		for _, f := range codecs {
			cb, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			name, vendor := parseHDACodec(cb)
			if name == "" {
				continue
			}
			rows = append(rows, map[string]any{"name": name, "manufacturer": pciVendors[vendor], "status": "OK"})
			n++
		}
		if n > 0 {
			continue
		}
		manufacturer := ""
		if before, _, ok := strings.Cut(c.LongName, " at "); ok {
			if m, ok := strings.CutSuffix(before, " "+c.ShortName); ok {
				manufacturer = strings.TrimSpace(m)
			}
		}
		rows = append(rows, map[string]any{"name": c.ShortName, "manufacturer": manufacturer, "status": "OK"})
	}
	return rows, nil
}

// pciStorageClasses names the subclasses of PCI class 01 (mass storage
// controllers).
var pciStorageClasses = map[string]string{
	"00": "SCSI", "01": "IDE", "02": "Floppy", "04": "RAID", "05": "ATA", "06": "SATA", "07": "SAS",
	"08": "NVMe", "80": "Storage",
}

// linuxStorageControllers reads the PCI devices of class 01 (mass storage)
// under root/sys/bus/pci/devices: named by pci.ids when it is installed,
// else by their kind and ids; the driver is the kernel driver bound to
// them. Controllers that are not PCI devices (Hyper-V's storvsc on VMBus,
// a USB disk's bridge) are not listed.
func linuxStorageControllers(root string, ids hwIDs) ([]map[string]any, error) {
	dir := filepath.Join(root, "sys/bus/pci/devices")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	rows := []map[string]any{}
	for _, ent := range ents {
		p := filepath.Join(dir, ent.Name())
		class := strings.TrimPrefix(readTrim(p+"/class"), "0x")
		if len(class) != 6 || class[:2] != "01" {
			continue
		}
		vendor := strings.TrimPrefix(strings.ToLower(readTrim(p+"/vendor")), "0x")
		device := strings.TrimPrefix(strings.ToLower(readTrim(p+"/device")), "0x")
		manufacturer := ids.vendors[vendor]
		if manufacturer == "" {
			manufacturer = pciVendors[vendor]
		}
		name := ids.products[vendor+":"+device]
		if name == "" {
			kind := pciStorageClasses[class[2:4]]
			if kind == "" {
				kind = "Storage"
			}
			name = fmt.Sprintf("%s controller %s:%s", kind, strings.ToUpper(vendor), strings.ToUpper(device))
		}
		driver := ""
		if l, err := os.Readlink(p + "/driver"); err == nil {
			driver = filepath.Base(l)
		}
		rows = append(rows, map[string]any{"name": name, "manufacturer": manufacturer, "driver": driver})
	}
	return rows, nil
}
