package agentdist

import (
	_ "embed"
	"fmt"
	"net"
	"net/url"
	"strings"
)

//go:embed scripts/install.sh
var installSh string

//go:embed scripts/install.ps1
var installPs1 string

// InstallScript is install.sh with server baked in.
func InstallScript(server string) string { return strings.ReplaceAll(installSh, "@SERVER@", server) }

// InstallPowerShell is install.ps1 with server baked in.
func InstallPowerShell(server string) string {
	return strings.ReplaceAll(installPs1, "@SERVER@", server)
}

// CheckServerURL refuses a base URL the installers cannot carry: it must
// be an http(s) address without quotes, blanks or shell syntax.
func CheckServerURL(server string) error {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base URL %q is not an http(s) address", server)
	}
	if strings.ContainsAny(server, "'\"`$\\ \t\r\n;&|<>(){}") {
		return fmt.Errorf("base URL %q holds characters a shell line cannot carry", server)
	}
	return nil
}

// Installers are the lines an administrator pastes on a computer to
// install and enroll the agent, and the links behind them.
type Installers struct {
	// Token is what the agent is given: the token, and ".<pin>" when the
	// server's CA is pinned.
	Token string `json:"agentToken"`
	// Pinned: the lines check the server's CA against the pin.
	Pinned bool `json:"pinned"`
	// Linux is the one-line installer for Linux and macOS (POSIX sh).
	Linux string `json:"installLinux"`
	// MacOS is the same line (install.sh serves both).
	MacOS string `json:"installMacOS"`
	// Windows is the PowerShell line, run as administrator.
	Windows string `json:"installWindows"`
	// Downloads maps "os/arch" to the agent's download address.
	Downloads map[string]string `json:"downloads"`
	// Packages maps "deb/amd64", "rpm/arm64", "msi/amd64"… to the package's address.
	Packages map[string]string `json:"packages"`
	// Loopback warns that agents on other computers cannot reach the server.
	Loopback string `json:"warning,omitempty"`
}

// PackageTypes are the package formats with the architectures built.
var PackageTypes = []struct{ Type, OS string }{{"deb", "linux"}, {"rpm", "linux"}, {"msi", "windows"}}

// InstallersFor builds the lines for server and token. pin is the
// lowercase hex SHA-256 of the server's CA certificate (DER), or "" when
// the server's certificate is publicly trusted (or it speaks http).
//
// With a pin the Linux line first fetches the CA without verification and
// goes on only when its hash is the pin; install.sh itself is then fetched
// with that CA (curl --cacert), and install.sh checks the pin again for its
// own downloads: nothing that runs came over a channel an attacker could
// have answered. The PowerShell line installs a certificate check that
// accepts a server only when the pinned CA is in its chain.
func InstallersFor(server, token, pin string) Installers {
	server = strings.TrimRight(server, "/")
	in := Installers{Token: token, Downloads: map[string]string{}, Packages: map[string]string{}}
	if pin != "" {
		in.Token, in.Pinned = token+"."+pin, true
	}
	tok := shellQuote(in.Token)
	if in.Pinned {
		in.Linux = `f=$(mktemp) && curl -fsSLk -o "$f" ` + server + `/agent/v1/ca.pem && ` +
			`[ "$(sed '/-----/d' "$f" | tr -d '\r\n' | base64 --decode | (sha256sum 2>/dev/null || shasum -a 256) | cut -c1-64)" = ` + pin + ` ] && ` +
			`curl -fsSL --cacert "$f" ` + server + `/install.sh | sudo sh -s -- --token ` + tok
		in.Windows = `powershell -NoProfile -ExecutionPolicy Bypass -Command "[Net.ServicePointManager]::SecurityProtocol='Tls12'; ` +
			`[Net.ServicePointManager]::ServerCertificateValidationCallback={param($s,$c,$ch,$e) $h=[Security.Cryptography.SHA256]::Create(); ` +
			`@($ch.ChainElements | Where-Object { (-join ($h.ComputeHash($_.Certificate.RawData) | ForEach-Object { $_.ToString('x2') })) -eq '` + pin + `' }).Count -gt 0}; ` +
			`& ([scriptblock]::Create((Invoke-RestMethod '` + server + `/install.ps1'))) -Token '` + in.Token + `'"`
	} else {
		in.Linux = `curl -fsSL ` + server + `/install.sh | sudo sh -s -- --token ` + tok
		in.Windows = `powershell -NoProfile -ExecutionPolicy Bypass -Command "[Net.ServicePointManager]::SecurityProtocol='Tls12'; ` +
			`& ([scriptblock]::Create((Invoke-RestMethod '` + server + `/install.ps1'))) -Token '` + in.Token + `'"`
	}
	in.MacOS = in.Linux
	for _, p := range Platforms {
		in.Downloads[p.String()] = server + "/agent/v1/download/" + p.String()
	}
	for _, t := range PackageTypes {
		for _, arch := range []string{"amd64", "arm64"} {
			in.Packages[t.Type+"/"+arch] = server + "/agent/v1/package/" + t.Type + "/" + arch
		}
	}
	if IsLoopback(server) {
		in.Loopback = "the server address " + server + " is this computer's loopback: agents on other computers cannot reach it; start patchd serve with --base-url set to an address they can reach"
	}
	return in
}

// IsLoopback tells whether server's host is a loopback name or address.
func IsLoopback(server string) bool {
	u, err := url.Parse(server)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// shellQuote quotes s for a POSIX shell when it holds anything but the
// characters of a token.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
