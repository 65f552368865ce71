package execute

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/patchd/patchd/agent/collect"
	"github.com/patchd/patchd/agentproto"
)

// DeployUpdates installs exactly the updates of the payload with the
// system's own tools: apt or dnf on Linux; the Windows Update Agent (by KB
// or update id) and winget (by id) on Windows; softwareupdate on macOS.
func (e *Executor) DeployUpdates(ctx context.Context, p agentproto.DeployUpdatesPayload) Outcome {
	if len(p.Updates) == 0 {
		return failed("Nothing to install: the command lists no update.")
	}
	var o Outcome
	switch e.goos() {
	case "windows":
		o = e.deployWindowsUpdates(ctx, p.Updates)
	case "darwin":
		o = e.deployMacUpdates(ctx, p.Updates)
	default:
		o = e.deployLinuxUpdates(ctx, p.Updates)
	}
	o.InventoryChanged = true
	return o
}

func (e *Executor) deployLinuxUpdates(ctx context.Context, ups []agentproto.DeployUpdate) Outcome {
	var t transcript
	var pkgs []string
	for _, u := range ups {
		if u.PackageName == nil || *u.PackageName == "" {
			t.printf("Skipped %q: it names no package.", u.Title)
			continue
		}
		pkgs = append(pkgs, *u.PackageName)
	}
	if len(pkgs) == 0 {
		return failed(t.b.String() + "Nothing to install: none of the updates is a package of this computer.")
	}
	switch pm := e.packageManager(); pm {
	case "apt":
		e.refreshLists(ctx, &t, pm)
		// The marker option (apt ignores a key it does not know) goes
		// into apt's history with the command line: the installed-updates
		// collector tells patchd's deployments by it.
		args := append([]string{"install", "-y", "-q", "--only-upgrade", "-o", collect.AptDeployMarker}, aptOptions...)
		e.run(ctx, &t, Cmd{Path: "apt-get", Args: append(args, pkgs...), Env: aptEnv, Timeout: installTimeout})
	case "dnf", "yum":
		e.refreshLists(ctx, &t, pm)
		e.run(ctx, &t, Cmd{Path: pm, Args: append([]string{"upgrade", "-y"}, pkgs...), Timeout: installTimeout})
	default:
		return failed("No supported package manager (apt, dnf, yum) found on this computer.")
	}
	return t.outcome()
}

// refreshLists brings the package manager's lists up to date before an
// installation: a fresh container has no apt lists at all ("no
// installation candidate"), and a mirror drops superseded versions, so
// the candidate seen at collection time may be gone. apt downloads them
// (apt-get update); dnf and yum mark their cached metadata expired, so
// that the install right after fetches it anew. A failed refresh is
// reported and the installation still tried with the lists at hand.
func (e *Executor) refreshLists(ctx context.Context, t *transcript, pm string) {
	var c Cmd
	switch pm {
	case "apt":
		c = Cmd{Path: "apt-get", Args: []string{"update", "-q"}, Env: aptEnv, Timeout: installTimeout}
	case "dnf", "yum":
		c = Cmd{Path: pm, Args: []string{"clean", "expire-cache"}, Timeout: installTimeout}
	default:
		return
	}
	if _, ok := e.run(ctx, t, c); !ok {
		t.failed = false
		t.printf("The package lists could not be refreshed; installing from the lists at hand.")
	}
}

func (e *Executor) deployWindowsUpdates(ctx context.Context, ups []agentproto.DeployUpdate) Outcome {
	var t transcript
	var kbs, ids []string
	var winget []string
	for _, u := range ups {
		switch {
		case u.WingetID != nil && *u.WingetID != "":
			winget = append(winget, *u.WingetID)
		case u.KB != nil && *u.KB != "" || u.ProductKey != nil && *u.ProductKey != "":
			if u.KB != nil && *u.KB != "" {
				kbs = append(kbs, *u.KB)
			}
			if u.ProductKey != nil && *u.ProductKey != "" {
				ids = append(ids, *u.ProductKey)
			}
		default:
			t.printf("Skipped %q: it has neither KB, update id nor winget id.", u.Title)
		}
	}
	if len(kbs)+len(ids)+len(winget) == 0 {
		return failed(t.b.String() + "Nothing to install on this computer.")
	}
	var o Outcome
	if len(kbs)+len(ids) > 0 {
		c := e.powerShellCmd(WindowsUpdateInstallScript)
		c.Env = []string{"PATCHD_KBS=" + strings.Join(kbs, ","), "PATCHD_UPDATE_IDS=" + strings.Join(ids, ",")}
		c.Timeout = installTimeout
		t.printf("Installing with Windows Update: %s", strings.Join(append(append([]string{}, kbs...), ids...), ", "))
		res, err := e.Runner.Run(ctx, c)
		switch {
		case err != nil:
			t.printf("Could not start PowerShell: %v", err)
			t.failed = true
		case res.TimedOut:
			t.printf("Windows Update did not finish within %s.", installTimeout)
			t.failed = true
		default:
			r, perr := parseWUInstall([]byte(res.Output))
			if perr != nil {
				t.printf("%s", strings.TrimSpace(res.Output))
				t.printf("Windows Update failed: %v", perr)
				t.failed = true
				break
			}
			t.printf("%s", r.summary())
			if !r.ok() {
				t.failed = true
			}
			o.RebootPending = r.RebootRequired
		}
	}
	for _, id := range winget {
		e.run(ctx, &t, Cmd{Path: e.winget(), Args: []string{"upgrade", "--id", id, "--exact", "--silent",
			"--accept-package-agreements", "--accept-source-agreements", "--disable-interactivity"}, Timeout: installTimeout},
			0, wingetNoApplicableUpgrade)
	}
	out := t.outcome()
	out.RebootPending = o.RebootPending
	return out
}

