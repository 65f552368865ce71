package collect

// Parsers of the Windows collectors' output (PowerShell JSON and the winget
// table). Platform-independent so that they are tested on any system.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/patchd/patchd/agentproto"
)

// many decodes a JSON array, a single object (PowerShell unwraps one-item
// arrays) or null into a slice.
type many[T any] []T

func (m *many[T]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*m = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var s []T
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*m = s
		return nil
	}
	var one T
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*m = []T{one}
	return nil
}

// flexString decodes a JSON string or number (PowerShell writes registry
// values as they are typed: InstallDate may be either).
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*f = ""
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexString(s)
		return nil
	}
	*f = flexString(string(b))
	return nil
}

// WindowsSoftware is one Uninstall registry entry.
type WindowsSoftware struct {
	Name                 flexString `json:"name"`
	Version              flexString `json:"version"`
	Publisher            flexString `json:"publisher"`
	InstallDate          flexString `json:"installDate"`
	WindowsInstaller     bool       `json:"windowsInstaller"`
	KeyName              string     `json:"keyName"`
	InstalledFor         string     `json:"installedFor"`
	UninstallString      flexString `json:"uninstallString"`
	QuietUninstallString flexString `json:"quietUninstallString"`
}

// windowsInventory is what WindowsInventoryScript prints.
type windowsInventory struct {
	OS struct {
		Caption              string  `json:"caption"`
		Version              string  `json:"version"`
		BuildNumber          string  `json:"buildNumber"`
		UBR                  *int    `json:"ubr"`
		DisplayVersion       string  `json:"displayVersion"`
		ProductType          int     `json:"productType"`
		OSArchitecture       string  `json:"osArchitecture"`
		InstallDate          *string `json:"installDate"`
		LastBootUpTime       *string `json:"lastBootUpTime"`
		TotalVisibleMemoryKB uint64  `json:"totalVisibleMemoryKB"`
	} `json:"os"`
	ComputerSystem struct {
		Name                string `json:"name"`
		Domain              string `json:"domain"`
		PartOfDomain        bool   `json:"partOfDomain"`
		Manufacturer        string `json:"manufacturer"`
		Model               string `json:"model"`
		TotalPhysicalMemory uint64 `json:"totalPhysicalMemory"`
		UserName            string `json:"userName"`
	} `json:"computerSystem"`
	BIOS struct {
		Manufacturer string  `json:"manufacturer"`
		Version      string  `json:"version"`
		SerialNumber string  `json:"serialNumber"`
		ReleaseDate  *string `json:"releaseDate"`
	} `json:"bios"`
	Processors many[struct {
		Name              string `json:"name"`
		Cores             int    `json:"cores"`
		LogicalProcessors int    `json:"logicalProcessors"`
	}] `json:"processors"`
	LogicalDisks many[struct {
		DeviceID   string `json:"deviceId"`
		FileSystem string `json:"fileSystem"`
		VolumeName string `json:"volumeName"`
		Size       uint64 `json:"size"`
		FreeSpace  uint64 `json:"freeSpace"`
	}] `json:"logicalDisks"`
	NetworkAdapters many[struct {
		Description    string       `json:"description"`
		MACAddress     string       `json:"macAddress"`
		IPAddress      many[string] `json:"ipAddress"`
		DefaultGateway many[string] `json:"defaultGateway"`
		DHCPEnabled    bool         `json:"dhcpEnabled"`
		DNSDomain      string       `json:"dnsDomain"`
		MTU            *int         `json:"mtu"`
	}] `json:"networkAdapters"`
	Software  many[WindowsSoftware] `json:"software"`
	Antivirus many[struct {
		DisplayName  string `json:"displayName"`
		ProductState int    `json:"productState"`
	}] `json:"antivirus"`
	PendingReboot struct {
		ComponentBasedServicing bool `json:"componentBasedServicing"`
		WindowsUpdate           bool `json:"windowsUpdate"`
		PendingFileRename       bool `json:"pendingFileRename"`
	} `json:"pendingReboot"`
	TimeZone            string               `json:"timeZone"`
	Services            many[map[string]any] `json:"services"`
	Processes           many[map[string]any] `json:"processes"`
	LocalUsers          many[map[string]any] `json:"localUsers"`
	LocalGroups         many[map[string]any] `json:"localGroups"`
	LocalAdministrators many[map[string]any] `json:"localAdministrators"`
	StartupItems        many[map[string]any] `json:"startupItems"`
	Routes              many[map[string]any] `json:"routes"`
	LoggedOnUsers       many[string]         `json:"loggedOnUsers"`
}

