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
$out = [ordered]@{
  os = [ordered]@{ caption = $os.Caption; version = $os.Version; buildNumber = $os.BuildNumber; ubr = $cv.UBR
    displayVersion = $cv.DisplayVersion; productType = $os.ProductType; osArchitecture = $os.OSArchitecture
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
