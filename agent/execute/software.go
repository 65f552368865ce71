package execute

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// MaxDownloadBytes caps an installer downloaded by DEPLOY_SOFTWARE.
const MaxDownloadBytes = 8 << 30

// msiexec exit codes that mean success: 3010 needs a restart to finish,
// 1641 started one.
const (
	msiRebootRequired  = 3010
	msiRebootInitiated = 1641
)

// DeploySoftware installs an application: a winget package on Windows, an
// OS package on Linux, or an installer downloaded from a URL and run with
// its arguments (.msi, .exe, .msix on Windows; .deb, .rpm, .sh on Linux;
// .pkg on macOS).
func (e *Executor) DeploySoftware(ctx context.Context, p agentproto.DeploySoftwarePayload) Outcome {
	var t transcript
	goos := e.goos()
	switch {
	case p.WingetID != "":
		if goos != "windows" {
			return failed(fmt.Sprintf("winget package %s can only be installed on Windows.", p.WingetID))
		}
		e.run(ctx, &t, Cmd{Path: e.winget(), Args: []string{"install", "--id", p.WingetID, "--exact", "--silent",
			"--accept-package-agreements", "--accept-source-agreements", "--disable-interactivity"}, Timeout: installTimeout})
	case p.PackageName != "":
		switch pm := e.packageManager(); {
		case goos != "linux":
			return failed(fmt.Sprintf("Package %s: OS packages are installed on Linux only.", p.PackageName))
		case pm == "apt":
			e.refreshLists(ctx, &t, pm)
			args := append([]string{"install", "-y", "-q"}, aptOptions...)
			e.run(ctx, &t, Cmd{Path: "apt-get", Args: append(args, p.PackageName), Env: aptEnv, Timeout: installTimeout})
		case pm == "dnf" || pm == "yum":
			e.refreshLists(ctx, &t, pm)
			e.run(ctx, &t, Cmd{Path: pm, Args: []string{"install", "-y", p.PackageName}, Timeout: installTimeout})
		default:
			return failed("No supported package manager (apt, dnf, yum) found on this computer.")
		}
	case p.URL != "":
		args, err := SplitArgs(p.Args)
		if err != nil {
			return failed(fmt.Sprintf("The installer arguments are not valid: %v", err))
		}
		dir, err := os.MkdirTemp(e.tempDir(), "download-")
		if err != nil {
			return failed(fmt.Sprintf("Could not create a download folder: %v", err))
		}
		defer os.RemoveAll(dir)
		file, err := e.download(ctx, p.URL, p.SHA256, dir)
		if err != nil {
			return failed(fmt.Sprintf("Download of %s failed: %v", p.URL, err))
		}
		t.printf("Downloaded %s", p.URL)
		c, okCodes, err := InstallerCmd(goos, file, args, e.packageManager())
		if err != nil {
			return failed(t.b.String() + err.Error())
		}
		if c.Path == "powershell.exe" {
			c.Path = e.powershell()
		}
		if pm := e.packageManager(); goos == "linux" && c.Path == packageManagerProgram(pm) {
			// The package's dependencies come from the lists.
			e.refreshLists(ctx, &t, pm)
		}
		c.Timeout = installTimeout
		c.Dir = dir
		res, ok := e.run(ctx, &t, c, okCodes...)
		o := t.outcome()
		o.InventoryChanged = true
		o.RebootPending = ok && res.ExitCode == msiRebootRequired
		return o
	default:
		return failed("The command names nothing to install (wingetId, packageName or url).")
	}
	o := t.outcome()
	o.InventoryChanged = true
	return o
}

// packageManagerProgram is the program of a Linux package manager.
func packageManagerProgram(pm string) string {
	if pm == "apt" {
		return "apt-get"
	}
	return pm
}

// InstallerCmd builds the command that runs a downloaded installer, by its
// extension, and the exit codes that mean success.
func InstallerCmd(goos, file string, args []string, pm string) (Cmd, []int, error) {
	ext := strings.ToLower(filepath.Ext(file))
	switch goos + ext {
	case "windows.msi":
		return Cmd{Path: "msiexec.exe", Args: append([]string{"/i", file, "/qn", "/norestart"}, args...)}, []int{0, msiRebootRequired, msiRebootInitiated}, nil
	case "windows.exe":
		return Cmd{Path: file, Args: args}, []int{0, msiRebootRequired, msiRebootInitiated}, nil
	case "windows.msix", "windows.msixbundle", "windows.appx", "windows.appxbundle":
		return Cmd{Path: "powershell.exe", Args: []string{"-NoProfile", "-NonInteractive", "-Command", "Add-AppxProvisionedPackage -Online -SkipLicense -PackagePath $env:PATCHD_PACKAGE"},
			Env: []string{"PATCHD_PACKAGE=" + file}}, nil, nil
	case "linux.deb":
		if pm != "apt" {
			return Cmd{Path: "dpkg", Args: append([]string{"-i"}, append(args, file)...)}, nil, nil
		}
		opts := append([]string{"install", "-y", "-q"}, aptOptions...)
		return Cmd{Path: "apt-get", Args: append(append(opts, args...), file), Env: aptEnv}, nil, nil
	case "linux.rpm":
		if pm == "" || pm == "apt" {
			return Cmd{Path: "rpm", Args: append([]string{"-Uvh"}, append(args, file)...)}, nil, nil
		}
		return Cmd{Path: pm, Args: append([]string{"install", "-y"}, append(args, file)...)}, nil, nil
	case "linux.sh", "darwin.sh":
		return Cmd{Path: "/bin/sh", Args: append([]string{file}, args...)}, nil, nil
	case "darwin.pkg":
		return Cmd{Path: "installer", Args: append([]string{"-pkg", file, "-target", "/"}, args...)}, nil, nil
	}
	return Cmd{}, nil, fmt.Errorf("installers of type %q are not supported on %s", ext, goos)
}

