package collect

// Parsers of the Windows collectors' output (PowerShell JSON and the winget
// table). Platform-independent so that they are tested on any system.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
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
		InstallationType     string  `json:"installationType"`
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
		UEFI         bool    `json:"uefi"`
		SecureBoot   bool    `json:"secureBoot"`
	} `json:"bios"`
	Processors many[struct {
		Name              string `json:"name"`
		Manufacturer      string `json:"manufacturer"`
		Cores             int    `json:"cores"`
		LogicalProcessors int    `json:"logicalProcessors"`
		MaxClockMHz       *int   `json:"maxClockMHz"`
		Socket            string `json:"socket"`
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
		IPSubnet       many[string] `json:"ipSubnet"`
		DefaultGateway many[string] `json:"defaultGateway"`
		DNSServers     many[string] `json:"dnsServers"`
		DHCPEnabled    bool         `json:"dhcpEnabled"`
		DNSDomain      string       `json:"dnsDomain"`
		MTU            *int         `json:"mtu"`
		ConnectionID   string       `json:"connectionId"`
		Speed          *float64     `json:"speed"` // bits per second
		// NetConnectionStatus 2 is connected; nil when not read.
		NetConnectionStatus *int `json:"netConnectionStatus"`
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
	LoggedOnUsers       many[windowsSession] `json:"loggedOnUsers"`
}

// windowsSession is one logged-on user of the inventory script: a plain
// DOMAIN\user string (older scripts) or an object with the logon time.
type windowsSession struct {
	User    string  `json:"user"`
	LogonAt *string `json:"logonAt"`
	// SessionID 0 is services; the console is 1 and RDP sessions come
	// after it, so only the name of the session type is a guess.
	SessionID *int `json:"sessionId"`
}

func (s *windowsSession) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &s.User)
	}
	type plain windowsSession
	return json.Unmarshal(b, (*plain)(s))
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
	sys.OSInstallationType = str(w.OS.InstallationType)
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
		diskRows = append(diskRows, logicalDiskRow(d.DeviceID, "Local Disk", d.FileSystem, d.VolumeName, d.Size, d.FreeSpace))
	}
	inv.Datasets[agentproto.DatasetLogicalDisks] = diskRows

	macs := map[string]bool{}
	nics := []map[string]any{}
	for _, n := range w.NetworkAdapters {
		var v4, mask string
		for k, ip := range n.IPAddress {
			if !strings.Contains(ip, ":") && v4 == "" {
				v4 = ip
				if k < len(n.IPSubnet) {
					mask = n.IPSubnet[k]
				}
			}
		}
		mac := strings.ToUpper(strings.ReplaceAll(n.MACAddress, "-", ":"))
		if mac != "" {
			macs[mac] = true
		}
		gateway := ""
		for _, g := range n.DefaultGateway {
			if !strings.Contains(g, ":") {
				gateway = g
				break
			}
		}
		name := n.ConnectionID
		if name == "" {
			name = n.Description
		}
		speed := 0
		if n.Speed != nil {
			speed = int(*n.Speed / 1e6)
		}
		a := adapter{Name: name, MAC: mac, Mask: mask, Up: true, Running: n.NetConnectionStatus == nil || *n.NetConnectionStatus == 2}
		if v4 != "" {
			a.IPv4 = []string{v4}
		}
		nics = append(nics, adapterRow(a, n.Description, gateway, strings.Join(n.DNSServers, ","), n.DHCPEnabled, speed))
	}
	sys.MACAddresses = []string{}
	for m := range macs {
		sys.MACAddresses = append(sys.MACAddresses, m)
	}
	sort.Strings(sys.MACAddresses)
	inv.Datasets[agentproto.DatasetNetworkAdapters] = nics

	inv.Software = windowsSoftwareRows(w.Software)

	inv.Datasets[agentproto.DatasetServices] = windowsServiceRows(w.Services)
	inv.Datasets[agentproto.DatasetProcesses] = windowsProcessRows(w.Processes, collectedAtOr(inv.CollectedAt, time.Now()))
	inv.Datasets[agentproto.DatasetLocalUsers] = windowsRows(w.LocalUsers, map[string]string{"lastLogon": "lastLogonAt", "passwordLastSet": "passwordLastSetAt"})
	inv.Datasets[agentproto.DatasetLocalGroups] = windowsGroupRows(w.LocalGroups)
	inv.Datasets[agentproto.DatasetLocalAdministrators] = windowsAdminRows(w.LocalAdministrators)
	inv.Datasets[agentproto.DatasetStartupItems] = nonNil(w.StartupItems)
	inv.Datasets[agentproto.DatasetRoutingTables] = windowsRouteRows(w.Routes)
	users := []map[string]any{}
	for _, u := range w.LoggedOnUsers {
		at, _ := time.Parse(time.RFC3339, deref(u.LogonAt))
		typ := "console"
		if u.SessionID != nil && *u.SessionID > 1 {
			typ = "rdp"
		}
		users = append(users, sessionRow(u.User, typ, at, ""))
	}
	inv.Datasets[agentproto.DatasetLoggedOnUsers] = users
	inv.Datasets[agentproto.DatasetFirmware] = []map[string]any{firmwareRow(w.BIOS.Manufacturer, w.BIOS.Version,
		firmwareDate(deref(w.BIOS.ReleaseDate)), w.BIOS.UEFI, w.BIOS.SecureBoot)}
	procs := []map[string]any{}
	for i, p := range w.Processors {
		var clock any
		if p.MaxClockMHz != nil {
			clock = *p.MaxClockMHz
		}
		socket := p.Socket
		if socket == "" {
			socket = "CPU " + strconv.Itoa(i)
		}
		procs = append(procs, map[string]any{
			"name": strings.Join(strings.Fields(p.Name), " "), "manufacturer": p.Manufacturer, "cores": p.Cores,
			"logicalProcessors": p.LogicalProcessors, "maxClockMHz": clock, "socket": socket, "architecture": windowsArch(w.OS.OSArchitecture),
		})
	}
	inv.Datasets[datasetProcessors] = procs
	var installDate any
	if t, err := time.Parse(time.RFC3339, deref(w.OS.InstallDate)); err == nil {
		if d := installDay(t, time.Now()); d != "" {
			installDate = d
		}
	}
	inv.Datasets[agentproto.DatasetOSInformation] = []map[string]any{{
		"name": w.OS.Caption, "edition": nullIfEmpty(WindowsEdition(w.OS.Caption)), "version": firstNonEmpty(w.OS.DisplayVersion, w.OS.Version),
		"build": nullIfEmpty(strings.TrimPrefix(build, "10.0.")), "kernel": nullIfEmpty(w.OS.Version), "architecture": windowsArch(w.OS.OSArchitecture),
		"installDate": installDate, "lastBootAt": derefAny(w.OS.LastBootUpTime), "locale": nil,
	}}

	devices, err := windowsDeviceDatasets(b)
	if err != nil {
		return windowsFacts{}, err
	}
	for name, rows := range devices {
		inv.Datasets[name] = rows
	}
	hardware, err := windowsHardwareDatasets(b)
	if err != nil {
		return windowsFacts{}, err
	}
	for name, rows := range hardware {
		inv.Datasets[name] = rows
	}
	if !w.ComputerSystem.PartOfDomain {
		// Local policy alone is not what the applied-GPO report is about.
		inv.Datasets[datasetAppliedGPO] = []map[string]any{}
	}

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
		name, _ := s["name"].(string)
		display, _ := s["displayName"].(string)
		account, _ := s["account"].(string)
		rows = append(rows, serviceRow(name, display, strings.ToLower(state), mode, account))
	}
	return rows
}

