package collect

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// earliestInstall is the earliest operating-system installation date
// believed: an earlier one is a zero or reset clock (1970-01-01), not a date.
var earliestInstall = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)

// installDay is the day (YYYY-MM-DD, in t's location) of an operating
// system's installation time t, or "" (unknown) when t is before 1990 or
// after now (a day of clock skew allowed).
func installDay(t, now time.Time) string {
	if t.Before(earliestInstall) || t.After(now.Add(24*time.Hour)) {
		return ""
	}
	return t.Format(time.DateOnly)
}

// ipAddresses lists the unicast addresses of the interfaces that are up,
// without loopback and link-local ones.
func ipAddresses() []string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return []string{}
	}
	out := []string{}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagLoopback != 0 || ifc.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() || ipn.IP.IsMulticast() {
				continue
			}
			out = append(out, ipn.IP.String())
		}
	}
	sort.Strings(out)
	return out
}

// adapter is one network interface as net.Interfaces sees it.
type adapter struct {
	Name string
	MAC  string
	IPv4 []string
	IPv6 []string
	Mask string // dotted mask of the first IPv4 address
	MTU  int
	Up   bool
	// Running: the link is up (a cable, an association), not only the
	// interface.
	Running bool
}

// adapters lists the non-loopback interfaces.
func adapters() ([]adapter, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []adapter
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		a := adapter{Name: ifc.Name, MAC: strings.ToUpper(ifc.HardwareAddr.String()), MTU: ifc.MTU, Up: ifc.Flags&net.FlagUp != 0, Running: ifc.Flags&net.FlagRunning != 0}
		addrs, _ := ifc.Addrs()
		for _, ad := range addrs {
			ipn, ok := ad.(*net.IPNet)
			if !ok {
				continue
			}
			if ipn.IP.To4() != nil {
				if len(a.IPv4) == 0 && len(ipn.Mask) >= 4 {
					m := ipn.Mask[len(ipn.Mask)-4:]
					a.Mask = net.IPv4(m[0], m[1], m[2], m[3]).String()
				}
				a.IPv4 = append(a.IPv4, ipn.IP.String())
			} else {
				a.IPv6 = append(a.IPv6, ipn.IP.String())
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// macAddresses lists the distinct hardware addresses of the adapters.
func macAddresses(ads []adapter) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, a := range ads {
		if a.MAC == "" || a.MAC == "00:00:00:00:00:00" || seen[a.MAC] {
			continue
		}
		seen[a.MAC] = true
		out = append(out, a.MAC)
	}
	sort.Strings(out)
	return out
}

// secretName matches environment variable names whose values must not
// leave the computer.
var secretName = regexp.MustCompile(`(?i)(secret|token|passw|pwd|key|credential|auth|cookie|session|private|cert|signature)`)

// environmentRows lists the agent's own environment (a service's: scope
// system), without variables whose names look like they hold secrets.
func environmentRows(environ []string) []map[string]any {
	rows := []map[string]any{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || secretName.MatchString(name) {
			continue
		}
		rows = append(rows, map[string]any{"name": name, "value": value, "scope": "system"})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i]["name"].(string) < rows[j]["name"].(string) })
	return rows
}

// timeZoneRow describes the local time zone: zone is the platform's name
// (IANA, or the Windows name), iana the IANA name.
func timeZoneRow(zone, iana string, now time.Time) map[string]any {
	_, offset := now.Zone()
	if iana == "" {
		iana = zone
	}
	if zone == "" {
		zone = iana
	}
	return map[string]any{
		"timeZone":       zone,
		"ianaName":       iana,
		"utcOffset":      utcOffset(offset),
		"daylightSaving": now.IsDST(),
	}
}

// utcOffset formats an offset in seconds as +hh:mm.
func utcOffset(seconds int) string {
	sign := "+"
	if seconds < 0 {
		sign = "-"
		seconds = -seconds
	}
	return fmt.Sprintf("%s%02d:%02d", sign, seconds/3600, seconds%3600/60)
}

// nullIfEmpty turns an empty string into a JSON null in a dataset row.
func nullIfEmpty(s string) any {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return s
}

// readTrim reads a small file and trims it; an unreadable file gives "".
func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// logicalDiskRow is one row of the logical-disks dataset; driveType is
// "Local Disk", "Removable Disk" or "Network Connection".
func logicalDiskRow(drive, driveType, fsType, label string, size, free uint64) map[string]any {
	return map[string]any{
		"drive": drive, "driveType": driveType, "fileSystem": fsType, "volumeName": label,
		"sizeGB": gib(size), "freeGB": gib(free),
	}
}

