package collect

// Parsers of the Windows hardware, storage, sharing and update-policy parts
// of WindowsInventoryScript's output (physical-memory, motherboards,
// scsi-controllers, printers, shared-folders, windows-drivers, bitlocker,
// disk-partitions, disk-volumes, network-connections,
// windows-update-settings). Platform-independent so that they are tested
// on any system.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// windowsHardware is that part of the script's output.
type windowsHardware struct {
	PhysicalMemory many[struct {
		Slot             string  `json:"slot"`
		Capacity         float64 `json:"capacity"`
		Speed            *int    `json:"speed"`
		SMBIOSMemoryType int     `json:"smbiosMemoryType"`
		Manufacturer     string  `json:"manufacturer"`
		PartNumber       string  `json:"partNumber"`
	}] `json:"physicalMemory"`
	BaseBoard many[struct {
		Manufacturer string `json:"manufacturer"`
		Product      string `json:"product"`
		SerialNumber string `json:"serialNumber"`
		Version      string `json:"version"`
	}] `json:"baseBoard"`
	StorageControllers many[struct {
		Name         string `json:"name"`
		Manufacturer string `json:"manufacturer"`
		Service      string `json:"service"`
	}] `json:"storageControllers"`
	Printers many[struct {
		Name      string `json:"name"`
		Driver    string `json:"driver"`
		Port      string `json:"port"`
		IsDefault bool   `json:"isDefault"`
		IsShared  bool   `json:"isShared"`
		IsNetwork bool   `json:"isNetwork"`
	}] `json:"printers"`
	Shares many[struct {
		Name        string `json:"name"`
		Path        string `json:"path"`
		Description string `json:"description"`
		Type        int64  `json:"type"`
	}] `json:"shares"`
	Drivers many[struct {
		DeviceName    string `json:"deviceName"`
		DeviceClass   string `json:"deviceClass"`
		Manufacturer  string `json:"manufacturer"`
		DriverVersion string `json:"driverVersion"`
		DriverDate    string `json:"driverDate"`
		InfName       string `json:"infName"`
		Signed        bool   `json:"signed"`
	}] `json:"drivers"`
	BitLocker many[struct {
		MountPoint           string  `json:"mountPoint"`
		ProtectionStatus     string  `json:"protectionStatus"`
		EncryptionMethod     string  `json:"encryptionMethod"`
		EncryptionPercentage float64 `json:"encryptionPercentage"`
		KeyProtectors        many[struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}] `json:"keyProtectors"`
	}] `json:"bitLocker"`
	Partitions many[struct {
		Disk      int     `json:"disk"`
		Partition int     `json:"partition"`
		Type      string  `json:"type"`
		GptType   string  `json:"gptType"`
		Size      float64 `json:"size"`
		IsSystem  bool    `json:"isSystem"`
		IsActive  bool    `json:"isActive"`
	}] `json:"partitions"`
	Volumes many[struct {
		Path          string  `json:"path"`
		DriveLetter   string  `json:"driveLetter"`
		Label         string  `json:"label"`
		FileSystem    string  `json:"fileSystem"`
		Size          float64 `json:"size"`
		SizeRemaining float64 `json:"sizeRemaining"`
	}] `json:"volumes"`
	TCPConnections many[struct {
		Process       string `json:"process"`
		LocalAddress  string `json:"localAddress"`
		LocalPort     int    `json:"localPort"`
		RemoteAddress string `json:"remoteAddress"`
		RemotePort    int    `json:"remotePort"`
		State         string `json:"state"`
	}] `json:"tcpConnections"`
	Profiles many[struct {
		User     string `json:"user"`
		Path     string `json:"path"`
		LastUsed string `json:"lastUsed"`
	}] `json:"profiles"`
	AppliedGPO many[struct {
		Name      string `json:"name"`
		SOM       string `json:"som"`
		AppliedAt string `json:"appliedAt"`
	}] `json:"appliedGpo"`
	DiskQuotas many[struct {
		Volume       string  `json:"volume"`
		Domain       string  `json:"domain"`
		User         string  `json:"user"`
		Limit        float64 `json:"limit"`
		WarningLimit float64 `json:"warningLimit"`
		Used         float64 `json:"used"`
		Status       int     `json:"status"`
	}] `json:"diskQuotas"`
	UpdateSettings *struct {
		WUServer                string `json:"wuServer"`
		UseWUServer             *int   `json:"useWUServer"`
		NoAutoUpdate            *int   `json:"noAutoUpdate"`
		AUOptions               *int   `json:"auOptions"`
		DeferQualityUpdates     *int   `json:"deferQualityUpdates"`
		DeferQualityUpdatesDays *int   `json:"deferQualityUpdatesDays"`
		DeferFeatureUpdates     *int   `json:"deferFeatureUpdates"`
		DeferFeatureUpdatesDays *int   `json:"deferFeatureUpdatesDays"`
		ActiveHoursStart        *int   `json:"activeHoursStart"`
		ActiveHoursEnd          *int   `json:"activeHoursEnd"`
		LastSearch              string `json:"lastSearch"`
		LastInstall             string `json:"lastInstall"`
	} `json:"updateSettings"`
}

