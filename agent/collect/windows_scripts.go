package collect

import (
	"encoding/base64"
	"unicode/utf16"
)

// PowerShell scripts of the Windows collectors. They are kept here, in a
// platform-independent file, so that the parsers and their tests see the
// exact field names the scripts emit. Each writes one JSON document on
// standard output; dates are converted to ISO 8601 UTC in the script
// because Windows PowerShell 5.1 serializes DateTime as "/Date(ms)/".

// WindowsInventoryScript gathers the system, disks, software, antivirus,
// pending-reboot state and the datasets in one PowerShell run.
const WindowsInventoryScript = `
$ErrorActionPreference = 'SilentlyContinue'
$ProgressPreference = 'SilentlyContinue'
[Console]::OutputEncoding = [Text.Encoding]::UTF8
function Iso($d) { if ($d) { $d.ToUniversalTime().ToString('yyyy-MM-ddTHH:mm:ssZ') } else { $null } }
$os = Get-CimInstance Win32_OperatingSystem
$cs = Get-CimInstance Win32_ComputerSystem
$bios = Get-CimInstance Win32_BIOS
$cv = Get-ItemProperty 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'
$sw = foreach ($p in @('HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Uninstall\*',
                      'HKLM:\SOFTWARE\WOW6432Node\Microsoft\Windows\CurrentVersion\Uninstall\*',
                      'Registry::HKEY_USERS\*\Software\Microsoft\Windows\CurrentVersion\Uninstall\*')) {
  Get-ItemProperty $p | Where-Object { $_.DisplayName -and $_.SystemComponent -ne 1 -and -not $_.ParentKeyName -and $_.ReleaseType -notin @('Update','Hotfix','Security Update') } | ForEach-Object {
    $for = 'all users'
    if ($_.PSPath -match 'HKEY_USERS\\([^\\]+)\\') {
      $sid = $Matches[1]
      try { $for = (New-Object System.Security.Principal.SecurityIdentifier($sid)).Translate([System.Security.Principal.NTAccount]).Value } catch { $for = $sid }
    }
    [ordered]@{ name = $_.DisplayName; version = $_.DisplayVersion; publisher = $_.Publisher; installDate = $_.InstallDate
      windowsInstaller = ($_.WindowsInstaller -eq 1); keyName = $_.PSChildName; installedFor = $for
      uninstallString = $_.UninstallString; quietUninstallString = $_.QuietUninstallString }
  }
}
# Monitors: the preferred mode of each (its native resolution) and how it
# is connected (internal panels: LVDS 6, embedded DisplayPort 11, embedded
# UDI 13, or the 0x80000000 internal flag).
$modes = @{}
Get-CimInstance -Namespace root/wmi -ClassName WmiMonitorListedSupportedSourceModes | ForEach-Object {
  $m = @($_.MonitorSourceModes)[$_.PreferredMonitorSourceModeIndex]
  if ($m) { $modes[$_.InstanceName] = "$($m.HorizontalActivePixels)x$($m.VerticalActivePixels)" } }
$links = @{}
Get-CimInstance -Namespace root/wmi -ClassName WmiMonitorConnectionParams | ForEach-Object { $links[$_.InstanceName] = $_.VideoOutputTechnology }
# Update history: the Windows Update Agent's record of successful
# installations (its Date is UTC already), newest 1000.
$history = @()
try {
  $searcher = (New-Object -ComObject Microsoft.Update.Session).CreateUpdateSearcher()
  $n = $searcher.GetTotalHistoryCount()
  if ($n -gt 0) {
    $history = @($searcher.QueryHistory(0, [Math]::Min($n, 1000)) | Where-Object { $_.Operation -eq 1 -and ($_.ResultCode -eq 2 -or $_.ResultCode -eq 3) } | ForEach-Object {
      [ordered]@{ title = $_.Title; date = $_.Date.ToString('yyyy-MM-ddTHH:mm:ssZ'); clientApplicationId = $_.ClientApplicationID; updateId = $_.UpdateIdentity.UpdateID } })
  }
} catch { }
# Windows Update policy (Group Policy or MDM), the user's settings, and the
# agent's last search and installation (UTC dates).
$wu = Get-ItemProperty 'HKLM:\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate'
$au = Get-ItemProperty 'HKLM:\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU'
$ux = Get-ItemProperty 'HKLM:\SOFTWARE\Microsoft\WindowsUpdate\UX\Settings'
$results = $null
try { $results = (New-Object -ComObject Microsoft.Update.AutoUpdate).Results } catch { }
# Applied computer GPOs: the links RSoP logging recorded at the last policy
# refresh, in the order they applied.
$gpos = @()
try {
  $ns = 'root/rsop/computer'
  $gpoNames = @{}
  Get-CimInstance -Namespace $ns -ClassName RSOP_GPO | ForEach-Object { $gpoNames[$_.id] = $_.name }
  $rsopAt = (Get-CimInstance -Namespace $ns -ClassName RSOP_Session).creationTime
  $gpos = @(Get-CimInstance -Namespace $ns -ClassName RSOP_GPLink | Where-Object { $_.appliedOrder -gt 0 } | Sort-Object appliedOrder | ForEach-Object {
    [ordered]@{ name = $gpoNames[$_.GPO.id]; som = $_.SOM.id; appliedAt = (Iso $rsopAt) } })
} catch { }
# NTFS quota entries, read only where a volume tracks or enforces quotas.
$quotas = @()
if (@(Get-CimInstance Win32_QuotaSetting | Where-Object { $_.State -gt 0 }).Count -gt 0) {
  $quotas = @(Get-CimInstance Win32_DiskQuota | ForEach-Object { [ordered]@{ volume = $_.QuotaVolume.DeviceID; domain = $_.User.Domain; user = $_.User.Name
    limit = [double]$_.Limit; warningLimit = [double]$_.WarningLimit; used = [double]$_.DiskSpaceUsed; status = $_.Status } })
}
$procNames = @{}
Get-Process | ForEach-Object { $procNames[[int]$_.Id] = $(if ($_.Id -le 4) { $_.ProcessName } else { $_.ProcessName + '.exe' }) }
$out = [ordered]@{
  os = [ordered]@{ caption = $os.Caption; version = $os.Version; buildNumber = $os.BuildNumber; ubr = $cv.UBR
    displayVersion = $cv.DisplayVersion; installationType = $cv.InstallationType; productType = $os.ProductType; osArchitecture = $os.OSArchitecture
    installDate = (Iso $os.InstallDate); lastBootUpTime = (Iso $os.LastBootUpTime); totalVisibleMemoryKB = $os.TotalVisibleMemorySize }
  computerSystem = [ordered]@{ name = $cs.DNSHostName; domain = $cs.Domain; partOfDomain = $cs.PartOfDomain
    manufacturer = $cs.Manufacturer; model = $cs.Model; totalPhysicalMemory = $cs.TotalPhysicalMemory; userName = $cs.UserName }
  bios = [ordered]@{ manufacturer = $bios.Manufacturer; version = $bios.SMBIOSBIOSVersion; serialNumber = $bios.SerialNumber; releaseDate = (Iso $bios.ReleaseDate)
    uefi = ($env:firmware_type -eq 'UEFI'); secureBoot = [bool](Confirm-SecureBootUEFI) }
  processors = @(Get-CimInstance Win32_Processor | ForEach-Object { [ordered]@{ name = $_.Name; manufacturer = $_.Manufacturer; cores = $_.NumberOfCores; logicalProcessors = $_.NumberOfLogicalProcessors; maxClockMHz = $_.MaxClockSpeed; socket = $_.SocketDesignation } })
  logicalDisks = @(Get-CimInstance Win32_LogicalDisk -Filter 'DriveType=3' | ForEach-Object { [ordered]@{ deviceId = $_.DeviceID; fileSystem = $_.FileSystem; volumeName = $_.VolumeName; size = $_.Size; freeSpace = $_.FreeSpace } })
  networkAdapters = @(Get-CimInstance Win32_NetworkAdapterConfiguration -Filter 'IPEnabled=True' | ForEach-Object { $a = Get-CimInstance Win32_NetworkAdapter -Filter "Index=$($_.Index)"; [ordered]@{ description = $_.Description; macAddress = $_.MACAddress; ipAddress = @($_.IPAddress); ipSubnet = @($_.IPSubnet); defaultGateway = @($_.DefaultIPGateway); dnsServers = @($_.DNSServerSearchOrder); dhcpEnabled = $_.DHCPEnabled; dnsDomain = $_.DNSDomain; mtu = $_.MTU; connectionId = $a.NetConnectionID; speed = $a.Speed; netConnectionStatus = $a.NetConnectionStatus } })
  software = @($sw)
  antivirus = @(Get-CimInstance -Namespace root/SecurityCenter2 -ClassName AntiVirusProduct | ForEach-Object { [ordered]@{ displayName = $_.displayName; productState = $_.productState } })
  pendingReboot = [ordered]@{
    componentBasedServicing = (Test-Path 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending')
    windowsUpdate = (Test-Path 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired')
    pendingFileRename = ($null -ne (Get-ItemProperty 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager').PendingFileRenameOperations) }
  timeZone = (Get-TimeZone).Id
  services = @(Get-CimInstance Win32_Service | ForEach-Object { [ordered]@{ name = $_.Name; displayName = $_.DisplayName; state = $_.State; startMode = $_.StartMode; account = $_.StartName } })
  processes = @(Get-Process -IncludeUserName | ForEach-Object { [ordered]@{ pid = $_.Id; name = $_.ProcessName; user = $_.UserName; workingSet = $_.WorkingSet64; cpuSeconds = $_.CPU; startTime = (Iso $_.StartTime); path = $_.Path } })
  localUsers = @(Get-LocalUser | ForEach-Object { [ordered]@{ name = $_.Name; fullName = $_.FullName; enabled = $_.Enabled; description = $_.Description; lastLogon = (Iso $_.LastLogon); passwordLastSet = (Iso $_.PasswordLastSet) } })
  localGroups = @(Get-LocalGroup | ForEach-Object { [ordered]@{ name = $_.Name; description = $_.Description; sid = $_.SID.Value } })
  localAdministrators = @(Get-LocalGroupMember -SID 'S-1-5-32-544' | ForEach-Object { [ordered]@{ name = $_.Name; objectClass = $_.ObjectClass; source = [string]$_.PrincipalSource } })
  startupItems = @(Get-CimInstance Win32_StartupCommand | ForEach-Object { [ordered]@{ name = $_.Name; command = $_.Command; location = $_.Location; user = $_.User } })
  routes = @(Get-NetRoute | ForEach-Object { [ordered]@{ destination = $_.DestinationPrefix; gateway = $_.NextHop; interface = $_.InterfaceAlias; metric = $_.RouteMetric; family = [string]$_.AddressFamily } })
  soundDevices = @(Get-CimInstance Win32_SoundDevice | ForEach-Object { [ordered]@{ name = $_.Name; manufacturer = $_.Manufacturer; status = $_.Status } })
  monitors = @(Get-CimInstance -Namespace root/wmi -ClassName WmiMonitorID | ForEach-Object { [ordered]@{ instanceName = $_.InstanceName; manufacturerName = @($_.ManufacturerName); userFriendlyName = @($_.UserFriendlyName); serialNumberId = @($_.SerialNumberID); productCodeId = @($_.ProductCodeID); yearOfManufacture = $_.YearOfManufacture; resolution = $modes[$_.InstanceName]; videoOutputTechnology = $links[$_.InstanceName] } })
  usbDevices = @(Get-CimInstance Win32_PnPEntity -Filter "PNPDeviceID LIKE 'USB\\%'" | ForEach-Object { [ordered]@{ name = $_.Name; manufacturer = $_.Manufacturer; pnpClass = $_.PNPClass; deviceId = $_.PNPDeviceID; service = $_.Service; status = $_.Status } })
  usbDisks = @(Get-CimInstance Win32_DiskDrive -Filter "InterfaceType='USB'" | ForEach-Object { [ordered]@{ model = $_.Model; pnpDeviceId = $_.PNPDeviceID } })
  physicalMemory = @(Get-CimInstance Win32_PhysicalMemory | ForEach-Object { [ordered]@{ slot = $_.DeviceLocator; capacity = $_.Capacity; speed = $_.ConfiguredClockSpeed; smbiosMemoryType = $_.SMBIOSMemoryType; manufacturer = $_.Manufacturer; partNumber = $_.PartNumber } })
  baseBoard = @(Get-CimInstance Win32_BaseBoard | ForEach-Object { [ordered]@{ manufacturer = $_.Manufacturer; product = $_.Product; serialNumber = $_.SerialNumber; version = $_.Version } })
  storageControllers = @(Get-CimInstance Win32_PnPEntity -Filter "PNPClass='SCSIAdapter' OR PNPClass='HDC'" | ForEach-Object { [ordered]@{ name = $_.Name; manufacturer = $_.Manufacturer; service = $_.Service } })
  printers = @(Get-CimInstance Win32_Printer | ForEach-Object { [ordered]@{ name = $_.Name; driver = $_.DriverName; port = $_.PortName; isDefault = $_.Default; isShared = $_.Shared; isNetwork = $_.Network } })
  shares = @(Get-CimInstance Win32_Share | ForEach-Object { [ordered]@{ name = $_.Name; path = $_.Path; description = $_.Description; type = [int64]$_.Type } })
  drivers = @(Get-CimInstance Win32_PnPSignedDriver | Where-Object { $_.DeviceName -and $_.DriverVersion } | ForEach-Object { [ordered]@{ deviceName = $_.DeviceName; deviceClass = $_.DeviceClass; manufacturer = $_.Manufacturer; driverVersion = $_.DriverVersion; driverDate = $(if ($_.DriverDate) { $_.DriverDate.ToString('yyyy-MM-dd') }); infName = $_.InfName; signed = $_.IsSigned } })
  bitLocker = @(Get-BitLockerVolume | Where-Object { [string]$_.VolumeType -ne 'Removable' } | ForEach-Object { [ordered]@{ mountPoint = $_.MountPoint; protectionStatus = [string]$_.ProtectionStatus; encryptionMethod = [string]$_.EncryptionMethod; encryptionPercentage = $_.EncryptionPercentage; keyProtectors = @($_.KeyProtector | ForEach-Object { [ordered]@{ type = [string]$_.KeyProtectorType; id = $_.KeyProtectorId } }) } })
  partitions = @(Get-Partition | ForEach-Object { [ordered]@{ disk = $_.DiskNumber; partition = $_.PartitionNumber; type = [string]$_.Type; gptType = $_.GptType; size = $_.Size; isSystem = $_.IsSystem; isActive = $_.IsActive } })
  volumes = @(Get-Volume | ForEach-Object { [ordered]@{ path = $_.Path; driveLetter = [string]$_.DriveLetter; label = $_.FileSystemLabel; fileSystem = $_.FileSystem; size = $_.Size; sizeRemaining = $_.SizeRemaining } })
  tcpConnections = @(Get-NetTCPConnection -State Established,Listen | ForEach-Object { [ordered]@{ process = $procNames[[int]$_.OwningProcess]; localAddress = $_.LocalAddress; localPort = $_.LocalPort; remoteAddress = $_.RemoteAddress; remotePort = $_.RemotePort; state = [string]$_.State } })
  profiles = @(Get-CimInstance Win32_UserProfile | Where-Object { -not $_.Special -and $_.LocalPath } | ForEach-Object {
    $account = $_.SID
    try { $account = (New-Object System.Security.Principal.SecurityIdentifier($_.SID)).Translate([System.Security.Principal.NTAccount]).Value } catch { }
    [ordered]@{ user = $account; path = $_.LocalPath; lastUsed = (Iso $_.LastUseTime) } })
  appliedGpo = $gpos
  diskQuotas = $quotas
  updateSettings = [ordered]@{ wuServer = $wu.WUServer; useWUServer = $au.UseWUServer; noAutoUpdate = $au.NoAutoUpdate; auOptions = $au.AUOptions
    deferQualityUpdates = $wu.DeferQualityUpdates; deferQualityUpdatesDays = $wu.DeferQualityUpdatesPeriodInDays; deferFeatureUpdates = $wu.DeferFeatureUpdates; deferFeatureUpdatesDays = $wu.DeferFeatureUpdatesPeriodInDays
    activeHoursStart = $ux.ActiveHoursStart; activeHoursEnd = $ux.ActiveHoursEnd
    lastSearch = $(if ($results) { $results.LastSearchSuccessDate.ToString('yyyy-MM-ddTHH:mm:ssZ') }); lastInstall = $(if ($results) { $results.LastInstallationSuccessDate.ToString('yyyy-MM-ddTHH:mm:ssZ') }) }
  hotFixes = @(Get-HotFix | ForEach-Object { [ordered]@{ kb = $_.HotFixID; description = $_.Description; installedOn = (Iso $_.InstalledOn); installedBy = $_.InstalledBy } })
  updateHistory = $history
  loggedOnUsers = @(Get-CimInstance Win32_Process -Filter "Name='explorer.exe'" | ForEach-Object { $o = Invoke-CimMethod -InputObject $_ -MethodName GetOwner; if ($o.User) { [ordered]@{ user = $o.Domain + '\' + $o.User; logonAt = (Iso $_.CreationDate); sessionId = $_.SessionId } } } | Sort-Object { $_.user } -Unique)
}
ConvertTo-Json -InputObject $out -Depth 5 -Compress
`