// adapterRow is one row of the network-adapters dataset. gateway and dns
// may be empty (null in the row).
func adapterRow(a adapter, description, gateway, dns string, dhcp bool, speedMbps int) map[string]any {
	status := "Disconnected"
	if a.Up && a.Running {
		status = "Up"
	}
	if description == "" {
		description = a.Name
	}
	var ip, mask any
	if len(a.IPv4) > 0 {
		ip, mask = a.IPv4[0], nullIfEmpty(a.Mask)
	}
	var speed any
	if speedMbps > 0 {
		speed = speedMbps
	}
	return map[string]any{
		"name": a.Name, "description": description, "macAddress": nullIfEmpty(a.MAC), "ipAddress": ip,
		"subnetMask": mask, "gateway": nullIfEmpty(gateway), "dnsServers": nullIfEmpty(dns),
		"dhcpEnabled": dhcp, "speedMbps": speed, "status": status,
	}
}

// processRow is one row of the processes dataset; path may be empty.
func processRow(name string, pid int, user string, memoryMB, cpuPercent float64, path string) map[string]any {
	return map[string]any{
		"name": name, "pid": pid, "user": user, "memoryMB": round1(memoryMB),
		"cpuPercent": round1(cpuPercent), "path": nullIfEmpty(path),
	}
}

// serviceRow is one row of the services dataset.
func serviceRow(name, displayName, state, startMode, account string) map[string]any {
	if displayName == "" {
		displayName = name
	}
	return map[string]any{"name": name, "displayName": displayName, "state": state, "startMode": startMode, "account": account}
}

// adminRow is one row of the local-administrators dataset: typ is "User"
// or "Group", source "Local" or "Domain".
func adminRow(account, typ, source string) map[string]any {
	return map[string]any{"account": account, "type": typ, "source": source}
}

// sessionRow is one row of logged-on-users: sessionType is console, rdp or
// ssh; logonAt may be zero (null).
func sessionRow(user, sessionType string, logonAt time.Time, client string) map[string]any {
	return map[string]any{"user": user, "sessionType": sessionType, "logonAt": timeOrNil(logonAt), "clientAddress": nullIfEmpty(client)}
}

// startupRow is one row of startup-items.
func startupRow(name, command, location, user string) map[string]any {
	return map[string]any{"name": name, "command": command, "location": location, "user": user}
}

// firmwareRow is the one row of the firmware dataset; releaseDate is
// YYYY-MM-DD or empty.
func firmwareRow(vendor, version, releaseDate string, uefi, secureBoot bool) map[string]any {
	mode := "Legacy"
	if uefi {
		mode = "UEFI"
	}
	return map[string]any{"vendor": vendor, "version": version, "releaseDate": nullIfEmpty(releaseDate), "mode": mode, "secureBoot": secureBoot}
}

// timeOrNil is t as an RFC 3339 UTC string, or null when zero.
func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

// firmwareDate turns the MM/DD/YYYY of SMBIOS into YYYY-MM-DD; a date
// already in that form passes, anything else gives "".
func firmwareDate(s string) string {
	s = strings.TrimSpace(s)
	if t, err := time.Parse("01/02/2006", s); err == nil {
		return t.Format(time.DateOnly)
	}
	if len(s) >= 10 {
		if t, err := time.Parse(time.DateOnly, s[:10]); err == nil {
			return t.Format(time.DateOnly)
		}
	}
	return ""
}

// antivirusProducts maps package names to the antivirus product they install.
var antivirusProducts = map[string]string{
	"mdatp": "Microsoft Defender for Endpoint", "falcon-sensor": "CrowdStrike Falcon",
	"sentinelagent": "SentinelOne", "clamav-daemon": "ClamAV", "clamd": "ClamAV",
	"sophos-spl": "Sophos Protection for Linux", "cylance-protect": "CylancePROTECT",
	"eset-server-security": "ESET Server Security", "esets": "ESET File Security",
}

// antivirusFromSoftware names the antivirus product installed, if any.
func antivirusFromSoftware(sw []agentproto.Software) *string {
	var found []string
	seen := map[string]bool{}
	for _, s := range sw {
		if p, ok := antivirusProducts[s.Name]; ok && !seen[p] {
			seen[p] = true
			found = append(found, p)
		}
	}
	sort.Strings(found)
	return str(strings.Join(found, ", "))
}

// dirUsage sums the sizes of at most maxFiles files under dir (not
// crossing into other filesystems' mounts is left to permissions) and
// returns the newest modification of its top-level entries.
func dirUsage(dir string, maxFiles int) (size uint64, newest time.Time) {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > maxFiles {
			return filepath.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if filepath.Dir(p) == dir && info.ModTime().After(newest) {
			newest = info.ModTime()
		}
		if d.Type().IsRegular() {
			size += uint64(info.Size())
		}
		return nil
	})
	return size, newest
}
