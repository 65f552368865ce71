package collect

// Parsers of the macOS collectors' output. Platform-independent so that
// they are tested on any system.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// systemProfiler is the part of `system_profiler -json SPHardwareDataType
// SPSoftwareDataType SPApplicationsDataType` the agent reads.
type systemProfiler struct {
	Hardware []struct {
		MachineName     string `json:"machine_name"`
		MachineModel    string `json:"machine_model"`
		ChipType        string `json:"chip_type"`         // Apple silicon
		CPUType         string `json:"cpu_type"`          // Intel
		NumberProcessor any    `json:"number_processors"` // "proc 12:8:4" or 6
		PhysicalMemory  string `json:"physical_memory"`
		SerialNumber    string `json:"serial_number"`
		PlatformUUID    string `json:"platform_UUID"`
		BootROMVersion  string `json:"boot_rom_version"`
	} `json:"SPHardwareDataType"`
	Software []struct {
		OSVersion     string `json:"os_version"`     // "macOS 15.1 (24B83)"
		KernelVersion string `json:"kernel_version"` // "Darwin 24.1.0"
		LocalHostName string `json:"local_host_name"`
		UserName      string `json:"user_name"`
		BootVolume    string `json:"boot_volume"`
	} `json:"SPSoftwareDataType"`
	Applications []struct {
		Name         string   `json:"_name"`
		Version      string   `json:"version"`
		LastModified string   `json:"lastModified"`
		ObtainedFrom string   `json:"obtained_from"`
		Path         string   `json:"path"`
		SignedBy     []string `json:"signed_by"`
		Info         string   `json:"info"`
	} `json:"SPApplicationsDataType"`
}

// parseSystemProfiler fills the system fields and the software list.
func parseSystemProfiler(b []byte, inv *agentproto.Inventory) error {
	var sp systemProfiler
	if err := json.Unmarshal(b, &sp); err != nil {
		return fmt.Errorf("system_profiler: %w", err)
	}
	sys := &inv.System
	if len(sp.Hardware) > 0 {
		h := sp.Hardware[0]
		sys.Manufacturer = ptr("Apple Inc.")
		model := h.MachineName
		if h.MachineModel != "" {
			model = strings.TrimSpace(model + " (" + h.MachineModel + ")")
		}
		sys.Model = str(model)
		sys.SerialNumber = str(h.SerialNumber)
		sys.CPU = str(h.ChipType)
		if sys.CPU == nil {
			sys.CPU = str(h.CPUType)
		}
		if n := macCores(h.NumberProcessor); n > 0 {
			sys.Cores = ptr(n)
		}
		if gb, ok := macMemoryGB(h.PhysicalMemory); ok {
			sys.RAMGB = ptr(gb)
		}
		// Macs boot through UEFI (Intel) or iBoot (Apple silicon), both
		// with their own secure boot; only Intel Macs report it as UEFI.
		inv.Datasets[agentproto.DatasetFirmware] = []map[string]any{firmwareRow("Apple Inc.", h.BootROMVersion, "",
			!strings.HasPrefix(h.ChipType, "Apple"), strings.HasPrefix(h.ChipType, "Apple"))}
		inv.Datasets[datasetMotherboards] = []map[string]any{{
			"manufacturer": "Apple Inc.", "product": h.MachineModel, "serialNumber": nullIfEmpty(h.SerialNumber), "version": h.BootROMVersion,
		}}
	}
	if len(sp.Software) > 0 {
		s := sp.Software[0]
		if m := macOSVersion.FindStringSubmatch(s.OSVersion); m != nil {
			sys.OS, sys.OSVersion, sys.OSBuild = ptr(m[1]), ptr(m[2]), ptr(m[3])
		}
	}
	for _, a := range sp.Applications {
		if a.Name == "" {
			continue
		}
		var date *string
		if t, err := time.Parse(time.RFC3339, a.LastModified); err == nil {
			date = ptr(t.UTC().Format(time.DateOnly))
		}
		inv.Software = append(inv.Software, agentproto.Software{
			Name: a.Name, Version: str(a.Version), Publisher: str(macPublisher(a.ObtainedFrom, a.SignedBy)),
			InstallDate: date, InstalledFor: ptr(macInstalledFor(a.Path)), InstallType: ptr("app"),
		})
	}
	return nil
}

var macOSVersion = regexp.MustCompile(`^(macOS|Mac OS X|OS X)\s+([\d.]+)\s*\(([^)]+)\)`)

