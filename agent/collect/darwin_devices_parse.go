package collect

// Parsers of the macOS device and history sources: `system_profiler -json`
// (SPUSBDataType, SPUSBHostDataType, SPAudioDataType, SPDisplaysDataType)
// and /Library/Receipts/InstallHistory.plist. Platform-independent so that
// they are tested on any system.

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// spItem is one node of a system_profiler tree: its values are strings or
// numbers, children are under _items.
type spItem map[string]any

func (it spItem) str(key string) string {
	switch v := it[key].(type) {
	case string:
		return strings.TrimSpace(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

func (it spItem) items() []spItem {
	list, _ := it["_items"].([]any)
	out := make([]spItem, 0, len(list))
	for _, v := range list {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// systemProfilerDevices is the output of `system_profiler -json
// SPUSBDataType SPUSBHostDataType SPAudioDataType SPDisplaysDataType`.
type systemProfilerDevices struct {
	USB      []spItem `json:"SPUSBDataType"`
	USBHost  []spItem `json:"SPUSBHostDataType"` // macOS 26 and later
	Audio    []spItem `json:"SPAudioDataType"`
	Displays []spItem `json:"SPDisplaysDataType"`
}

// parseSystemProfilerDevices gives the monitors, usb-devices and
// sound-devices rows. A data type the output lacks gives no rows.
func parseSystemProfilerDevices(b []byte) (monitors, usb, sound []map[string]any, err error) {
	var sp systemProfilerDevices
	if err := json.Unmarshal(b, &sp); err != nil {
		return nil, nil, nil, fmt.Errorf("system_profiler: %w", err)
	}
	monitors, usb, sound = []map[string]any{}, []map[string]any{}, []map[string]any{}
	for _, gpu := range sp.Displays {
		list, _ := gpu["spdisplays_ndrvs"].([]any)
		for _, v := range list {
			d, ok := v.(map[string]any)
			if !ok {
				continue
			}
			monitors = append(monitors, macMonitorRow(d))
		}
	}
	// The buses are the top level; devices are their _items, nested
	// below hubs.
	var walk func(items []spItem, host bool)
	walk = func(items []spItem, host bool) {
		for _, it := range items {
			usb = append(usb, macUSBRow(it, host))
			walk(it.items(), host)
		}
	}
	for _, bus := range sp.USB {
		walk(bus.items(), false)
	}
	for _, bus := range sp.USBHost {
		walk(bus.items(), true)
	}
	for _, group := range sp.Audio {
		for _, d := range group.items() {
			sound = append(sound, map[string]any{"name": d.str("_name"), "manufacturer": d.str("coreaudio_device_manufacturer"), "status": "OK"})
		}
	}
	return monitors, usb, sound, nil
}

// macMonitorRow reads one display of SPDisplaysDataType. The vendor id is
// the EDID manufacturer id in hex (610 is APP, 10ac DEL); the serial number
// the EDID's numeric serial in hex, reported in decimal as on Linux; a
// year of 0 (built-in panels) is unknown.
func macMonitorRow(d spItem) map[string]any {
	manufacturer := ""
	if id, err := strconv.ParseUint(d.str("_spdisplays_display-vendor-id"), 16, 16); err == nil && id > 0 {
		manufacturer = pnpVendor(string([]byte{byte('A' - 1 + (id>>10)&0x1f), byte('A' - 1 + (id>>5)&0x1f), byte('A' - 1 + id&0x1f)}))
	}
	var serial any
	if s := d.str("_spdisplays_display-serial-number"); s != "" {
		if n, err := strconv.ParseUint(s, 16, 32); err == nil {
			if n != 0 {
				serial = strconv.FormatUint(n, 10)
			}
		} else {
			serial = s
		}
	}
	var year any
	if y, err := strconv.Atoi(d.str("_spdisplays_display-year")); err == nil && y > 0 {
		year = y
	}
	res := strings.ReplaceAll(d.str("_spdisplays_pixels"), " ", "")
	if res == "" {
		res, _, _ = strings.Cut(d.str("_spdisplays_resolution"), " @")
		res = strings.ReplaceAll(res, " ", "")
	}
	name := d.str("_name")
	if name == "" && d.str("spdisplays_connection_type") == "spdisplays_internal" {
		name = "Built-in Display"
	}
	return map[string]any{"name": name, "manufacturer": manufacturer, "serialNumber": serial, "resolution": res, "manufactureYear": year}
}

// macUSBRow reads one device of SPUSBDataType (vendor_id "0x0781
// (SanDisk Corporation)" or "apple_vendor_id", product_id "0x5581",
// serial_num, manufacturer) or of SPUSBHostDataType (USBDeviceKeyVendorID,
// USBDeviceKeyProductID, USBDeviceKeyVendorName, USBDeviceKeySerialNumber).
// system_profiler gives no USB class: a device holding storage (Media,
// bsd_name) is Mass Storage, the rest is told by its name (Hub, HIDClass
// for keyboards, mice and trackpads, Camera, AudioEndpoint), else USB.
func macUSBRow(it spItem, host bool) map[string]any {
	var vendor, product, manufacturer, serial string
	if host {
		vendor, product = it.str("USBDeviceKeyVendorID"), it.str("USBDeviceKeyProductID")
		manufacturer, serial = it.str("USBDeviceKeyVendorName"), it.str("USBDeviceKeySerialNumber")
	} else {
		v := it.str("vendor_id")
		if v == "apple_vendor_id" {
			vendor = "05ac"
		} else {
			id, rest, _ := strings.Cut(v, " ")
			vendor, manufacturer = id, strings.Trim(strings.TrimSpace(rest), "()")
		}
		product, serial = it.str("product_id"), it.str("serial_num")
		if m := it.str("manufacturer"); m != "" {
			manufacturer = m
		}
	}
	hex4 := func(s string) string {
		s = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "0x")
		if n, err := strconv.ParseUint(s, 16, 16); err == nil {
			return fmt.Sprintf("%04X", n)
		}
		return strings.ToUpper(s)
	}
	name := it.str("_name")
	class := macUSBClass(name, it["Media"] != nil || it.str("bsd_name") != "")
	var sn any
	if class != "Hub" {
		sn = nullIfEmpty(serial)
	}
	return map[string]any{"name": name, "manufacturer": manufacturer, "vendorId": hex4(vendor), "productId": hex4(product),
		"deviceClass": class, "serialNumber": sn}
}

func macUSBClass(name string, storage bool) string {
	n := strings.ToLower(name)
	switch {
	case storage || strings.Contains(n, "card reader"):
		return "Mass Storage"
	case strings.Contains(n, "hub"):
		return "Hub"
	case strings.Contains(n, "keyboard") || strings.Contains(n, "mouse") || strings.Contains(n, "trackpad"):
		return "HIDClass"
	case strings.Contains(n, "camera") || strings.Contains(n, "webcam"):
		return "Camera"
	case strings.Contains(n, "audio") || strings.Contains(n, "headset") || strings.Contains(n, "speaker") || strings.Contains(n, "microphone"):
		return "AudioEndpoint"
	}
	return "USB"
}

// parsePlist decodes an XML property list into Go values: dict as
// map[string]any, array as []any, string, date (time.Time), integer
// (int64), real (float64), true/false, data (the base64 text).
func parsePlist(r io.Reader) (any, error) {
	d := xml.NewDecoder(r)
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("plist: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local != "plist" {
			return plistValue(d, se)
		}
	}
}

func plistValue(d *xml.Decoder, se xml.StartElement) (any, error) {
	switch se.Name.Local {
	case "dict":
		m := map[string]any{}
		key := ""
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, err
			}
			switch t := tok.(type) {
			case xml.StartElement:
				if t.Name.Local == "key" {
					var k string
					if err := d.DecodeElement(&k, &t); err != nil {
						return nil, err
					}
					key = k
					continue
				}
				v, err := plistValue(d, t)
				if err != nil {
					return nil, err
				}
				m[key] = v
			case xml.EndElement:
				return m, nil
			}
		}
	case "array":
		list := []any{}
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, err
			}
			switch t := tok.(type) {
			case xml.StartElement:
				v, err := plistValue(d, t)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			case xml.EndElement:
				return list, nil
			}
		}
	case "true", "false":
		if err := d.Skip(); err != nil {
			return nil, err
		}
		return se.Name.Local == "true", nil
	}
	var s string
	if err := d.DecodeElement(&s, &se); err != nil {
		return nil, err
	}
	s = strings.TrimSpace(s)
	switch se.Name.Local {
	case "date":
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, err
		}
		return t, nil
	case "integer":
		return strconv.ParseInt(s, 10, 64)
	case "real":
		return strconv.ParseFloat(s, 64)
	}
	return s, nil
}

