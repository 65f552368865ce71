package collect

// datasetKeys are the row keys of every dataset, as sim/DATASETS.md (the
// contract the report catalog reads) lists them. TestDatasetKeysFollowContract
// holds this table and that page together.
var datasetKeys = map[string][]string{
	"services":                {"name", "displayName", "state", "startMode", "account"},
	"processes":               {"name", "pid", "user", "memoryMB", "cpuPercent", "path"},
	"network-adapters":        {"name", "description", "macAddress", "ipAddress", "subnetMask", "gateway", "dnsServers", "dhcpEnabled", "speedMbps", "status"},
	"routing-tables":          {"destination", "netmask", "gateway", "interface", "metric"},
	"network-connections":     {"process", "protocol", "localAddress", "localPort", "remoteAddress", "remotePort", "remoteHost", "state"},
	"local-users":             {"name", "fullName", "enabled", "lastLogonAt", "passwordLastSetAt", "description"},
	"local-groups":            {"name", "description", "members"},
	"local-administrators":    {"account", "type", "source"},
	"logged-on-users":         {"user", "sessionType", "logonAt", "clientAddress"},
	"logon-history":           {"user", "logonType", "logonAt", "success"},
	"profiles":                {"user", "path", "sizeMB", "lastUsedAt"},
	"time-zone":               {"timeZone", "ianaName", "utcOffset", "daylightSaving"},
	"environment-variables":   {"name", "value", "scope"},
	"startup-items":           {"name", "command", "location", "user"},
	"logical-disks":           {"drive", "driveType", "fileSystem", "volumeName", "sizeGB", "freeGB"},
	"disk-partitions":         {"disk", "partition", "type", "sizeGB", "bootable"},
	"disk-volumes":            {"device", "mountPoint", "label", "fileSystem", "sizeGB", "freeGB"},
	"bitlocker":               {"drive", "protectionStatus", "encryptionMethod", "encryptionPercent", "keyProtectors", "recoveryKeyId", "recoveryPassword"},
	"disk-encryption":         {"volume", "method", "encrypted", "status"},
	"firmware":                {"vendor", "version", "releaseDate", "mode", "secureBoot"},
	"boot-configuration":      {"entry", "description", "device", "path", "isDefault"},
	"processors":              {"name", "manufacturer", "cores", "logicalProcessors", "maxClockMHz", "socket", "architecture"},
	"physical-memory":         {"slot", "capacityGB", "speedMHz", "memoryType", "manufacturer", "partNumber"},
	"motherboards":            {"manufacturer", "product", "serialNumber", "version"},
	"monitors":                {"name", "manufacturer", "serialNumber", "resolution", "manufactureYear"},
	"printers":                {"name", "driver", "port", "isDefault", "isShared", "isNetwork"},
	"sound-devices":           {"name", "manufacturer", "status"},
	"scsi-controllers":        {"name", "manufacturer", "driver"},
	"usb-devices":             {"name", "manufacturer", "vendorId", "productId", "deviceClass", "serialNumber"},
	"windows-drivers":         {"deviceName", "deviceClass", "manufacturer", "driverVersion", "driverDate", "infName", "signed"},
	"shared-folders":          {"name", "path", "description", "type"},
	"applied-gpo":             {"name", "scope", "linkLocation", "appliedAt"},
	"windows-update-settings": {"updateSource", "wsusServer", "automaticUpdates", "activeHoursStart", "activeHoursEnd", "deferQualityUpdatesDays", "deferFeatureUpdatesDays", "lastSearchAt", "lastInstallAt"},
	"installed-updates":       {"kb", "title", "type", "installedAt", "installedBy"},
	"event-log-summary":       {"log", "level", "count", "lastEventAt", "topSource"},
	"os-information":          {"name", "edition", "version", "build", "kernel", "architecture", "installDate", "lastBootAt", "locale"},
	"disk-quotas":             {"volume", "user", "limitMB", "warningMB", "usedMB", "status"},
}

// conform gives every row of a known dataset exactly the keys of the
// contract: a key a collector could not fill is null, a key the contract
// does not list is left out (and named in the returned list, once, so the
// caller can log the drift). Rows of an unknown dataset pass unchanged.
func conform(name string, rows []map[string]any) ([]map[string]any, []string) {
	keys, ok := datasetKeys[name]
	if !ok {
		return rows, nil
	}
	var extra []string
	seenExtra := map[string]bool{}
	out := make([]map[string]any, len(rows))
	for i, row := range rows {
		r := make(map[string]any, len(keys))
		for _, k := range keys {
			r[k] = row[k]
		}
		for k := range row {
			if _, known := r[k]; !known && !seenExtra[k] {
				seenExtra[k] = true
				extra = append(extra, k)
			}
		}
		out[i] = r
	}
	return out, extra
}

// Names of the datasets agentproto has no constant for.
const (
	datasetProcessors            = "processors"
	datasetMotherboards          = "motherboards"
	datasetProfiles              = "profiles"
	datasetNetworkConnections    = "network-connections"
	datasetDiskPartitions        = "disk-partitions"
	datasetDiskVolumes           = "disk-volumes"
	datasetDiskEncryption        = "disk-encryption"
	datasetBootConfiguration     = "boot-configuration"
	datasetSharedFolders         = "shared-folders"
	datasetPrinters              = "printers"
	datasetPhysicalMemory        = "physical-memory"
	datasetLogonHistory          = "logon-history"
	datasetEventLogSummary       = "event-log-summary"
	datasetInstalledUpdates      = "installed-updates"
	datasetMonitors              = "monitors"
	datasetUSBDevices            = "usb-devices"
	datasetSoundDevices          = "sound-devices"
	datasetSCSIControllers       = "scsi-controllers"
	datasetWindowsDrivers        = "windows-drivers"
	datasetBitLocker             = "bitlocker"
	datasetWindowsUpdateSettings = "windows-update-settings"
	datasetAppliedGPO            = "applied-gpo"
	datasetDiskQuotas            = "disk-quotas"
)