// macCores reads "proc 12:8:4" (total:performance:efficiency) or a number.
func macCores(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case string:
		f := strings.Fields(n)
		if len(f) == 2 && f[0] == "proc" {
			total, _, _ := strings.Cut(f[1], ":")
			c, _ := strconv.Atoi(total)
			return c
		}
		c, _ := strconv.Atoi(n)
		return c
	}
	return 0
}

// macMemoryGB reads "32 GB" or "512 MB".
func macMemoryGB(s string) (float64, bool) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, false
	}
	n, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, false
	}
	switch f[1] {
	case "GB":
		return round1(n), true
	case "MB":
		return round1(n / 1024), true
	case "TB":
		return round1(n * 1024), true
	}
	return 0, false
}

// macPublisher takes the signer of a Developer ID ("Developer ID
// Application: Google LLC (EQHXZ8M8AV)" → "Google LLC"), or Apple.
func macPublisher(obtained string, signedBy []string) string {
	if obtained == "apple" {
		return "Apple Inc."
	}
	for _, s := range signedBy {
		for _, prefix := range []string{"Developer ID Application: ", "Apple Mac OS Application Signing", "Apple iPhone OS Application Signing"} {
			if rest, ok := strings.CutPrefix(s, prefix); ok && rest != "" {
				if i := strings.LastIndex(rest, " ("); i > 0 {
					rest = rest[:i]
				}
				return strings.TrimSpace(rest)
			}
		}
	}
	if obtained == "mac_app_store" {
		return "Mac App Store"
	}
	return ""
}

// macInstalledFor: apps under a home folder belong to that user.
func macInstalledFor(path string) string {
	if rest, ok := strings.CutPrefix(path, "/Users/"); ok {
		user, _, _ := strings.Cut(rest, "/")
		return user
	}
	return "all users"
}

// macUpdate is one entry of `softwareupdate --list`.
type macUpdate struct {
	Label, Title, Version string
	SizeKiB               int64
	Recommended, Restart  bool
}

// parseSoftwareUpdateList reads `softwareupdate --list` (macOS 10.15 and
// later):
//
//   - Label: macOS Sonoma 14.7.1-23H222
//     Title: macOS Sonoma 14.7.1, Version: 14.7.1, Size: 1521244KiB, Recommended: YES, Action: restart,
func parseSoftwareUpdateList(b []byte) []macUpdate {
	var out []macUpdate
	var cur *macUpdate
	for _, l := range lines(b) {
		t := strings.TrimSpace(l)
		if label, ok := strings.CutPrefix(t, "* Label: "); ok {
			out = append(out, macUpdate{Label: strings.TrimSpace(label)})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil || !strings.HasPrefix(t, "Title: ") {
			continue
		}
		for _, part := range strings.Split(t, ", ") {
			k, v, ok := strings.Cut(part, ": ")
			if !ok {
				continue
			}
			v = strings.TrimSuffix(strings.TrimSpace(v), ",")
			switch k {
			case "Title":
				cur.Title = v
			case "Version":
				cur.Version = v
			case "Size":
				cur.SizeKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSuffix(v, "KiB"), "K"), 10, 64)
			case "Recommended":
				cur.Recommended = v == "YES"
			case "Action":
				cur.Restart = v == "restart" || v == "shut down"
			}
		}
		cur = nil
	}
	return out
}

// macUpdates turns softwareupdate entries into updates. macOS itself and
// its security responses are OS updates; the rest (Safari, Xcode command
// line tools) are applications. Apple publishes no severity per update.
func macUpdates(list []macUpdate) []agentproto.Update {
	out := []agentproto.Update{}
	for _, m := range list {
		title := m.Title
		if m.Version != "" && !strings.Contains(title, m.Version) {
			title += " " + m.Version
		}
		u := agentproto.Update{
			Title: title, Severity: ptr("Unspecified"), Source: "Applications", Categories: []string{"Updates"},
			LatestVersion: str(m.Version), RebootRequired: m.Restart, ProductKey: str(m.Label),
		}
		lt := strings.ToLower(m.Title + " " + m.Label)
		switch {
		case strings.Contains(lt, "security") || strings.Contains(lt, "rapid security response") || strings.Contains(lt, "xprotect"):
			u.Source = "OS - Mandatory"
			u.Categories = []string{"Security Updates"}
			u.Severity = ptr("Important")
		case strings.HasPrefix(lt, "macos") || strings.HasPrefix(lt, "os x"):
			if m.Recommended {
				u.Source = "OS - Mandatory"
			} else {
				u.Source = "OS - Optional"
			}
			u.Categories = []string{"Updates"}
		}
		out = append(out, u)
	}
	return out
}