// wingetNoApplicableUpgrade is winget's exit code when the package is
// already at its newest version: the goal is reached.
// On Windows an exit code is a uint32, which Go reports as int(code).
var wingetNoApplicableUpgrade = exitCodeOf(0x8A15002B)

func exitCodeOf(code uint32) int { return int(code) }

func (e *Executor) powerShellCmd(script string) Cmd {
	return Cmd{Path: e.powershell(), Args: []string{"-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-EncodedCommand", collect.EncodePowerShell(script)}}
}

// wuInstall is what WindowsUpdateInstallScript prints.
type wuInstall struct {
	Found          int  `json:"found"`
	ResultCode     *int `json:"resultCode"`
	RebootRequired bool `json:"rebootRequired"`
	Updates        []struct {
		Title      string `json:"title"`
		ResultCode int    `json:"resultCode"`
		HResult    int64  `json:"hresult"`
	} `json:"updates"`
}

func parseWUInstall(b []byte) (wuInstall, error) {
	var r wuInstall
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:] // the JSON is the last line; warnings may precede it
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("unreadable answer: %w", err)
	}
	return r, nil
}

var wuResult = map[int]string{0: "not started", 1: "in progress", 2: "succeeded", 3: "succeeded with errors", 4: "failed", 5: "aborted"}

func (r wuInstall) ok() bool {
	if r.Found == 0 || r.ResultCode == nil {
		return false
	}
	return *r.ResultCode == 2 || *r.ResultCode == 3 && r.allSucceeded()
}

func (r wuInstall) allSucceeded() bool {
	for _, u := range r.Updates {
		if u.ResultCode != 2 {
			return false
		}
	}
	return true
}