// macUpdateInstallers are the processes that install Apple's software
// updates; InstallHistory.plist also records every package and App Store
// installation, which are not updates.
var macUpdateInstallers = map[string]bool{
	"softwareupdated": true, "Software Update": true, "System Preferences": true, "System Settings": true,
}

// parseInstallHistory reads /Library/Receipts/InstallHistory.plist (an
// array of dicts: date, displayName, displayVersion, packageIdentifiers,
// processName) into installed-updates rows, newest first. The type is OS
// Update for macOS itself, Security Update for security responses,
// Definition Update for XProtect, MRT and Gatekeeper data, Update
// otherwise; installedBy is the installing process.
func parseInstallHistory(b []byte) ([]map[string]any, error) {
	v, err := parsePlist(strings.NewReader(string(b)))
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("InstallHistory.plist: not an array")
	}
	rows := []map[string]any{}
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		proc, _ := m["processName"].(string)
		at, _ := m["date"].(time.Time)
		name, _ := m["displayName"].(string)
		version, _ := m["displayVersion"].(string)
		if !macUpdateInstallers[proc] || at.IsZero() || name == "" {
			continue
		}
		title := name
		if version != "" && !strings.HasSuffix(name, version) {
			title += " " + version
		}
		rows = append(rows, installedUpdateRow("", title, macUpdateType(name), at, proc))
	}
	return newestRows(rows, "installedAt"), nil
}

func macUpdateType(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "security response") || strings.Contains(n, "security update") || strings.Contains(n, "background security"):
		return "Security Update"
	case strings.Contains(n, "xprotect") || strings.HasPrefix(n, "mrt") || strings.Contains(n, "gatekeeper") || strings.Contains(n, "configdata"):
		return "Definition Update"
	case strings.HasPrefix(n, "macos"):
		return "OS Update"
	}
	return "Update"
}
