package collect

// Parsers of the Windows device and history sources: the soundDevices,
// monitors, usbDevices, usbDisks, hotFixes and updateHistory of
// WindowsInventoryScript, and WindowsActivityScript's logons and event
// summary. Platform-independent so that they are tested on any system.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// windowsDevices are the device and history parts of the inventory
// script's output.
type windowsDevices struct {
	SoundDevices many[struct {
		Name         string `json:"name"`
		Manufacturer string `json:"manufacturer"`
		Status       string `json:"status"`
	}] `json:"soundDevices"`
	Monitors many[struct {
		InstanceName          string    `json:"instanceName"`
		ManufacturerName      many[int] `json:"manufacturerName"`
		UserFriendlyName      many[int] `json:"userFriendlyName"`
		SerialNumberID        many[int] `json:"serialNumberId"`
		ProductCodeID         many[int] `json:"productCodeId"`
		YearOfManufacture     int       `json:"yearOfManufacture"`
		Resolution            string    `json:"resolution"`
		VideoOutputTechnology *int64    `json:"videoOutputTechnology"`
	}] `json:"monitors"`
	USBDevices many[struct {
		Name         string `json:"name"`
		Manufacturer string `json:"manufacturer"`
		PNPClass     string `json:"pnpClass"`
		DeviceID     string `json:"deviceId"`
		Service      string `json:"service"`
	}] `json:"usbDevices"`
	USBDisks many[struct {
		Model       string `json:"model"`
		PNPDeviceID string `json:"pnpDeviceId"`
	}] `json:"usbDisks"`
	HotFixes many[struct {
		KB          string  `json:"kb"`
		Description string  `json:"description"`
		InstalledOn *string `json:"installedOn"`
		InstalledBy string  `json:"installedBy"`
	}] `json:"hotFixes"`
	UpdateHistory many[struct {
		Title               string `json:"title"`
		Date                string `json:"date"`
		ClientApplicationID string `json:"clientApplicationId"`
	}] `json:"updateHistory"`
}

// wmiString decodes the uint16 arrays of WmiMonitorID (NUL-padded).
func wmiString(codes []int) string {
	var b strings.Builder
	for _, c := range codes {
		if c == 0 {
			break
		}
		b.WriteRune(rune(c))
	}
	return strings.TrimSpace(b.String())
}

// windowsDeviceDatasets gives the monitors, usb-devices, sound-devices and
// installed-updates rows of the inventory script's output.
func windowsDeviceDatasets(b []byte) (map[string][]map[string]any, error) {
	var w windowsDevices
	if err := json.Unmarshal(bytes.TrimSpace(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))), &w); err != nil {
		return nil, fmt.Errorf("windows devices: %w", err)
	}
	sound := []map[string]any{}
	for _, s := range w.SoundDevices {
		sound = append(sound, map[string]any{"name": s.Name, "manufacturer": s.Manufacturer, "status": s.Status})
	}
	monitors := []map[string]any{}
	for _, m := range w.Monitors {
		e := edidInfo{Manufacturer: wmiString(m.ManufacturerName), Name: wmiString(m.UserFriendlyName)}
		if serial := wmiString(m.SerialNumberID); serial != "0" {
			e.Serial = serial
		}
		if code, err := strconv.ParseUint(wmiString(m.ProductCodeID), 16, 16); err == nil {
			e.ProductCode = uint16(code)
		}
		if m.YearOfManufacture > 0 {
			e.Year = m.YearOfManufacture
		}
		monitors = append(monitors, monitorRow(e, m.Resolution, windowsInternalDisplay(m.VideoOutputTechnology)))
	}
	// A USB disk's instance id (USBSTOR\DISK&VEN_…\<serial>&0) carries
	// the serial number of the USB device: its model names the device
	// better than "USB Mass Storage Device".
	diskModels := map[string]string{}
	for _, d := range w.USBDisks {
		if i := strings.LastIndexByte(d.PNPDeviceID, '\\'); i >= 0 {
			serial, _, _ := strings.Cut(d.PNPDeviceID[i+1:], "&")
			diskModels[strings.ToUpper(serial)] = d.Model
		}
	}
	usb := []map[string]any{}
	for _, d := range w.USBDevices {
		vendor, product, serial, ok := parseUSBInstanceID(d.DeviceID)
		if !ok {
			continue // an interface of a composite device (MI_xx)
		}
		class := windowsUSBClass(d.PNPClass, d.Service)
		name := d.Name
		if class == "Mass Storage" {
			if model := diskModels[strings.ToUpper(serial)]; model != "" && serial != "" {
				name = model
			}
		}
		var sn any
		if class != "Hub" {
			sn = nullIfEmpty(serial)
		}
		usb = append(usb, map[string]any{"name": name, "manufacturer": d.Manufacturer, "vendorId": vendor, "productId": product,
			"deviceClass": class, "serialNumber": sn})
	}
	return map[string][]map[string]any{
		datasetSoundDevices: sound, datasetMonitors: monitors, datasetUSBDevices: usb,
		datasetInstalledUpdates: windowsInstalledUpdates(w),
	}, nil
}

