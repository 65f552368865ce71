package collect

import "testing"

func TestWindowsHardwareDatasets(t *testing.T) {
	ds, err := windowsHardwareDatasets(readTestdata(t, "windows-hardware.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "physical-memory", ds["physical-memory"], []map[string]any{
		{"slot": "DIMM A", "capacityGB": 16.0, "speedMHz": 3200, "memoryType": "DDR4", "manufacturer": "Samsung", "partNumber": "M471A2K43EB1-CWE"},
		{"slot": "DIMM B", "capacityGB": 16.0, "speedMHz": 3200, "memoryType": "DDR4", "manufacturer": "Samsung", "partNumber": "M471A2K43EB1-CWE"},
	})
	checkRows(t, "motherboards", ds["motherboards"], []map[string]any{
		{"manufacturer": "Dell Inc.", "product": "0KNXTM", "serialNumber": "/7Y2KPN3/CNFCW0023G00A1/", "version": "A00"},
	})
	checkRows(t, "scsi-controllers", ds["scsi-controllers"], []map[string]any{
		{"name": "Standard NVM Express Controller", "manufacturer": "Standard NVM Express Controller", "driver": "stornvme"},
		{"name": "Standard SATA AHCI Controller", "manufacturer": "Standard SATA AHCI Controller", "driver": "storahci"},
		{"name": "Microsoft Storage Spaces Controller", "manufacturer": "Microsoft", "driver": "spaceport"},
	})
	checkRows(t, "printers", ds["printers"], []map[string]any{
		{"name": "Microsoft Print to PDF", "driver": "Microsoft Print To PDF", "port": "PORTPROMPT:", "isDefault": false, "isShared": false, "isNetwork": false},
		{"name": `\\SRV-PRINT01\FollowMe`, "driver": "Xerox Global Print Driver PCL6", "port": `\\SRV-PRINT01\FollowMe`, "isDefault": true, "isShared": true, "isNetwork": true},
	})
	checkRows(t, "shared-folders", ds["shared-folders"], []map[string]any{
		{"name": "ADMIN$", "path": `C:\Windows`, "description": "Remote Admin", "type": "Special"},
		{"name": "C$", "path": `C:\`, "description": "Default share", "type": "Special"},
		{"name": "IPC$", "path": nil, "description": "Remote IPC", "type": "IPC"},
		{"name": "Scans", "path": `D:\Scans`, "description": nil, "type": "Disk"},
	})
	checkRows(t, "windows-drivers", ds["windows-drivers"], []map[string]any{
		{"deviceName": "Intel(R) Iris(R) Xe Graphics", "deviceClass": "DISPLAY", "manufacturer": "Intel Corporation", "driverVersion": "31.0.101.5590", "driverDate": "2024-05-16", "infName": "oem42.inf", "signed": true},
		{"deviceName": "Realtek Audio", "deviceClass": "MEDIA", "manufacturer": "Realtek Semiconductor Corp.", "driverVersion": "6.0.9549.1", "driverDate": "2023-07-14", "infName": "oem17.inf", "signed": true},
	})
	// The recovery password is never sent; its protector's id is.
	checkRows(t, "bitlocker", ds["bitlocker"], []map[string]any{
		{"drive": "C:", "protectionStatus": "On", "encryptionMethod": "XtsAes128", "encryptionPercent": 100, "keyProtectors": "Tpm, NumericalPassword",
			"recoveryKeyId": "{A1B2C3D4-E5F6-4789-ABCD-EF0123456789}", "recoveryPassword": nil},
		{"drive": "D:", "protectionStatus": "Off", "encryptionMethod": nil, "encryptionPercent": 0, "keyProtectors": nil, "recoveryKeyId": nil, "recoveryPassword": nil},
	})
	checkRows(t, "disk-partitions", ds["disk-partitions"], []map[string]any{
		{"disk": 0, "partition": 1, "type": "GPT: System", "sizeGB": 0.1, "bootable": true},
		{"disk": 0, "partition": 2, "type": "GPT: Reserved", "sizeGB": 0.0, "bootable": false},
		{"disk": 0, "partition": 3, "type": "GPT: Basic Data", "sizeGB": 475.7, "bootable": false},
		{"disk": 0, "partition": 4, "type": "GPT: Recovery", "sizeGB": 0.7, "bootable": false},
		{"disk": 1, "partition": 1, "type": "MBR: IFS", "sizeGB": 931.5, "bootable": true},
	})
	checkRows(t, "disk-volumes", ds["disk-volumes"], []map[string]any{
		{"device": `\\?\Volume{4c1b2a3d-0000-0000-0000-100000000000}`, "mountPoint": `C:\`, "label": "Windows", "fileSystem": "NTFS", "sizeGB": 475.7, "freeGB": 188.0},
		{"device": `\\?\Volume{4c1b2a3d-0000-0000-0000-500000000000}`, "mountPoint": nil, "label": "", "fileSystem": "FAT32", "sizeGB": 0.1, "freeGB": 0.1},
	})
	checkRows(t, "network-connections", ds["network-connections"], []map[string]any{
		{"process": "patchd-agent.exe", "protocol": "tcp", "localAddress": "10.20.16.57", "localPort": 51544, "remoteAddress": "10.20.0.10", "remotePort": 443, "remoteHost": nil, "state": "ESTABLISHED"},
		{"process": "svchost.exe", "protocol": "tcp", "localAddress": "0.0.0.0", "localPort": 135, "remoteAddress": nil, "remotePort": nil, "remoteHost": nil, "state": "LISTEN"},
		{"process": "System", "protocol": "tcp", "localAddress": "::", "localPort": 445, "remoteAddress": nil, "remotePort": nil, "remoteHost": nil, "state": "LISTEN"},
	})
	checkRows(t, "windows-update-settings", ds["windows-update-settings"], []map[string]any{
		{"updateSource": "Windows Update for Business", "wsusServer": nil, "automaticUpdates": "Auto download and schedule the install", "activeHoursStart": 8,
			"activeHoursEnd": 17, "deferQualityUpdatesDays": 7, "deferFeatureUpdatesDays": 180, "lastSearchAt": "2026-11-21T05:02:11Z", "lastInstallAt": "2026-11-13T03:21:09Z"},
	})
	checkRows(t, "applied-gpo", ds["applied-gpo"], []map[string]any{
		{"name": "Local Group Policy", "scope": "Computer", "linkLocation": "Local", "appliedAt": "2026-11-21T06:40:12Z"},
		{"name": "Default Domain Policy", "scope": "Computer", "linkLocation": "corp.example.com", "appliedAt": "2026-11-21T06:40:12Z"},
		{"name": "WKS - Windows Update for Business", "scope": "Computer", "linkLocation": "corp.example.com/BER/Workstations", "appliedAt": "2026-11-21T06:40:12Z"},
	})
	checkRows(t, "disk-quotas", ds["disk-quotas"], []map[string]any{
		{"volume": "D:", "user": `CORP\jsmith`, "limitMB": 5120.0, "warningMB": 4608.0, "usedMB": 4780.0, "status": "Warning"},
		// No limit: null.
		{"volume": "D:", "user": `BUILTIN\Administrators`, "limitMB": nil, "warningMB": nil, "usedMB": 100.0, "status": "Ok"},
	})
	// A deleted account keeps its SID; sizes are not measured.
	checkRows(t, "profiles", ds["profiles"], []map[string]any{
		{"user": `CORP\jsmith`, "path": `C:\Users\jsmith`, "sizeMB": nil, "lastUsedAt": "2026-11-21T07:58:12Z"},
		{"user": `WS-0142\LocalAdmin`, "path": `C:\Users\LocalAdmin`, "sizeMB": nil, "lastUsedAt": "2026-09-02T10:11:00Z"},
		{"user": "S-1-5-21-1004336348-1177238915-682003330-1107", "path": `C:\Users\olduser`, "sizeMB": nil, "lastUsedAt": nil},
	})
	if got := canonicalSOM("CN=Default-First-Site-Name,CN=Sites,CN=Configuration,DC=corp,DC=example,DC=com"); got != "Default-First-Site-Name" {
		t.Errorf("site: %s", got)
	}
	one := 1
	wsus := windowsUpdateSettingsRow("https://wsus.corp.example.com:8531", &one, nil, ptr(3), nil, nil, nil, nil, nil, nil, "", "")
	if wsus["updateSource"] != "WSUS" || wsus["wsusServer"] != "https://wsus.corp.example.com:8531" || wsus["automaticUpdates"] != "Auto download and notify for install" ||
		wsus["activeHoursStart"] != nil || wsus["lastSearchAt"] != nil {
		t.Errorf("wsus %v", wsus)
	}
	if plain := windowsUpdateSettingsRow("", nil, nil, nil, nil, nil, nil, nil, nil, nil, "", ""); plain["updateSource"] != "Windows Update" || plain["automaticUpdates"] != "Not configured" {
		t.Errorf("no policy %v", plain)
	}
}