// windowsFacts are the parts of the Windows inventory a check-in needs.
type windowsFacts struct {
	LastBoot      *time.Time
	User          string
	PendingReboot bool
}

// parseWindowsInventory decodes WindowsInventoryScript's output into inv
// and returns the check-in facts it carries.
func parseWindowsInventory(b []byte, inv *agentproto.Inventory) (windowsFacts, error) {
	var w windowsInventory
	if err := json.Unmarshal(bytes.TrimSpace(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))), &w); err != nil {
		return windowsFacts{}, fmt.Errorf("windows inventory: %w", err)
	}
	sys := &inv.System
	if w.ComputerSystem.Name != "" {
		sys.Hostname = w.ComputerSystem.Name
	}
	sys.OS = str(strings.TrimPrefix(w.OS.Caption, "Microsoft "))
	sys.OSVersion = str(w.OS.DisplayVersion)
	if sys.OSVersion == nil {
		sys.OSVersion = str(w.OS.Version)
	}
	build := w.OS.Version
	if w.OS.UBR != nil && build != "" {
		build += "." + strconv.Itoa(*w.OS.UBR)
	}
	sys.OSBuild = str(build)
	sys.Type = "workstation"
	if w.OS.ProductType == 2 || w.OS.ProductType == 3 {
		sys.Type = "server"
	}
	if w.ComputerSystem.PartOfDomain {
		sys.Domain = str(w.ComputerSystem.Domain)
	}
	sys.Manufacturer = str(w.ComputerSystem.Manufacturer)
	sys.Model = str(w.ComputerSystem.Model)
	sys.SerialNumber = str(w.BIOS.SerialNumber)
	cores := 0
	for i, p := range w.Processors {
		if i == 0 {
			sys.CPU = str(strings.Join(strings.Fields(p.Name), " "))
		}
		cores += p.Cores
	}
	if cores > 0 {
		sys.Cores = ptr(cores)
	}
	if w.ComputerSystem.TotalPhysicalMemory > 0 {
		sys.RAMGB = ptr(gib(w.ComputerSystem.TotalPhysicalMemory))
	} else if w.OS.TotalVisibleMemoryKB > 0 {
		sys.RAMGB = ptr(gib(w.OS.TotalVisibleMemoryKB * 1024))
	}
	sys.TimeZone = str(w.TimeZone)
	var av []string
	for _, a := range w.Antivirus {
		if a.DisplayName != "" && antivirusEnabled(a.ProductState) {
			av = append(av, a.DisplayName)
		}
	}
	sys.Antivirus = str(strings.Join(av, ", "))

	diskRows := []map[string]any{}
	for _, d := range w.LogicalDisks {
		inv.Disks = append(inv.Disks, agentproto.Disk{Drive: d.DeviceID, SizeGB: ptr(gib(d.Size)), FreeGB: ptr(gib(d.FreeSpace))})
		row := logicalDiskRow(d.DeviceID, "", d.FileSystem, d.Size, d.FreeSpace)
		row["volumeName"] = nullIfEmpty(d.VolumeName)
		diskRows = append(diskRows, row)
	}
	inv.Datasets[agentproto.DatasetLogicalDisks] = diskRows

	macs := map[string]bool{}
	nics := []map[string]any{}
	for _, n := range w.NetworkAdapters {
		var v4, v6 []string
		for _, ip := range n.IPAddress {
			if strings.Contains(ip, ":") {
				v6 = append(v6, ip)
			} else {
				v4 = append(v4, ip)
			}
		}
		mac := strings.ToUpper(strings.ReplaceAll(n.MACAddress, "-", ":"))
		if mac != "" {
			macs[mac] = true
		}
		var mtu any
		if n.MTU != nil {
			mtu = *n.MTU
		}
		nics = append(nics, map[string]any{
			"name": n.Description, "mac": nullIfEmpty(mac), "ipv4": strings.Join(v4, ","), "ipv6": strings.Join(v6, ","),
			"gateway": strings.Join(n.DefaultGateway, ","), "dhcp": n.DHCPEnabled, "dnsDomain": nullIfEmpty(n.DNSDomain),
			"mtu": mtu, "state": "up", "speedMbps": nil,
		})
	}
	sys.MACAddresses = []string{}
	for m := range macs {
		sys.MACAddresses = append(sys.MACAddresses, m)
	}
	sort.Strings(sys.MACAddresses)
	inv.Datasets[agentproto.DatasetNetworkAdapters] = nics

	inv.Software = windowsSoftwareRows(w.Software)

	inv.Datasets[agentproto.DatasetServices] = windowsServiceRows(w.Services)
	inv.Datasets[agentproto.DatasetProcesses] = windowsProcessRows(w.Processes)
	inv.Datasets[agentproto.DatasetLocalUsers] = nonNil(w.LocalUsers)
	inv.Datasets[agentproto.DatasetLocalGroups] = nonNil(w.LocalGroups)
	inv.Datasets[agentproto.DatasetLocalAdministrators] = nonNil(w.LocalAdministrators)
	inv.Datasets[agentproto.DatasetStartupItems] = nonNil(w.StartupItems)
	inv.Datasets[agentproto.DatasetRoutingTables] = nonNil(w.Routes)
	users := []map[string]any{}
	for _, u := range w.LoggedOnUsers {
		users = append(users, map[string]any{"user": u, "line": "console", "from": nil, "since": nil})
	}
	inv.Datasets[agentproto.DatasetLoggedOnUsers] = users
	inv.Datasets[agentproto.DatasetFirmware] = []map[string]any{{
		"biosVendor": nullIfEmpty(w.BIOS.Manufacturer), "biosVersion": nullIfEmpty(w.BIOS.Version),
		"biosDate": derefAny(w.BIOS.ReleaseDate), "boardVendor": nil, "boardName": nil,
	}}
	inv.Datasets[agentproto.DatasetOSInformation] = []map[string]any{{
		"name": nullIfEmpty(w.OS.Caption), "version": nullIfEmpty(w.OS.Version), "displayVersion": nullIfEmpty(w.OS.DisplayVersion),
		"build": nullIfEmpty(build), "arch": nullIfEmpty(w.OS.OSArchitecture), "installDate": derefAny(w.OS.InstallDate),
		"lastBootAt": derefAny(w.OS.LastBootUpTime), "productType": w.OS.ProductType,
	}}

	f := windowsFacts{
		User:          w.ComputerSystem.UserName,
		PendingReboot: w.PendingReboot.ComponentBasedServicing || w.PendingReboot.WindowsUpdate || w.PendingReboot.PendingFileRename,
	}
	if w.OS.LastBootUpTime != nil {
		if t, err := time.Parse(time.RFC3339, *w.OS.LastBootUpTime); err == nil {
			f.LastBoot = &t
		}
	}
	return f, nil
}