// WindowsUpdateSearchScript asks the Windows Update Agent for the updates
// that are neither installed nor hidden.
const WindowsUpdateSearchScript = `
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
[Console]::OutputEncoding = [Text.Encoding]::UTF8
$session = New-Object -ComObject Microsoft.Update.Session
$session.ClientApplicationID = 'patchd-agent'
$result = $session.CreateUpdateSearcher().Search('IsInstalled=0 and IsHidden=0')
$list = foreach ($u in $result.Updates) {
  $released = $null
  if ($u.LastDeploymentChangeTime) { $released = $u.LastDeploymentChangeTime.ToUniversalTime().ToString('yyyy-MM-ddTHH:mm:ssZ') }
  [ordered]@{ title = $u.Title; updateId = $u.Identity.UpdateID; kbArticleIds = @($u.KBArticleIDs); msrcSeverity = $u.MsrcSeverity
    categories = @($u.Categories | ForEach-Object { $_.Name }); rebootBehavior = $u.InstallationBehavior.RebootBehavior
    autoSelectOnWebSites = $u.AutoSelectOnWebSites; browseOnly = $u.BrowseOnly; type = $u.Type; releaseDate = $released }
}
ConvertTo-Json -InputObject @($list) -Depth 4 -Compress
`

// WindowsActivityScript reads the Security and event logs: logons at the
// console, over RDP and with cached credentials (4624 and failed 4625,
// logon types 2, 10, 11) of the last 14 days, newest 5000, and a summary of
// the problem events of the last 24 hours (System and Application
// critical, error and warning events, Security audit failures), counted
// per log and level in the script (at most 50000 events a query). It runs
// apart from the inventory script: a busy Security log takes time to read.
const WindowsActivityScript = `
$ErrorActionPreference = 'SilentlyContinue'
$ProgressPreference = 'SilentlyContinue'
[Console]::OutputEncoding = [Text.Encoding]::UTF8
function Iso($d) { if ($d) { $d.ToUniversalTime().ToString('yyyy-MM-ddTHH:mm:ssZ') } else { $null } }
$xpath = "*[System[(EventID=4624 or EventID=4625) and TimeCreated[timediff(@SystemTime) <= 1209600000]]] and *[EventData[Data[@Name='LogonType']='2' or Data[@Name='LogonType']='10' or Data[@Name='LogonType']='11']]"
$logons = @(Get-WinEvent -LogName Security -FilterXPath $xpath -MaxEvents 5000 | ForEach-Object {
  $d = @{}
  foreach ($x in ([xml]$_.ToXml()).Event.EventData.Data) { $d[$x.Name] = $x.'#text' }
  [ordered]@{ id = $_.Id; at = (Iso $_.TimeCreated); user = $d['TargetUserName']; domain = $d['TargetDomainName']; logonType = $d['LogonType'] } })
$day = (Get-Date).AddDays(-1)
$queries = @(@{ LogName = 'System'; Level = 1,2,3; StartTime = $day }, @{ LogName = 'Application'; Level = 1,2,3; StartTime = $day },
             @{ LogName = 'Security'; Keywords = 4503599627370496; StartTime = $day })
$summary = @(foreach ($q in $queries) {
  $events = @(Get-WinEvent -FilterHashtable $q -MaxEvents 50000)
  foreach ($g in ($events | Group-Object Level)) {
    $top = $g.Group | Group-Object ProviderName | Sort-Object Count -Descending | Select-Object -First 1
    [ordered]@{ log = $q.LogName; level = [int]$g.Name; auditFailure = $q.ContainsKey('Keywords'); count = $g.Count
      last = (Iso $g.Group[0].TimeCreated); topSource = $top.Name }
  } })
ConvertTo-Json -InputObject ([ordered]@{ logons = $logons; eventSummary = $summary }) -Depth 4 -Compress
`

// EncodePowerShell encodes a script for -EncodedCommand.
func EncodePowerShell(script string) string {
	u := utf16.Encode([]rune(script))
	b := make([]byte, 2*len(u))
	for i, r := range u {
		b[2*i] = byte(r)
		b[2*i+1] = byte(r >> 8)
	}
	return base64.StdEncoding.EncodeToString(b)
}