// windowsProcessRows: cpuPercent is the CPU time over the process's life
// (the time since its start up to now), like ps %cpu.
func windowsProcessRows(in []map[string]any, now time.Time) []map[string]any {
	rows := []map[string]any{}
	for _, p := range in {
		ws, _ := p["workingSet"].(float64)
		cpu, _ := p["cpuSeconds"].(float64)
		pid, _ := p["pid"].(float64)
		name, _ := p["name"].(string)
		user, _ := p["user"].(string)
		path, _ := p["path"].(string)
		pct := 0.0
		if s, ok := p["startTime"].(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil && now.Sub(t) > 0 {
				pct = 100 * cpu / now.Sub(t).Seconds()
			}
		}
		rows = append(rows, processRow(name, int(pid), user, ws/(1<<20), pct, path))
	}
	return rows
}

// collectedAtOr is t, or def when t is zero.
func collectedAtOr(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}

// windowsRows renames keys of script rows (old name → contract name).
func windowsRows(in []map[string]any, rename map[string]string) []map[string]any {
	rows := []map[string]any{}
	for _, r := range in {
		out := make(map[string]any, len(r))
		for k, v := range r {
			if n, ok := rename[k]; ok {
				k = n
			}
			out[k] = v
		}
		rows = append(rows, out)
	}
	return rows
}

// windowsGroupRows: the script does not list members (Get-LocalGroupMember
// is slow on domain-joined computers); members stays an empty string.
func windowsGroupRows(in []map[string]any) []map[string]any {
	rows := []map[string]any{}
	for _, g := range in {
		members, _ := g["members"].(string)
		rows = append(rows, map[string]any{"name": g["name"], "description": g["description"], "members": members})
	}
	return rows
}

