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

// runLineSh is the end of every Linux line: $d/install.sh, downloaded,
// is run as root (through sudo only when not root already) with the token
// $3; its exit status is the line's.
const runLineSh = `if [ "$(id -u)" = 0 ]; then sh "$d/install.sh" --token "$3"; else sudo sh "$d/install.sh" --token "$3"; fi`

// tempDirSh makes the line's temporary folder $d, removed however the
// line ends.
const tempDirSh = `d=$(mktemp -d 2>/dev/null || mktemp -d -t patchd 2>/dev/null) || { echo "patchd install: cannot make a temporary folder" >&2; exit 1; }; ` +
	`c() { rm -rf "$d"; }; trap c EXIT; trap "exit 1" HUP INT TERM; `

// pinnedLineSh is the rest of the pinned Linux line, after install.sh's
// fetch and pin check: $1 is the server, $2 the pin, $3 the token.
const pinnedLineSh = tempDirSh +
	`pd_pinned_ca "$1" "$2" "$d" || exit 1; ` +
	`pd_fetch "$1/install.sh" "$d/install.sh" "$d/ca.pem" || { echo "patchd install: cannot fetch $1/install.sh over the pinned connection (curl or wget exit status $?)" >&2; exit 1; }; ` +
	runLineSh

// plainLineSh is the rest of the Linux line without a pin, after
// install.sh's fetch: $1 is the server, $3 the token ($2 is empty).
const plainLineSh = tempDirSh +
	`pd_fetch "$1/install.sh" "$d/install.sh" || { echo "patchd install: cannot fetch $1/install.sh (curl or wget exit status $?: 6 or 7 the server is not reachable, 22 it answered an error, 35 or 60 its TLS certificate is not trusted)" >&2; exit 1; }; ` +
	runLineSh

// fetchSh, pinCheckSh and pinCheckPs are install.sh's fetch and pin check
// and install.ps1's pin check made one line each, for the one-line
// installers.
var (
	shCont = func(l string) bool {
		for _, end := range []string{"{", "then", "else", "do", "|", "&&", "||", ";"} {
			if strings.HasSuffix(l, end) {
				return true
			}
		}
		return false
	}
	fetchSh    = oneLine(installSh, "fetch", "; ", "'", shCont)
	pinCheckSh = oneLine(installSh, "the pin check", "; ", "'", shCont)
	pinCheckPs = oneLine(installPs1, "the pin check", "; ", `"%`, func(l string) bool {
		return strings.HasSuffix(l, "{") || strings.HasSuffix(l, "(") || strings.HasSuffix(l, "|") || strings.HasSuffix(l, ",")
	})
)

// oneLine joins the lines of script's section (between the "# --- "
// marker line naming it and "# --- end of " section), leaving out
// comments and blank lines, by a blank after a line that continues
// (cont), and by sep after any other. A character of forbidden in them
// (what the line's quoting cannot carry), or a backslash ending a line,
// is a defect of the script, caught by every test.
func oneLine(script, section, sep, forbidden string, cont func(string) bool) string {
	start := "# --- " + strings.TrimPrefix(section, "the ")
	_, rest, ok := strings.Cut(script, start)
	body, _, ok2 := strings.Cut(rest, "# --- end of "+section)
	if !ok || !ok2 {
		panic("agentdist: an installer script lost its " + section + " markers")
	}
	var b strings.Builder
	for i, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(l)
		if i == 0 || l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			panic("agentdist: an installer's " + section + " continues a line with a backslash, which its one-line form cannot carry")
		}
		b.WriteString(l)
		if cont(l) {
			b.WriteString(" ")
		} else {
			b.WriteString(sep)
		}
	}
	line := strings.TrimSpace(b.String())
	if strings.ContainsAny(line, forbidden) {
		panic("agentdist: an installer's " + section + " holds a character its one-line form cannot carry: one of " + forbidden)
	}
	return line
}

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
// With a pin the Linux line runs install.sh's own pin check (the lines
// between its "pin check" markers) in a temporary folder: ca.pem is
// fetched without verification and kept only when it is exactly one
// certificate whose hash is the pin; install.sh is then downloaded to a
// file over a connection verified with that certificate alone (rewritten
// from the checked DER), and run (with sudo when not root) only when every
// step succeeded; install.sh checks the pin again for its own downloads.
// Without a pin the Linux line downloads install.sh (with curl, else
// wget) to a file in a temporary folder and runs it the same way. Any
// failure ends the line with one line saying why and a non-zero exit, and
// the folder is removed. The PowerShell line does the same with install.ps1's pin check:
// a server is accepted only when its chain is built up to the pinned
// certificate and it bears the server's name.
func InstallersFor(server, token, pin string) Installers {
	server = strings.TrimRight(server, "/")
	in := Installers{Token: token, Downloads: map[string]string{}, Packages: map[string]string{}}
	if pin != "" {
		in.Token, in.Pinned = token+"."+pin, true
	}
	tok := shellQuote(in.Token)
	if in.Pinned {
		in.Linux = "sh -c '" + fetchSh + " " + pinCheckSh + " " + pinnedLineSh + "' sh " + shellQuote(server) + " " + shellQuote(pin) + " " + tok
		in.Windows = `powershell -NoProfile -ExecutionPolicy Bypass -Command "$ErrorActionPreference='Stop'; [Net.ServicePointManager]::SecurityProtocol='Tls12'; ` +
			`try { ` + pinCheckPs + ` Set-PatchdPinnedTrust (Get-PatchdPinnedCA '` + server + `' '` + pin + `'); ` +
			`$s = Invoke-RestMethod '` + server + `/install.ps1'; & ([scriptblock]::Create($s)) -Token '` + in.Token + `' } ` +
			`catch { $m = $_.Exception.Message; if (-not $m.StartsWith('patchd install:')) { $m = 'patchd install: ' + $m }; [Console]::Error.WriteLine($m); exit 1 }"`
	} else {
		in.Linux = "sh -c '" + fetchSh + " " + plainLineSh + "' sh " + shellQuote(server) + " '' " + tok
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