// download fetches url into dir, checking the SHA-256 when one is given.
// The file keeps the name of the URL's last path element (the extension
// picks the installer); a redirect's final URL is used when it names one.
func (e *Executor) download(ctx context.Context, rawURL, sum, dir string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("refused: installers are downloaded over https only (they run with the highest privileges); nothing was run")
	}
	client := e.HTTP
	if sb, err := url.Parse(e.ServerBase); err == nil && e.ServerHTTP != nil && strings.EqualFold(sb.Host, u.Host) {
		client = e.ServerHTTP
	}
	if client == nil {
		client = &http.Client{Timeout: time.Hour}
	}
	// A redirect may not leave https either.
	c := *client
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" {
			return fmt.Errorf("redirected to %s: installers are downloaded over https only", req.URL.Redacted())
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	client = &c
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %s", resp.Status)
	}
	name := safeFileName(path.Base(resp.Request.URL.Path))
	if filepath.Ext(name) == "" {
		name = safeFileName(path.Base(u.Path))
	}
	if name == "" || name == "." || name == "/" {
		name = "installer"
	}
	file := filepath.Join(dir, name)
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o700)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(resp.Body, MaxDownloadBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if n > MaxDownloadBytes {
		return "", fmt.Errorf("larger than %d bytes", int64(MaxDownloadBytes))
	}
	if sum != "" {
		if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, strings.TrimSpace(sum)) {
			return "", fmt.Errorf("SHA-256 mismatch: the file has %s, the command expects %s; the installer was not run", got, strings.ToLower(strings.TrimSpace(sum)))
		}
	}
	return file, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._+-]`)

func safeFileName(s string) string {
	s = unsafeName.ReplaceAllString(s, "_")
	return strings.TrimLeft(s, ".")
}

// SplitArgs splits an installer's argument string into words: blanks
// separate words, single and double quotes group them. A backslash
// escapes only a quote, a blank or another backslash after it; any other
// backslash stays, so that Windows paths (C:\Program Files\X) keep theirs.
func SplitArgs(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord := false
	var quote rune
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r == '\\' && quote != '\'' && i+1 < len(rs) {
			next := rs[i+1]
			if next == '"' || next == '\\' || (quote == 0 && (next == '\'' || next == ' ' || next == '\t')) {
				cur.WriteRune(next)
				inWord = true
				i++
				continue
			}
		}
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}

// UninstallSoftware removes an application by its name: the OS package on
// Linux; on Windows the MSI product (msiexec /x), the entry's quiet
// uninstall string, or winget; on macOS the application bundle.
func (e *Executor) UninstallSoftware(ctx context.Context, p agentproto.UninstallSoftwarePayload) Outcome {
	name := strings.TrimSpace(p.Name)
	if name == "" {
		return failed("The command names no application.")
	}
	var t transcript
	switch e.goos() {
	case "windows":
		return e.uninstallWindows(ctx, name)
	case "darwin":
		return e.uninstallMac(ctx, name)
	}
	switch pm := e.packageManager(); pm {
	case "apt":
		e.run(ctx, &t, Cmd{Path: "apt-get", Args: []string{"remove", "-y", "-q", name}, Env: aptEnv, Timeout: installTimeout})
	case "dnf", "yum":
		e.run(ctx, &t, Cmd{Path: pm, Args: []string{"remove", "-y", name}, Timeout: installTimeout})
	default:
		return failed("No supported package manager (apt, dnf, yum) found on this computer.")
	}
	o := t.outcome()
	o.InventoryChanged = true
	return o
}

// uninstallEntry is one Uninstall registry entry as WindowsUninstallLookup
// prints it.
type uninstallEntry struct {
	Name                 string `json:"name"`
	KeyName              string `json:"keyName"`
	WindowsInstaller     bool   `json:"windowsInstaller"`
	UninstallString      string `json:"uninstallString"`
	QuietUninstallString string `json:"quietUninstallString"`
}

var productCode = regexp.MustCompile(`^\{[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\}$`)

// WindowsUninstallCmd chooses how to remove one registry entry: msiexec
// for an MSI product, its quiet uninstall string as written, else winget
// by name (an interactive uninstaller would wait for a click forever).
func WindowsUninstallCmd(e uninstallEntry, winget string) (Cmd, []int) {
	ok := []int{0, msiRebootRequired, msiRebootInitiated}
	if productCode.MatchString(e.KeyName) && (e.WindowsInstaller || strings.Contains(strings.ToLower(e.UninstallString), "msiexec")) {
		return Cmd{Path: "msiexec.exe", Args: []string{"/x", e.KeyName, "/qn", "/norestart"}}, ok
	}
	if q := strings.TrimSpace(e.QuietUninstallString); q != "" {
		return Cmd{Path: "cmd.exe", RawCmdLine: `cmd.exe /d /s /c "` + q + `"`}, ok
	}
	return Cmd{Path: winget, Args: []string{"uninstall", "--name", e.Name, "--exact", "--silent",
		"--accept-source-agreements", "--disable-interactivity"}}, []int{0}
}

func (e *Executor) uninstallWindows(ctx context.Context, name string) Outcome {
	var t transcript
	c := e.powerShellCmd(WindowsUninstallLookupScript)
	c.Env = []string{"PATCHD_NAME=" + name}
	c.Timeout = 5 * time.Minute
	res, err := e.Runner.Run(ctx, c)
	if err != nil {
		return failed(fmt.Sprintf("Could not read the installed programs: %v", err))
	}
	var entries []uninstallEntry
	out := strings.TrimSpace(res.Output)
	if out != "" && out != "null" {
		if strings.HasPrefix(out, "{") {
			out = "[" + out + "]"
		}
		if err := json.Unmarshal([]byte(out), &entries); err != nil {
			return failed(fmt.Sprintf("Could not read the installed programs: %v", err))
		}
	}
	if len(entries) == 0 {
		return failed(fmt.Sprintf("%s is not installed on this computer.", name))
	}
	var pending bool
	seen := map[string]bool{}
	for _, en := range entries {
		if seen[en.KeyName] {
			continue
		}
		seen[en.KeyName] = true
		c, ok := WindowsUninstallCmd(en, e.winget())
		c.Timeout = installTimeout
		if r, done := e.run(ctx, &t, c, ok...); done && r.ExitCode == msiRebootRequired {
			pending = true
		}
	}
	o := t.outcome()
	o.InventoryChanged, o.RebootPending = true, pending
	return o
}

func (e *Executor) uninstallMac(ctx context.Context, name string) Outcome {
	var t transcript
	dirs := e.AppDirs
	if len(dirs) == 0 {
		dirs = []string{"/Applications"}
	}
	bundle := strings.TrimSuffix(name, ".app") + ".app"
	if strings.ContainsAny(bundle, "/\x00") || bundle == ".app" {
		return failed(fmt.Sprintf("%q is not an application name.", name))
	}
	found := false
	for _, d := range dirs {
		p := filepath.Join(d, bundle)
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			continue
		}
		found = true
		e.run(ctx, &t, Cmd{Path: "/bin/rm", Args: []string{"-rf", "--", p}, Timeout: 10 * time.Minute})
	}
	if !found {
		return failed(fmt.Sprintf("%s is not installed in %s.", bundle, strings.Join(dirs, ", ")))
	}
	o := t.outcome()
	o.InventoryChanged = true
	return o
}

// WindowsUninstallLookupScript prints the Uninstall registry entries
// (both registry views and every loaded user hive) whose display name is
// PATCHD_NAME, ignoring case.
const WindowsUninstallLookupScript = `
$ErrorActionPreference = 'SilentlyContinue'
[Console]::OutputEncoding = [Text.Encoding]::UTF8
$name = $env:PATCHD_NAME
$found = foreach ($p in @('HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Uninstall\*',
                         'HKLM:\SOFTWARE\WOW6432Node\Microsoft\Windows\CurrentVersion\Uninstall\*',
                         'Registry::HKEY_USERS\*\Software\Microsoft\Windows\CurrentVersion\Uninstall\*')) {
  Get-ItemProperty $p | Where-Object { $_.DisplayName -and $_.DisplayName.Trim() -eq $name } | ForEach-Object {
    [ordered]@{ name = $_.DisplayName; keyName = $_.PSChildName; windowsInstaller = ($_.WindowsInstaller -eq 1)
      uninstallString = [string]$_.UninstallString; quietUninstallString = [string]$_.QuietUninstallString }
  }
}
ConvertTo-Json -InputObject @($found) -Depth 3 -Compress
`