// windowsAdminRows maps Get-LocalGroupMember (objectClass User or Group,
// PrincipalSource Local, ActiveDirectory, AzureAD, MicrosoftAccount).
func windowsAdminRows(in []map[string]any) []map[string]any {
	rows := []map[string]any{}
	for _, m := range in {
		name, _ := m["name"].(string)
		class, _ := m["objectClass"].(string)
		src, _ := m["source"].(string)
		typ := "User"
		if strings.EqualFold(class, "Group") {
			typ = "Group"
		}
		source := "Local"
		if src != "" && !strings.EqualFold(src, "Local") {
			source = "Domain"
		}
		rows = append(rows, adminRow(name, typ, source))
	}
	return rows
}

// windowsRouteRows keeps IPv4 routes and splits DestinationPrefix into
// destination and netmask.
func windowsRouteRows(in []map[string]any) []map[string]any {
	rows := []map[string]any{}
	for _, r := range in {
		prefix, _ := r["destination"].(string)
		_, ipn, err := net.ParseCIDR(prefix)
		if err != nil || ipn.IP.To4() == nil {
			continue
		}
		metric, _ := r["metric"].(float64)
		rows = append(rows, map[string]any{
			"destination": ipn.IP.String(), "netmask": net.IP(ipn.Mask).String(), "gateway": r["gateway"],
			"interface": r["interface"], "metric": int(metric),
		})
	}
	return rows
}

// windowsArch maps "64-bit" and "ARM 64-bit Processor" to amd64 and arm64.
func windowsArch(s string) string {
	switch l := strings.ToLower(s); {
	case strings.Contains(l, "arm"):
		return "arm64"
	case strings.Contains(l, "64"):
		return "amd64"
	case l == "":
		return ""
	}
	return "386"
}

// WindowsEdition reads the edition from the caption: the words after the
// product ("Windows 11", "Windows Server 2022", "Windows Server 2012 R2"),
// without the release year an LTSC/LTSB caption carries:
//
//	Microsoft Windows 11 Pro                      → Pro
//	Microsoft Windows 10 Enterprise LTSC 2019     → Enterprise LTSC
//	Microsoft Windows 10 Enterprise 2016 LTSB     → Enterprise LTSB
//	Microsoft Windows 10 IoT Enterprise LTSC 2021 → IoT Enterprise LTSC
//	Microsoft Windows Server 2022 Datacenter      → Datacenter
//	Microsoft Windows 11 Pro for Workstations     → Pro for Workstations
//
// "" when the caption names no edition or is not of Windows.
func WindowsEdition(caption string) string {
	f := strings.Fields(strings.NewReplacer("®", " ", "™", " ", "(R)", " ", "(TM)", " ").Replace(caption))
	if len(f) > 0 && strings.EqualFold(f[0], "Microsoft") {
		f = f[1:]
	}
	if len(f) < 2 || !strings.EqualFold(f[0], "Windows") {
		return ""
	}
	f = f[1:]
	if strings.EqualFold(f[0], "Server") {
		f = f[1:]
		if len(f) > 0 && isReleaseYear(f[0]) {
			f = f[1:]
			if len(f) > 0 && strings.EqualFold(f[0], "R2") {
				f = f[1:]
			}
		}
	} else {
		f = f[1:] // 10, 11, 8.1, 7, Vista
	}
	var out []string
	for _, w := range f {
		if !isReleaseYear(w) {
			out = append(out, w)
		}
	}
	return strings.TrimSuffix(strings.Join(out, " "), ":")
}

// isReleaseYear is true for a year in a Windows caption (2008–2099).
func isReleaseYear(w string) bool {
	n, err := strconv.Atoi(w)
	return err == nil && len(w) == 4 && n >= 2000 && n < 2100
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
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

// windowsIANA maps the commonest Windows time zone names to IANA (the CLDR
// mapping, territory 001); another name leaves ianaName as the Windows one.
var windowsIANA = map[string]string{
	"UTC": "Etc/UTC", "GMT Standard Time": "Europe/London", "W. Europe Standard Time": "Europe/Berlin",
	"Romance Standard Time": "Europe/Paris", "Central Europe Standard Time": "Europe/Budapest",
	"Central European Standard Time": "Europe/Warsaw", "E. Europe Standard Time": "Europe/Chisinau",
	"FLE Standard Time": "Europe/Kiev", "Russian Standard Time": "Europe/Moscow",
	"Eastern Standard Time": "America/New_York", "Central Standard Time": "America/Chicago",
	"Mountain Standard Time": "America/Denver", "Pacific Standard Time": "America/Los_Angeles",
	"India Standard Time": "Asia/Calcutta", "China Standard Time": "Asia/Shanghai",
	"Tokyo Standard Time": "Asia/Tokyo", "AUS Eastern Standard Time": "Australia/Sydney",
	"Singapore Standard Time": "Asia/Singapore", "E. South America Standard Time": "America/Sao_Paulo",
}