// windowsInternalDisplay tells a laptop's panel by WmiMonitorConnectionParams'
// VideoOutputTechnology: LVDS (6), embedded DisplayPort (11), embedded UDI
// (13), or the internal flag 0x80000000.
func windowsInternalDisplay(t *int64) bool {
	if t == nil {
		return false
	}
	return *t == 6 || *t == 11 || *t == 13 || *t == 0x80000000
}

// usbInstanceID matches a USB device instance id: USB\VID_046D&PID_C077\5&2C0C2B3E&0&3
var usbInstanceID = regexp.MustCompile(`(?i)^USB\\VID_([0-9A-F]{4})&PID_([0-9A-F]{4})(&[^\\]*)?\\(.*)$`)

// parseUSBInstanceID reads vendor, product and serial number from a USB
// device instance id. An interface (…&MI_00) is not a device: ok is false.
// An instance id with an ampersand is one Windows made up because the
// device has no serial number: the serial is then empty.
func parseUSBInstanceID(id string) (vendor, product, serial string, ok bool) {
	m := usbInstanceID.FindStringSubmatch(id)
	if m == nil || strings.Contains(strings.ToUpper(m[3]), "&MI_") {
		return "", "", "", false
	}
	if !strings.Contains(m[4], "&") {
		serial = m[4]
	}
	return strings.ToUpper(m[1]), strings.ToUpper(m[2]), serial, true
}

// windowsUSBClass maps the PnP class of a USB device to the dataset's: the
// class of hubs and storage devices is USB, their driver (service) tells
// them apart.
func windowsUSBClass(pnpClass, service string) string {
	switch s := strings.ToLower(service); {
	case s == "usbstor" || s == "uaspstor":
		return "Mass Storage"
	case strings.HasPrefix(s, "usbhub") || s == "usbhub3":
		return "Hub"
	}
	if pnpClass == "" {
		return "USB"
	}
	return pnpClass
}

// kbInTitle finds the KB number in an update title: "… (KB5046617)".
var kbInTitle = regexp.MustCompile(`\bKB(\d{6,8})\b`)

// windowsInstalledUpdates merges Get-HotFix (every installed KB: its
// Description is the type, Security Update, Update or Hotfix) with the
// Windows Update Agent's history (titles, exact times, and what Get-HotFix
// does not list: Defender definitions, drivers, .NET updates). An entry of
// both is one row: the title and time of the history, the type and
// account of the hot fix. An installation through patchd's own Windows
// Update session (client application patchd-agent) is installedBy patchd.
func windowsInstalledUpdates(w windowsDevices) []map[string]any {
	type hist struct {
		title string
		at    time.Time
		by    string
	}
	byKB := map[string]hist{}
	rows := []map[string]any{}
	for _, h := range w.UpdateHistory {
		at, err := time.Parse(time.RFC3339, h.Date)
		if err != nil || h.Title == "" {
			continue
		}
		by := h.ClientApplicationID
		if by == "patchd-agent" {
			by = "patchd"
		}
		kb := ""
		if m := kbInTitle.FindStringSubmatch(h.Title); m != nil {
			kb = "KB" + m[1]
		}
		if kb != "" {
			if prev, seen := byKB[kb]; !seen || at.After(prev.at) {
				byKB[kb] = hist{h.Title, at, by}
			}
			continue
		}
		rows = append(rows, installedUpdateRow("", h.Title, windowsUpdateType(h.Title, ""), at, by))
	}
	seen := map[string]bool{}
	for _, f := range w.HotFixes {
		kb := strings.ToUpper(strings.TrimSpace(f.KB))
		if kb == "" || seen[kb] {
			continue
		}
		seen[kb] = true
		at, _ := time.Parse(time.RFC3339, deref(f.InstalledOn))
		title, by := kb, f.InstalledBy
		if h, ok := byKB[kb]; ok {
			title, at = h.title, h.at
			if h.by == "patchd" || by == "" {
				by = h.by
			}
		}
		if at.IsZero() {
			continue // the installedAt of a row is not nullable
		}
		rows = append(rows, installedUpdateRow(kb, title, windowsUpdateType(title, f.Description), at, by))
	}
	for kb, h := range byKB {
		if !seen[kb] {
			rows = append(rows, installedUpdateRow(kb, h.title, windowsUpdateType(h.title, ""), h.at, h.by))
		}
	}
	return newestRows(rows, "installedAt")
}