// smbiosMemoryTypes names SMBIOS memory types (Win32_PhysicalMemory
// SMBIOSMemoryType).
var smbiosMemoryTypes = map[int]string{
	3: "DRAM", 18: "DDR", 19: "DDR2", 20: "DDR", 21: "DDR2", 24: "DDR3", 26: "DDR4", 27: "LPDDR", 28: "LPDDR2",
	29: "LPDDR3", 30: "LPDDR4", 34: "DDR5", 35: "LPDDR5",
}

// windowsHardwareDatasets gives the datasets of windowsHardware. A part the
// output lacks (an older script) gives an empty dataset, but
// windows-update-settings, a one-row dataset, is then left out.
func windowsHardwareDatasets(b []byte) (map[string][]map[string]any, error) {
	var w windowsHardware
	if err := json.Unmarshal(bytes.TrimSpace(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))), &w); err != nil {
		return nil, fmt.Errorf("windows hardware: %w", err)
	}
	out := map[string][]map[string]any{}
	add := func(name string, row map[string]any) { out[name] = append(out[name], row) }
	for _, name := range []string{datasetPhysicalMemory, datasetMotherboards, datasetSCSIControllers, datasetPrinters, datasetSharedFolders,
		datasetWindowsDrivers, datasetBitLocker, datasetDiskPartitions, datasetDiskVolumes, datasetNetworkConnections,
		datasetAppliedGPO, datasetDiskQuotas, datasetProfiles} {
		out[name] = []map[string]any{}
	}
	for _, m := range w.PhysicalMemory {
		typ := smbiosMemoryTypes[m.SMBIOSMemoryType]
		if typ == "" {
			typ = "Unknown"
		}
		var speed any
		if m.Speed != nil && *m.Speed > 0 {
			speed = *m.Speed
		}
		add(datasetPhysicalMemory, map[string]any{"slot": m.Slot, "capacityGB": round1(m.Capacity / (1 << 30)), "speedMHz": speed,
			"memoryType": typ, "manufacturer": strings.TrimSpace(m.Manufacturer), "partNumber": nullIfEmpty(m.PartNumber)})
	}
	for _, m := range w.BaseBoard {
		serial := strings.TrimSpace(m.SerialNumber)
		if serial == "None" || serial == "Default string" || serial == "To be filled by O.E.M." {
			serial = ""
		}
		add(datasetMotherboards, map[string]any{"manufacturer": m.Manufacturer, "product": m.Product, "serialNumber": nullIfEmpty(serial), "version": m.Version})
	}
	for _, c := range w.StorageControllers {
		add(datasetSCSIControllers, map[string]any{"name": c.Name, "manufacturer": c.Manufacturer, "driver": c.Service})
	}
	for _, p := range w.Printers {
		add(datasetPrinters, map[string]any{"name": p.Name, "driver": p.Driver, "port": p.Port, "isDefault": p.IsDefault, "isShared": p.IsShared, "isNetwork": p.IsNetwork})
	}
	for _, s := range w.Shares {
		add(datasetSharedFolders, map[string]any{"name": s.Name, "path": nullIfEmpty(s.Path), "description": nullIfEmpty(s.Description), "type": windowsShareType(s.Type)})
	}
	for _, d := range w.Drivers {
		add(datasetWindowsDrivers, map[string]any{"deviceName": d.DeviceName, "deviceClass": d.DeviceClass, "manufacturer": d.Manufacturer,
			"driverVersion": d.DriverVersion, "driverDate": nullIfEmpty(d.DriverDate), "infName": d.InfName, "signed": d.Signed})
	}
	for _, v := range w.BitLocker {
		add(datasetBitLocker, bitLockerRow(v.MountPoint, v.ProtectionStatus, v.EncryptionMethod, v.EncryptionPercentage, func() (types []string, recoveryID string) {
			for _, k := range v.KeyProtectors {
				t := k.Type
				if t == "RecoveryPassword" {
					t, recoveryID = "NumericalPassword", k.ID // WMI's name, the contract's
				}
				types = append(types, t)
			}
			return types, recoveryID
		}))
	}
	for _, p := range w.Partitions {
		add(datasetDiskPartitions, map[string]any{"disk": p.Disk, "partition": p.Partition, "type": windowsPartitionType(p.Type, p.GptType),
			"sizeGB": round1(p.Size / (1 << 30)), "bootable": p.IsSystem || p.IsActive})
	}
	for _, v := range w.Volumes {
		var mount any
		if v.DriveLetter != "" {
			mount = v.DriveLetter + `:\`
		}
		add(datasetDiskVolumes, map[string]any{"device": strings.TrimSuffix(v.Path, `\`), "mountPoint": mount, "label": v.Label,
			"fileSystem": v.FileSystem, "sizeGB": round1(v.Size / (1 << 30)), "freeGB": round1(v.SizeRemaining / (1 << 30))})
	}
	for _, c := range w.TCPConnections {
		row := map[string]any{"process": c.Process, "protocol": "tcp", "localAddress": c.LocalAddress, "localPort": c.LocalPort,
			"remoteAddress": nil, "remotePort": nil, "remoteHost": nil, "state": strings.ToUpper(c.State)}
		if !strings.EqualFold(c.State, "Listen") {
			row["remoteAddress"], row["remotePort"] = c.RemoteAddress, c.RemotePort
		}
		add(datasetNetworkConnections, row)
	}
	// The size of a profile would take a walk of its folder, too slow for
	// every inventory of a computer with many profiles: it is null.
	for _, p := range w.Profiles {
		add(datasetProfiles, map[string]any{"user": p.User, "path": p.Path, "sizeMB": nil, "lastUsedAt": nullIfEmpty(p.LastUsed)})
	}
	for _, g := range w.AppliedGPO {
		if g.Name == "" {
			continue
		}
		add(datasetAppliedGPO, map[string]any{"name": g.Name, "scope": "Computer", "linkLocation": canonicalSOM(g.SOM), "appliedAt": nullIfEmpty(g.AppliedAt)})
	}
	for _, q := range w.DiskQuotas {
		user := q.User
		if q.Domain != "" {
			user = q.Domain + `\` + q.User
		}
		add(datasetDiskQuotas, map[string]any{"volume": q.Volume, "user": user, "limitMB": quotaMB(q.Limit), "warningMB": quotaMB(q.WarningLimit),
			"usedMB": round1(q.Used / (1 << 20)), "status": map[int]string{0: "Ok", 1: "Warning", 2: "Limit exceeded"}[q.Status]})
	}
	if u := w.UpdateSettings; u != nil {
		add(datasetWindowsUpdateSettings, windowsUpdateSettingsRow(u.WUServer, u.UseWUServer, u.NoAutoUpdate, u.AUOptions, u.DeferQualityUpdates,
			u.DeferQualityUpdatesDays, u.DeferFeatureUpdates, u.DeferFeatureUpdatesDays, u.ActiveHoursStart, u.ActiveHoursEnd, u.LastSearch, u.LastInstall))
	}
	return out, nil
}

// bitLockerRow is one row of the bitlocker dataset. The recovery password
// is never read: sending BitLocker recovery keys off the computer is a
// decision for the administrator, not a side effect of inventory.
func bitLockerRow(drive, status, method string, percent float64, protectors func() ([]string, string)) map[string]any {
	types, recoveryID := protectors()
	var m any
	if method != "" && method != "None" {
		m = method
	}
	return map[string]any{"drive": drive, "protectionStatus": status, "encryptionMethod": m, "encryptionPercent": int(math.Round(percent)),
		"keyProtectors": nullIfEmpty(strings.Join(types, ", ")), "recoveryKeyId": nullIfEmpty(recoveryID), "recoveryPassword": nil}
}

// windowsShareType maps Win32_Share.Type: 0 disk, 1 print queue, 2 device,
// 3 IPC, plus 0x80000000 for the administrative (hidden, special) shares.
func windowsShareType(t int64) string {
	base := t &^ 0x80000000
	switch {
	case base == 3:
		return "IPC"
	case t&0x80000000 != 0:
		return "Special"
	case base == 1:
		return "Print Queue"
	case base == 2:
		return "Device"
	}
	return "Disk"
}

// gptTypes names the GPT partition types Windows uses, as Disk Management
// and Win32_DiskPartition name them.
var gptTypes = map[string]string{
	"{c12a7328-f81f-11d2-ba4b-00a0c93ec93b}": "GPT: System",
	"{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}": "GPT: Basic Data",
	"{e3c9e316-0b5c-4db8-817d-f92df00215ae}": "GPT: Reserved",
	"{de94bba4-06d1-4d40-a16a-bfd50179d6ac}": "GPT: Recovery",
}

// windowsPartitionType names a partition by its GPT type, or on an MBR
// disk by Get-Partition's Type (IFS, FAT32, Extended…).
func windowsPartitionType(typ, gpt string) string {
	if gpt != "" {
		if n, ok := gptTypes[strings.ToLower(gpt)]; ok {
			return n
		}
		return "GPT: Unknown"
	}
	return "MBR: " + typ
}

// windowsAUOptions names the AUOptions policy values ("Configure Automatic
// Updates").
var windowsAUOptions = map[int]string{
	2: "Notify for download and auto install", 3: "Auto download and notify for install",
	4: "Auto download and schedule the install", 5: "Allow local admin to choose setting",
	7: "Auto download, notify to install, notify to restart",
}

// windowsUpdateSettingsRow reads the Windows Update policy: WSUS when
// UseWUServer points at a server, Windows Update for Business when a
// deferral policy is set, Windows Update otherwise. Unset active hours and
// times are null.
func windowsUpdateSettingsRow(wuServer string, useWUServer, noAutoUpdate, auOptions, deferQ, deferQDays, deferF, deferFDays, start, end *int, lastSearch, lastInstall string) map[string]any {
	one := func(p *int) bool { return p != nil && *p == 1 }
	val := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	source := "Windows Update"
	switch {
	case one(useWUServer) && wuServer != "":
		source = "WSUS"
	case one(deferQ) || one(deferF) || val(deferQDays) > 0 || val(deferFDays) > 0:
		source = "Windows Update for Business"
	}
	auto := "Not configured"
	if one(noAutoUpdate) {
		auto = "Disabled"
	} else if auOptions != nil {
		auto = windowsAUOptions[*auOptions]
		if auto == "" {
			auto = fmt.Sprintf("AUOptions %d", *auOptions)
		}
	}
	hour := func(p *int) any {
		if p == nil {
			return nil
		}
		return *p
	}
	var wsus any
	if source == "WSUS" {
		wsus = wuServer
	}
	return map[string]any{"updateSource": source, "wsusServer": wsus, "automaticUpdates": auto, "activeHoursStart": hour(start), "activeHoursEnd": hour(end),
		"deferQualityUpdatesDays": val(deferQDays), "deferFeatureUpdatesDays": val(deferFDays), "lastSearchAt": nullIfEmpty(lastSearch), "lastInstallAt": nullIfEmpty(lastInstall)}
}

// quotaMB is a quota in MiB; "no limit" (2^64-1, or -1) is null.
func quotaMB(bytes float64) any {
	if bytes < 0 || bytes >= 1<<63 {
		return nil
	}
	return round1(bytes / (1 << 20))
}

// canonicalSOM turns the distinguished name of a scope of management into
// the canonical name Group Policy tools show: DC=corp,DC=example,DC=com
// with OU=Workstations,OU=BER becomes corp.example.com/BER/Workstations; a
// site (CN=…,CN=Sites,…) is its name; "Local" stays.
func canonicalSOM(dn string) string {
	var domain, path []string
	parts := strings.Split(dn, ",")
	if len(parts) > 2 && strings.EqualFold(strings.TrimSpace(parts[1]), "CN=Sites") {
		_, site, _ := strings.Cut(parts[0], "=")
		return site
	}
	for _, p := range parts {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			return dn
		}
		if strings.EqualFold(k, "DC") {
			domain = append(domain, v)
		} else {
			path = append([]string{v}, path...)
		}
	}
	if len(domain) == 0 {
		return dn
	}
	return strings.Join(append([]string{strings.Join(domain, ".")}, path...), "/")
}
