# patchd agent installer for Windows, served by the patchd server at
# @SERVER@/install.ps1. It downloads the agent for this computer's
# architecture, checks its SHA-256, installs it to
# %ProgramFiles%\patchd\patchd-agent.exe, enrolls this computer and
# registers and starts the patchd-agent service. Running it again upgrades
# the agent in place and keeps the enrollment. Run from an elevated prompt:
#
#   powershell -NoProfile -ExecutionPolicy Bypass -Command "& ([scriptblock]::Create((irm '@SERVER@/install.ps1'))) -Token 'TOKEN'"
param(
	[string]$Token = '',
	[string]$Server = '@SERVER@',
	[string]$CaFile = '',
	[switch]$InsecureHttp,
	[string]$Proxy = '',
	[switch]$Reenroll
)
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
[Net.ServicePointManager]::SecurityProtocol = [Net.ServicePointManager]::SecurityProtocol -bor [Net.SecurityProtocolType]::Tls12
$Server = $Server.TrimEnd('/')
if ($Proxy -ne '') {
	# The downloads, the agent and (through patchd-agent install) its
	# service use the proxy.
	$env:HTTPS_PROXY = $Proxy; $env:HTTP_PROXY = $Proxy
	[Net.WebRequest]::DefaultWebProxy = New-Object Net.WebProxy($Proxy, $true)
}

$principal = New-Object Security.Principal.WindowsPrincipal([Security.Principal.WindowsIdentity]::GetCurrent())
if (-not $principal.IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)) {
	throw 'patchd install: run from an elevated (administrator) PowerShell'
}

# A token printed as <token>.<64 hex> pins the SHA-256 of the server's CA
# (DER): a server certificate is accepted only when its chain holds it.
$pin = ''
if ($Token -match '\.([0-9a-f]{64})$') { $pin = $Matches[1] }
if ($pin -ne '') {
	if (-not $Server.StartsWith('https://')) { throw 'patchd install: a pinned token needs an https:// server' }
	# A closure: the callback keeps $pin wherever it is called from.
	[Net.ServicePointManager]::ServerCertificateValidationCallback = {
		param($req, $cert, $chain, $policyErrors)
		$sha = [Security.Cryptography.SHA256]::Create()
		foreach ($el in $chain.ChainElements) {
			$hex = -join ($sha.ComputeHash($el.Certificate.RawData) | ForEach-Object { $_.ToString('x2') })
			if ($hex -eq $pin) { return $true }
		}
		return $false
	}.GetNewClosure()
}

$arch = if ($env:PROCESSOR_ARCHITEW6432) { $env:PROCESSOR_ARCHITEW6432 } else { $env:PROCESSOR_ARCHITECTURE }
switch ($arch) {
	'AMD64' { $goarch = 'amd64' }
	'ARM64' { $goarch = 'arm64' }
	default { throw "patchd install: unsupported architecture $arch" }
}
$url = "$Server/agent/v1/download/windows/$goarch"
$tmp = Join-Path ([IO.Path]::GetTempPath()) ("patchd-" + [Guid]::NewGuid())
New-Item -ItemType Directory -Path $tmp | Out-Null
try {
	$exe = Join-Path $tmp 'patchd-agent.exe'
	Write-Host "patchd install: downloading the agent for windows/$goarch from $Server"
	$want = ((Invoke-WebRequest -UseBasicParsing "$url.sha256").Content -split '\s+')[0]
	Invoke-WebRequest -UseBasicParsing $url -OutFile $exe
	$got = (Get-FileHash -Algorithm SHA256 $exe).Hash.ToLower()
	if ($got -ne $want) { throw "patchd install: the download's SHA-256 $got is not the server's $want; nothing was installed" }

	$state = Join-Path $env:ProgramData 'patchd-agent'
	if ((Test-Path (Join-Path $state 'state.json')) -and -not $Reenroll) {
		Write-Host "patchd install: already enrolled (state in $state): keeping the enrollment"
	} else {
		if ($Token -eq '') { throw 'patchd install: -Token is required to enroll this computer' }
		$enroll = @('enroll', '--server', $Server, '--token', $Token, '--state', $state)
		if ($CaFile -ne '') { $enroll += @('--ca-file', $CaFile) }
		if ($InsecureHttp) { $enroll += '--insecure-http' }
		& $exe @enroll
		if ($LASTEXITCODE -ne 0) { throw 'patchd install: enrollment failed; nothing was installed' }
	}
	# install stops a running service, copies the agent to Program Files,
	# and creates (or updates) and starts the service.
	& $exe install --state $state
	if ($LASTEXITCODE -ne 0) { throw 'patchd install: the service could not be installed' }
	Write-Host "patchd install: done: the patchd-agent service checks in with $Server"
} finally {
	Remove-Item -Recurse -Force $tmp -ErrorAction SilentlyContinue
}