// parseSwVers reads `sw_vers` into ProductName, ProductVersion, BuildVersion.
func parseSwVers(b []byte) map[string]string {
	m := map[string]string{}
	for _, l := range lines(b) {
		k, v, ok := strings.Cut(l, ":")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

var ioregUUID = regexp.MustCompile(`"IOPlatformUUID"\s*=\s*"([^"]+)"`)

// parseIORegUUID finds IOPlatformUUID in `ioreg -rd1 -c IOPlatformExpertDevice`.
func parseIORegUUID(b []byte) string {
	if m := ioregUUID.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

var boottime = regexp.MustCompile(`sec\s*=\s*(\d+)`)

// parseKernBoottime reads `sysctl -n kern.boottime`:
// "{ sec = 1732086000, usec = 123456 } Wed Nov 20 07:00:00 2024".
func parseKernBoottime(b []byte) (time.Time, bool) {
	m := boottime.FindSubmatch(b)
	if m == nil {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0).UTC(), true
}

// psFormat is the `ps -axo` format parsePS reads.
var psArgs = []string{"-axo", "pid=,user=,rss=,%cpu=,comm="}

// parsePS reads `ps -axo pid=,user=,rss=,%cpu=,comm=`: rss is in KiB,
// %cpu the CPU use over the process's life, comm the executable's path.
func parsePS(b []byte) []map[string]any {
	rows := []map[string]any{}
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		rss, _ := strconv.ParseFloat(f[2], 64)
		cpu, _ := strconv.ParseFloat(f[3], 64)
		comm := strings.Join(f[4:], " ")
		name, path := comm, ""
		if i := strings.LastIndexByte(comm, '/'); i >= 0 && i < len(comm)-1 {
			name, path = comm[i+1:], comm
		}
		rows = append(rows, processRow(name, pid, f[1], rss/1024, cpu, path))
	}
	return rows
}

// parseDsclUIDs reads `dscl . -list /Users UniqueID` into name → uid.
func parseDsclUIDs(b []byte) map[string]int {
	out := map[string]int{}
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		if uid, err := strconv.Atoi(f[1]); err == nil {
			out[f[0]] = uid
		}
	}
	return out
}

// parseDsclMembers reads `dscl . -read /Groups/admin GroupMembership`.
func parseDsclMembers(b []byte) []string {
	s := strings.TrimSpace(string(b))
	_, rest, ok := strings.Cut(s, "GroupMembership:")
	if !ok {
		return nil
	}
	return strings.Fields(rest)
}

// parseLaunchctlList reads `launchctl list`: PID, last exit status, label.
func parseLaunchctlList(b []byte) []map[string]any {
	rows := []map[string]any{}
	for i, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) != 3 || (i == 0 && f[0] == "PID") {
			continue
		}
		state := "stopped"
		if f[0] != "-" {
			state = "running"
		}
		// Jobs listed are loaded (launchd starts them on demand or at
		// load); the agent runs as root, so these are system-domain jobs.
		rows = append(rows, serviceRow(f[2], f[2], state, "loaded", "root"))
	}
	return rows
}

// parseRouteGet reads the gateway and interface of `route -n get default`.
func parseRouteGet(b []byte) (gateway, iface string) {
	for _, l := range lines(b) {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			continue
		}
		switch k {
		case "gateway":
			gateway = strings.TrimSpace(v)
		case "interface":
			iface = strings.TrimSpace(v)
		}
	}
	return gateway, iface
}

// darwinSessionRows: who on macOS prints "Nov 20 08:12" (no year; parseWho
// keeps the day); a session from a remote host is ssh, the others console.
func darwinSessionRows(sessions []whoEntry, now time.Time) []map[string]any {
	rows := []map[string]any{}
	for _, s := range sessions {
		typ, client := "console", ""
		if s.Host != "" && !strings.HasPrefix(s.Host, ":") {
			typ, client = "ssh", s.Host
		}
		var at time.Time
		if t, err := time.ParseInLocation("Jan 2", s.Since, time.Local); err == nil {
			at = t.AddDate(now.Year(), 0, 0)
			if at.After(now) {
				at = at.AddDate(-1, 0, 0) // a session opened last December
			}
		}
		rows = append(rows, sessionRow(s.User, typ, at, client))
	}
	return rows
}