// antivirusEnabled reads bits 12-13 of SecurityCenter2's productState:
// 0x10 or 0x11 there means the real-time scanner is on.
func antivirusEnabled(state int) bool {
	s := (state >> 12) & 0xf
	return s == 1
}

func nonNil(rows []map[string]any) []map[string]any {
	if rows == nil {
		return []map[string]any{}
	}
	return rows
}

func derefAny(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// windowsSoftwareRows turns Uninstall entries into software rows, one per
// name, version and scope (the 32- and 64-bit views may repeat an entry).
func windowsSoftwareRows(entries []WindowsSoftware) []agentproto.Software {
	out := []agentproto.Software{}
	seen := map[string]bool{}
	for _, e := range entries {
		name := strings.TrimSpace(string(e.Name))
		if name == "" {
			continue
		}
		key := name + "\x00" + string(e.Version) + "\x00" + e.InstalledFor
		if seen[key] {
			continue
		}
		seen[key] = true
		typ := "exe"
		if e.WindowsInstaller || strings.Contains(strings.ToLower(string(e.UninstallString)), "msiexec") {
			typ = "msi"
		}
		forWhom := e.InstalledFor
		if forWhom == "" {
			forWhom = "all users"
		}
		out = append(out, agentproto.Software{
			Name: name, Version: str(string(e.Version)), Publisher: str(string(e.Publisher)),
			InstallDate: str(windowsDate(string(e.InstallDate))), InstalledFor: ptr(forWhom), InstallType: ptr(typ),
		})
	}
	return out
}

// windowsDate turns the registry's yyyyMMdd (or an already dashed date)
// into yyyy-MM-dd; anything else is dropped.
func windowsDate(s string) string {
	s = strings.TrimSpace(s)
	if t, err := time.Parse("20060102", s); err == nil {
		return t.Format(time.DateOnly)
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.Format(time.DateOnly)
	}
	for _, layout := range []string{"1/2/2006", "01/02/2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Format(time.DateOnly)
		}
	}
	return ""
}