func (r wuInstall) summary() string {
	if r.Found == 0 {
		return "Windows Update found none of these updates to install (already installed, hidden or superseded)."
	}
	var b strings.Builder
	for _, u := range r.Updates {
		fmt.Fprintf(&b, "%s: %s", u.Title, wuResult[u.ResultCode])
		if u.HResult != 0 {
			fmt.Fprintf(&b, " (0x%08X)", uint32(u.HResult))
		}
		b.WriteByte('\n')
	}
	if r.RebootRequired {
		b.WriteString("A restart is required to finish the installation.\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func (e *Executor) deployMacUpdates(ctx context.Context, ups []agentproto.DeployUpdate) Outcome {
	var t transcript
	var labels []string
	var listed []macListed
	for _, u := range ups {
		if u.ProductKey != nil && *u.ProductKey != "" {
			labels = append(labels, *u.ProductKey)
			continue
		}
		// Without a label, find it by title in softwareupdate's list.
		if listed == nil {
			res, err := e.Runner.Run(ctx, Cmd{Path: "softwareupdate", Args: []string{"--list"}, Timeout: installTimeout})
			if err != nil {
				return failed(fmt.Sprintf("softwareupdate --list could not run: %v", err))
			}
			listed = parseMacList(res.Output)
		}
		label := ""
		for _, l := range listed {
			if l.title == u.Title || l.title+" "+l.version == u.Title {
				label = l.label
			}
		}
		if label == "" {
			t.printf("Skipped %q: softwareupdate does not offer it any more.", u.Title)
			continue
		}
		labels = append(labels, label)
	}
	if len(labels) == 0 {
		return failed(t.b.String() + "Nothing to install on this computer.")
	}
	res, _ := e.run(ctx, &t, Cmd{Path: "softwareupdate", Args: append([]string{"--install", "--agree-to-license"}, labels...), Timeout: installTimeout})
	o := t.outcome()
	o.RebootPending = strings.Contains(strings.ToLower(res.Output), "restart")
	return o
}

type macListed struct{ label, title, version string }

// parseMacList reads the labels, titles and versions of softwareupdate
// --list (the agent/collect parser reads the same for the inventory).
func parseMacList(out string) []macListed {
	var list []macListed
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if label, ok := strings.CutPrefix(t, "* Label: "); ok {
			list = append(list, macListed{label: strings.TrimSpace(label)})
			continue
		}
		if len(list) == 0 || !strings.HasPrefix(t, "Title: ") {
			continue
		}
		for _, part := range strings.Split(t, ", ") {
			k, v, _ := strings.Cut(part, ": ")
			switch k {
			case "Title":
				list[len(list)-1].title = v
			case "Version":
				list[len(list)-1].version = v
			}
		}
	}
	return list
}

// WindowsUpdateInstallScript installs the updates whose KB (PATCHD_KBS)
// or update id (PATCHD_UPDATE_IDS) is listed, through the Windows Update
// Agent, and prints one JSON line with each update's result code.
const WindowsUpdateInstallScript = `
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
[Console]::OutputEncoding = [Text.Encoding]::UTF8
$kbs = @($env:PATCHD_KBS -split ',' | Where-Object { $_ } | ForEach-Object { $_.Trim().ToUpper().Replace('KB', '') })
$ids = @($env:PATCHD_UPDATE_IDS -split ',' | Where-Object { $_ } | ForEach-Object { $_.Trim().ToLower() })
$session = New-Object -ComObject Microsoft.Update.Session
$session.ClientApplicationID = 'patchd-agent'
$result = $session.CreateUpdateSearcher().Search('IsInstalled=0 and IsHidden=0')
$todo = New-Object -ComObject Microsoft.Update.UpdateColl
foreach ($u in $result.Updates) {
  $match = $ids -contains $u.Identity.UpdateID.ToLower()
  foreach ($kb in $u.KBArticleIDs) { if ($kbs -contains $kb) { $match = $true } }
  if ($match) {
    if (-not $u.EulaAccepted) { $u.AcceptEula() }
    [void]$todo.Add($u)
  }
}
$out = [ordered]@{ found = $todo.Count; resultCode = $null; rebootRequired = $false; updates = @() }
if ($todo.Count -gt 0) {
  $downloader = $session.CreateUpdateDownloader()
  $downloader.Updates = $todo
  [void]$downloader.Download()
  $installer = $session.CreateUpdateInstaller()
  $installer.Updates = $todo
  $r = $installer.Install()
  $out.resultCode = [int]$r.ResultCode
  $out.rebootRequired = [bool]$r.RebootRequired
  $out.updates = @(for ($i = 0; $i -lt $todo.Count; $i++) {
    $ur = $r.GetUpdateResult($i)
    [ordered]@{ title = $todo.Item($i).Title; resultCode = [int]$ur.ResultCode; hresult = [int64]$ur.HResult }
  })
}
ConvertTo-Json -InputObject $out -Depth 4 -Compress
`

// refreshTimeout bounds one refresh of the package metadata.
const refreshTimeout = 15 * time.Minute

// RefreshCmd is the command that refreshes the package metadata of the
// package manager pm before a scan: apt-get update; dnf makecache
// --refresh (yum makecache). ok is false for other managers: Windows Update
// and softwareupdate search online whenever the inventory is collected.
func RefreshCmd(pm string) (Cmd, bool) {
	switch pm {
	case "apt":
		return Cmd{Path: "apt-get", Args: []string{"update", "-q"}, Env: aptEnv, Timeout: refreshTimeout}, true
	case "dnf":
		return Cmd{Path: "dnf", Args: []string{"makecache", "--refresh", "-q"}, Timeout: refreshTimeout}, true
	case "yum":
		return Cmd{Path: "yum", Args: []string{"makecache", "-q"}, Timeout: refreshTimeout}, true
	}
	return Cmd{}, false
}

// RefreshPackageLists refreshes the package metadata the inventory's
// missing updates are read from (a scan): on Linux through the package
// manager (RefreshCmd); on Windows and macOS there is nothing to do, the
// inventory's Windows Update search and softwareupdate --list are online.
// It answers what ran ("" when nothing) and an error when it failed.
func (e *Executor) RefreshPackageLists(ctx context.Context) (string, error) {
	if e.goos() == "windows" || e.goos() == "darwin" {
		return "", nil
	}
	c, ok := RefreshCmd(e.packageManager())
	if !ok {
		return "", nil
	}
	res, err := e.Runner.Run(ctx, c)
	switch {
	case err != nil:
		return c.String(), fmt.Errorf("refresh package lists: %w", err)
	case res.TimedOut:
		return c.String(), fmt.Errorf("refresh package lists: %s timed out after %s", c, c.Timeout)
	case res.ExitCode != 0:
		return c.String(), fmt.Errorf("refresh package lists: %s: exit code %d: %s", c, res.ExitCode, lastLines(res.Output, 5))
	}
	return c.String(), nil
}

// lastLines is the end of a command's output for an error message.
func lastLines(out string, n int) string {
	ls := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}
