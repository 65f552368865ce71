//go:build windows

package collect

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"

	"github.com/patchd/patchd/agentproto"
)

func collectPlatform(ctx context.Context, c *collector) {
	c.do("system+software+datasets", func() error {
		out, err := PowerShell(ctx, 3*time.Minute, WindowsInventoryScript)
		if err != nil && len(out) == 0 {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		_, perr := parseWindowsInventory(out, &c.inv)
		return perr
	})
	c.do("logons+event-logs", func() error {
		out, err := PowerShell(ctx, 5*time.Minute, WindowsActivityScript)
		if err != nil && len(out) == 0 {
			return err
		}
		logons, events, err := parseWindowsActivity(out)
		if err != nil {
			return err
		}
		c.setDataset(datasetLogonHistory, logons)
		c.setDataset(datasetEventLogSummary, events)
		return nil
	})
	var osUpdates, appUpdates []agentproto.Update
	c.do("windows-update", func() error {
		// The Windows Update Agent search can take minutes on a fresh
		// boot; it runs beside the other collectors.
		out, err := PowerShell(ctx, 10*time.Minute, WindowsUpdateSearchScript)
		if err != nil {
			return err
		}
		ups, err := parseWindowsUpdates(out)
		osUpdates = ups
		return err
	})
	c.do("winget", func() error {
		path := WingetPath()
		if path == "" {
			return fmt.Errorf("winget not found")
		}
		out, err := run(ctx, 5*time.Minute, path, "upgrade", "--include-unknown", "--accept-source-agreements", "--disable-interactivity")
		// winget exits non-zero when nothing is upgradable; its table
		// is what counts.
		rows := parseWingetUpgrade(out)
		if err != nil && len(rows) == 0 && !strings.Contains(string(out), "No installed package") {
			return err
		}
		appUpdates = wingetUpdates(rows)
		return nil
	})
	c.setDataset(agentproto.DatasetEnvironmentVariables, environmentRows(os.Environ()))
	c.wg.Wait()
	c.inv.Updates = append(osUpdates, appUpdates...)
	c.setDataset(agentproto.DatasetTimeZone, []map[string]any{timeZoneRow(deref(c.inv.System.TimeZone), windowsIANA[deref(c.inv.System.TimeZone)], time.Now())})
}

func platformFacts(ctx context.Context, c *collector) Facts {
	var f Facts
	boot := time.Now().Add(-time.Duration(windows.DurationSinceBoot())).UTC().Truncate(time.Second)
	f.LastBootAt = &boot
	f.PendingReboot = windowsPendingReboot()
	out, err := PowerShell(ctx, 30*time.Second, "(Get-CimInstance Win32_ComputerSystem).UserName")
	if err == nil {
		f.User = str(string(out))
	}
	return f
}

func platformIdentity(ctx context.Context, c *collector, id *Identity) error {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SOFTWARE\Microsoft\Cryptography`, registry.QUERY_VALUE|registry.WOW64_64KEY)
	if err != nil {
		return fmt.Errorf("machine guid: %w", err)
	}
	defer k.Close()
	guid, _, err := k.GetStringValue("MachineGuid")
	if err != nil {
		return fmt.Errorf("machine guid: %w", err)
	}
	id.MachineUID = guid
	cv, err := registry.OpenKey(registry.LOCAL_MACHINE, `SOFTWARE\Microsoft\Windows NT\CurrentVersion`, registry.QUERY_VALUE|registry.WOW64_64KEY)
	if err == nil {
		defer cv.Close()
		name, _, _ := cv.GetStringValue("ProductName")
		display, _, _ := cv.GetStringValue("DisplayVersion")
		build, _, _ := cv.GetStringValue("CurrentBuildNumber")
		// ProductName still says "Windows 10" on Windows 11; the build
		// number tells them apart.
		if strings.HasPrefix(name, "Windows 10") && build >= "22000" && len(build) == 5 {
			name = "Windows 11" + strings.TrimPrefix(name, "Windows 10")
		}
		id.OS, id.OSVersion = name, display
		if id.OSVersion == "" {
			id.OSVersion = build
		}
	}
	return nil
}

// windowsPendingReboot checks the registry keys Windows sets while a
// restart is needed to finish servicing or updates.
func windowsPendingReboot() bool {
	for _, path := range []string{
		`SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending`,
		`SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired`,
	} {
		if k, err := registry.OpenKey(registry.LOCAL_MACHINE, path, registry.QUERY_VALUE|registry.WOW64_64KEY); err == nil {
			k.Close()
			return true
		}
	}
	if k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SYSTEM\CurrentControlSet\Control\Session Manager`, registry.QUERY_VALUE); err == nil {
		defer k.Close()
		if v, _, err := k.GetStringsValue("PendingFileRenameOperations"); err == nil && len(v) > 0 {
			return true
		}
	}
	return false
}

// PowerShell runs a script with Windows PowerShell. The script travels as
// -EncodedCommand (base64 of UTF-16LE) rather than -Command text: no
// quoting of the script can go wrong on its way through the command line.
func PowerShell(ctx context.Context, timeout time.Duration, script string) ([]byte, error) {
	return run(ctx, timeout, PowerShellPath(), "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-EncodedCommand", EncodePowerShell(script))
}

// PowerShellPath is Windows PowerShell in System32, found without PATH.
func PowerShellPath() string {
	root := os.Getenv("SystemRoot")
	if root == "" {
		root = `C:\Windows`
	}
	p := filepath.Join(root, `System32\WindowsPowerShell\v1.0\powershell.exe`)
	if fileExists(p) {
		return p
	}
	return "powershell.exe"
}

// WingetPath finds winget.exe. The agent runs as LocalSystem, whose PATH
// lacks the per-user App Installer alias: the newest App Installer package
// folder under WindowsApps holds the executable.
func WingetPath() string {
	if p, err := exec.LookPath("winget.exe"); err == nil {
		return p
	}
	pf := os.Getenv("ProgramFiles")
	if pf == "" {
		pf = `C:\Program Files`
	}
	matches, _ := filepath.Glob(filepath.Join(pf, `WindowsApps\Microsoft.DesktopAppInstaller_*_x64__8wekyb3d8bbwe\winget.exe`))
	if len(matches) == 0 {
		matches, _ = filepath.Glob(filepath.Join(pf, `WindowsApps\Microsoft.DesktopAppInstaller_*__8wekyb3d8bbwe\winget.exe`))
	}
	if len(matches) == 0 {
		return ""
	}
	sort.Strings(matches)
	return matches[len(matches)-1]
}