func windowsServiceRows(in []map[string]any) []map[string]any {
	rows := []map[string]any{}
	for _, s := range in {
		mode, _ := s["startMode"].(string)
		switch strings.ToLower(mode) {
		case "auto":
			mode = "auto"
		case "manual":
			mode = "manual"
		case "disabled":
			mode = "disabled"
		case "boot", "system":
			mode = "auto"
		}
		state, _ := s["state"].(string)
		rows = append(rows, map[string]any{
			"name": s["name"], "displayName": s["displayName"], "state": strings.ToLower(state),
			"startMode": mode, "account": s["account"],
		})
	}
	return rows
}

func windowsProcessRows(in []map[string]any) []map[string]any {
	rows := []map[string]any{}
	for _, p := range in {
		ws, _ := p["workingSet"].(float64)
		cpu, _ := p["cpuSeconds"].(float64)
		pid, _ := p["pid"].(float64)
		rows = append(rows, map[string]any{
			"pid": int(pid), "name": p["name"], "user": p["user"],
			"memoryMB": round1(ws / (1 << 20)), "cpuSeconds": round1(cpu),
		})
	}
	return rows
}

// windowsUpdate is one update of WindowsUpdateSearchScript's output.
type windowsUpdate struct {
	Title                string       `json:"title"`
	UpdateID             string       `json:"updateId"`
	KBArticleIDs         many[string] `json:"kbArticleIds"`
	MsrcSeverity         *string      `json:"msrcSeverity"`
	Categories           many[string] `json:"categories"`
	RebootBehavior       int          `json:"rebootBehavior"`
	AutoSelectOnWebSites bool         `json:"autoSelectOnWebSites"`
	BrowseOnly           bool         `json:"browseOnly"`
	Type                 int          `json:"type"`
	ReleaseDate          *string      `json:"releaseDate"`
}

