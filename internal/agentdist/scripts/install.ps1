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

# --- pin check (the one-line installer runs these lines too) ---
# No double quote and no percent sign in here (the line carries it inside
# cmd's double quotes), no comment after code: the line is these lines
# without comments, joined by a blank after a line ending in { ( | or ,
# and by "; " after any other (so } else { and } catch { stay on one line).

# Get-PatchdPinnedCA SERVER PIN: reads SERVER/agent/v1/ca.pem once without
# verification, on a connection of its own that is closed after the answer
# (no later request reuses it), and answers the certificate only when the
# text is, to the character, one certificate as patchd serves it (a BEGIN
# CERTIFICATE line, the base64 of its DER in lines of 64, an END
# CERTIFICATE line, LF endings) whose DER has the SHA-256 PIN; it throws
# otherwise.
function Get-PatchdPinnedCA([string]$Server, [string]$Pin) {
	$req = [Net.WebRequest]::Create($Server + '/agent/v1/ca.pem')
	$req.KeepAlive = $false
	$req.ConnectionGroupName = [Guid]::NewGuid().ToString()
	$req.ServerCertificateValidationCallback = { $true }
	$resp = $req.GetResponse()
	try {
		$text = (New-Object IO.StreamReader($resp.GetResponseStream())).ReadToEnd()
	} finally {
		$resp.Close()
	}
	return (ConvertFrom-PatchdCAPem $text $Pin)
}
# ConvertFrom-PatchdCAPem TEXT PIN: the certificate TEXT holds, when TEXT is
# exactly the PEM of one certificate with the SHA-256 PIN; throws otherwise.
function ConvertFrom-PatchdCAPem([string]$Text, [string]$Pin) {
	$lf = [string][char]10
	$der = $null
	try {
		$der = [Convert]::FromBase64String(($Text -creplace '(?m)^-----[^\n]*$', ''))
	} catch {
		$der = $null
	}
	$canonical = ''
	if ($null -ne $der -and $der.Length -gt 0) {
		$b64 = [Convert]::ToBase64String($der)
		$canonical = '-----BEGIN CERTIFICATE-----' + $lf
		for ($i = 0; $i -lt $b64.Length; $i += 64) {
			$canonical += $b64.Substring($i, [Math]::Min(64, $b64.Length - $i)) + $lf
		}
		$canonical += '-----END CERTIFICATE-----' + $lf
	}
	if ($canonical -eq '' -or -not $Text.Equals($canonical)) {
		throw 'the ca.pem the server sent is not exactly one certificate: someone may be intercepting; nothing was run or installed'
	}
	$sha = [Security.Cryptography.SHA256]::Create()
	$got = -join ($sha.ComputeHash($der) | ForEach-Object { $_.ToString('x2') })
	if ($got -ne $Pin) {
		throw ('the CA the server sent does not match the pin in the token (its SHA-256 is ' + $got + '): someone may be intercepting; nothing was run or installed')
	}
	return (New-Object Security.Cryptography.X509Certificates.X509Certificate2(,$der))
}
# New-PatchdCertCheck CA: the server certificate check that trusts CA
# alone: the certificate must bear the server's name, and the chain built
# from it (with the certificates the server sent, CA added, no other root
# trusted) must end in exactly CA with no error but CA's being no trusted
# root; or the server's certificate is CA itself. A chain merely holding
# CA somewhere is not enough.
function New-PatchdCertCheck($CA) {
	return {
		$cert = $args[1]
		$chain = $args[2]
		$policyErrors = [int]$args[3]
		if ($null -eq $cert -or ($policyErrors -band 3) -ne 0) {
			return $false
		}
		$leaf = New-Object Security.Cryptography.X509Certificates.X509Certificate2($cert)
		$want = [Convert]::ToBase64String($CA.RawData)
		if ([Convert]::ToBase64String($leaf.RawData) -eq $want) {
			return $true
		}
		$built = New-Object Security.Cryptography.X509Certificates.X509Chain
		$built.ChainPolicy.RevocationMode = [Security.Cryptography.X509Certificates.X509RevocationMode]::NoCheck
		$built.ChainPolicy.VerificationFlags = [Security.Cryptography.X509Certificates.X509VerificationFlags]::AllowUnknownCertificateAuthority
		[void]$built.ChainPolicy.ExtraStore.Add($CA)
		if ($null -ne $chain) {
			foreach ($el in $chain.ChainElements) {
				[void]$built.ChainPolicy.ExtraStore.Add($el.Certificate)
			}
		}
		[void]$built.Build($leaf)
		$n = $built.ChainElements.Count
		if ($n -lt 2 -or [Convert]::ToBase64String($built.ChainElements[$n - 1].Certificate.RawData) -ne $want) {
			return $false
		}
		foreach ($st in $built.ChainStatus) {
			if (([int]$st.Status -band (-bnot 32)) -ne 0) {
				return $false
			}
		}
		foreach ($el in $built.ChainElements) {
			foreach ($st in $el.ChainElementStatus) {
				if (([int]$st.Status -band (-bnot 32)) -ne 0) {
					return $false
				}
			}
		}
		return $true
	}.GetNewClosure()
}
# Set-PatchdPinnedTrust CA: every later HTTPS request of this process is
# checked by New-PatchdCertCheck CA.
function Set-PatchdPinnedTrust($CA) {
	[Net.ServicePointManager]::ServerCertificateValidationCallback = (New-PatchdCertCheck $CA)
}
# --- end of the pin check ---

# A token printed as <token>.<64 hex> pins the SHA-256 of the server's CA
# (DER): a server is accepted only when its chain ends in that certificate.
$pin = ''
if ($Token -match '\.([0-9a-f]{64})$') { $pin = $Matches[1] }
if ($pin -ne '') {
	if (-not $Server.StartsWith('https://')) { throw 'patchd install: a pinned token needs an https:// server' }
	$ca = $null
	try {
		$ca = Get-PatchdPinnedCA $Server $pin
	} catch {
		throw ('patchd install: ' + $_.Exception.Message)
	}
	Set-PatchdPinnedTrust $ca
	Write-Host 'patchd install: the server''s CA matches the token''s pin'
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