// windowsUpdateType is the hot fix's description when it is one of the
// dataset's types, else read from the title.
func windowsUpdateType(title, description string) string {
	switch description {
	case "Security Update", "Update":
		return description
	case "Hotfix":
		return "Update"
	}
	t := strings.ToLower(title)
	switch {
	case strings.Contains(t, "security intelligence update") || strings.Contains(t, "definition update"):
		return "Definition Update"
	case strings.Contains(t, "security update"):
		return "Security Update"
	}
	return "Update"
}

// windowsActivity is what WindowsActivityScript prints.
type windowsActivity struct {
	Logons many[struct {
		ID        int    `json:"id"`
		At        string `json:"at"`
		User      string `json:"user"`
		Domain    string `json:"domain"`
		LogonType string `json:"logonType"`
	}] `json:"logons"`
	EventSummary many[struct {
		Log          string `json:"log"`
		Level        int    `json:"level"`
		AuditFailure bool   `json:"auditFailure"`
		Count        int    `json:"count"`
		Last         string `json:"last"`
		TopSource    string `json:"topSource"`
	}] `json:"eventSummary"`
}

// windowsLogonTypes names the logon types the script reads.
var windowsLogonTypes = map[string]string{"2": "Interactive", "10": "RemoteInteractive", "11": "CachedInteractive"}

// windowsEventLevels are the rows of a Windows event-log summary.
var windowsEventLevels = [][2]string{
	{"System", "Critical"}, {"System", "Error"}, {"System", "Warning"},
	{"Application", "Critical"}, {"Application", "Error"}, {"Application", "Warning"},
	{"Security", "Audit Failure"},
}

// parseWindowsActivity gives the logon-history and event-log-summary rows.
// Logons of machine accounts (NAME$) and of Window Manager and Font Driver
// Host sessions (DWM-n, UMFD-n, logon type 2 on every boot) are left out:
// they are not people logging on.
func parseWindowsActivity(b []byte) (logons, events []map[string]any, err error) {
	var w windowsActivity
	if err := json.Unmarshal(bytes.TrimSpace(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))), &w); err != nil {
		return nil, nil, fmt.Errorf("windows activity: %w", err)
	}
	logons = []map[string]any{}
	for _, l := range w.Logons {
		at, err := time.Parse(time.RFC3339, l.At)
		typ := windowsLogonTypes[l.LogonType]
		if err != nil || typ == "" || l.User == "" || l.User == "-" || strings.HasSuffix(l.User, "$") {
			continue
		}
		if d := strings.ToUpper(l.Domain); d == "WINDOW MANAGER" || d == "FONT DRIVER HOST" {
			continue
		}
		user := l.User
		if l.Domain != "" && l.Domain != "-" {
			user = l.Domain + `\` + l.User
		}
		logons = append(logons, logonRow(user, typ, at, l.ID == 4624))
	}
	logons = newestRows(logons, "logonAt")
	s := eventSummary{}
	for _, e := range w.EventSummary {
		level := map[int]string{1: "Critical", 2: "Error", 3: "Warning"}[e.Level]
		if e.AuditFailure {
			level = "Audit Failure"
		}
		if level == "" || e.Count <= 0 {
			continue
		}
		at, _ := time.Parse(time.RFC3339, e.Last)
		c := &eventCount{count: e.Count, last: at, sources: map[string]int{e.TopSource: 1}}
		s[[2]string{e.Log, level}] = c
	}
	return logons, s.rows(windowsEventLevels), nil
}