// parseWindowsUpdates maps Windows Update Agent results to updates. An
// update Windows Update would select by itself (AutoSelectOnWebSites, not
// BrowseOnly) is "OS - Mandatory", the rest (optional, drivers, feature
// updates offered on demand) "OS - Optional". The severity is the MSRC
// rating, Unspecified when Microsoft gives none.
func parseWindowsUpdates(b []byte) ([]agentproto.Update, error) {
	var list many[windowsUpdate]
	b = bytes.TrimSpace(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")))
	if len(b) == 0 {
		return []agentproto.Update{}, nil
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("windows updates: %w", err)
	}
	out := []agentproto.Update{}
	for _, w := range list {
		u := agentproto.Update{
			Title:          w.Title,
			Severity:       ptr("Unspecified"),
			Source:         "OS - Optional",
			Categories:     []string(w.Categories),
			RebootRequired: w.RebootBehavior != 0,
			ProductKey:     str(w.UpdateID),
		}
		if u.Categories == nil {
			u.Categories = []string{}
		}
		if len(w.KBArticleIDs) > 0 && w.KBArticleIDs[0] != "" {
			u.KB = ptr("KB" + strings.TrimPrefix(w.KBArticleIDs[0], "KB"))
		}
		if w.MsrcSeverity != nil && *w.MsrcSeverity != "" {
			u.Severity = ptr(*w.MsrcSeverity)
		}
		if w.AutoSelectOnWebSites && !w.BrowseOnly {
			u.Source = "OS - Mandatory"
		}
		if w.ReleaseDate != nil {
			if t, err := time.Parse(time.RFC3339, *w.ReleaseDate); err == nil {
				u.ReleaseDate = &t
			}
		}
		out = append(out, u)
	}
	return out, nil
}

// wingetRow is one row of a winget table.
type wingetRow struct {
	Name, ID, Version, Available, Source string
}

// parseWingetUpgrade reads the table `winget upgrade --include-unknown`
// prints:
//
//	Name               Id                 Version   Available Source
//	-------------------------------------------------------------------
//	Mozilla Firefox    Mozilla.Firefox    131.0.3   132.0     winget
//
// Columns are located by the header's words and sliced by display width
// (East Asian wide characters take two cells, as in the console). Progress
// spinners before the header, footers ("3 upgrades available.") and the
// second table of packages that "require explicit targeting" are handled:
// every table with an Id column is read.
func parseWingetUpgrade(b []byte) []wingetRow {
	text := string(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")))
	// The spinner draws with carriage returns: keep what follows the last.
	var ls []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if i := strings.LastIndexByte(l, '\r'); i >= 0 {
			l = l[i+1:]
		}
		ls = append(ls, strings.TrimRight(l, " "))
	}
	var rows []wingetRow
	var cols []wingetColumn
	for i := 0; i < len(ls); i++ {
		l := ls[i]
		if i+1 < len(ls) && isDashLine(ls[i+1]) && strings.Contains(l, " Id ") {
			cols = wingetColumns(l)
			i++ // skip the dashes
			continue
		}
		if cols == nil {
			continue
		}
		if strings.TrimSpace(l) == "" {
			cols = nil // a table ends at a blank line
			continue
		}
		r, ok := wingetSplit(l, cols)
		if !ok {
			cols = nil // a footer line ends the table
			continue
		}
		rows = append(rows, r)
	}
	return rows
}

type wingetColumn struct {
	name  string
	start int // display cell where the column starts
}

func isDashLine(l string) bool {
	l = strings.TrimSpace(l)
	return len(l) > 10 && strings.Trim(l, "-") == ""
}

// wingetColumns finds the columns of a header line. The header may be
// localized; columns are recognized by position: Name, Id, Version,
// Available, Source (the last two optional).
func wingetColumns(header string) []wingetColumn {
	var cols []wingetColumn
	cell := 0
	inWord := false
	var cur strings.Builder
	start := 0
	for _, r := range header {
		if r == ' ' {
			if inWord {
				cols = append(cols, wingetColumn{cur.String(), start})
				cur.Reset()
				inWord = false
			}
		} else {
			if !inWord {
				start = cell
				inWord = true
			}
			cur.WriteRune(r)
		}
		cell += runeWidth(r)
	}
	if inWord {
		cols = append(cols, wingetColumn{cur.String(), start})
	}
	return cols
}

// wingetSplit cuts a row at the header's column positions.
func wingetSplit(l string, cols []wingetColumn) (wingetRow, bool) {
	if len(cols) < 3 {
		return wingetRow{}, false
	}
	fields := make([]string, len(cols))
	cell, col := 0, 0
	var cur strings.Builder
	for _, r := range l {
		for col+1 < len(cols) && cell >= cols[col+1].start {
			fields[col] = cur.String()
			cur.Reset()
			col++
		}
		cur.WriteRune(r)
		cell += runeWidth(r)
	}
	fields[col] = cur.String()
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	r := wingetRow{Name: fields[0], ID: fields[1], Version: fields[2]}
	if len(fields) > 3 {
		r.Available = fields[3]
	}
	if len(fields) > 4 {
		r.Source = fields[4]
	}
	// A row of a table has an id without spaces; footers do not fit.
	if r.ID == "" || strings.ContainsAny(r.ID, " \t") || r.Version == "" || col < 2 {
		return wingetRow{}, false
	}
	return r, true
}

// runeWidth is the number of console cells of r: two for East Asian wide
// and full-width characters, zero for combining marks, one otherwise.
func runeWidth(r rune) int {
	switch {
	case r == utf8.RuneError:
		return 1
	case unicode.Is(unicode.Mn, r):
		return 0
	case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0xA4CF, r >= 0xAC00 && r <= 0xD7A3,
		r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F, r >= 0xFF00 && r <= 0xFF60,
		r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1F64F, r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}

// wingetUpdates turns winget rows into third-party updates.
func wingetUpdates(rows []wingetRow) []agentproto.Update {
	out := []agentproto.Update{}
	for _, r := range rows {
		// A truncated id (the console was too narrow) cannot be targeted
		// by winget upgrade --id: leave such a row out rather than report
		// an update nobody can deploy.
		if r.Available == "" || strings.HasSuffix(r.ID, "…") {
			continue
		}
		name := strings.TrimSuffix(strings.TrimSuffix(r.Name, "…"), "...")
		out = append(out, agentproto.Update{
			Title:            strings.TrimSpace(name) + " " + r.Available,
			Severity:         ptr("Unspecified"),
			Source:           "Applications",
			Categories:       []string{"Application Updates"},
			WingetID:         ptr(r.ID),
			InstalledVersion: str(r.Version),
			LatestVersion:    str(r.Available),
		})
	}
	return out
}
