package collect

import (
	"fmt"
	"github.com/patchd/patchd/agentproto"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

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
	MTU  int
	Up   bool
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
		a := adapter{Name: ifc.Name, MAC: strings.ToUpper(ifc.HardwareAddr.String()), MTU: ifc.MTU, Up: ifc.Flags&net.FlagUp != 0}
		addrs, _ := ifc.Addrs()
		for _, ad := range addrs {
			ipn, ok := ad.(*net.IPNet)
			if !ok {
				continue
			}
			if ipn.IP.To4() != nil {
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

// environmentRows lists the agent's own environment, without variables
// whose names look like they hold secrets.
func environmentRows(environ []string) []map[string]any {
	rows := []map[string]any{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || secretName.MatchString(name) {
			continue
		}
		rows = append(rows, map[string]any{"name": name, "value": value})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i]["name"].(string) < rows[j]["name"].(string) })
	return rows
}

// timeZoneRow describes the local time zone, named zone (IANA or Windows)
// first.
func timeZoneRow(zone string, now time.Time) map[string]any {
	abbr, offset := now.Zone()
	return map[string]any{
		"timeZone":     nullIfEmpty(zone),
		"abbreviation": abbr,
		"utcOffset":    utcOffset(offset),
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

// logicalDiskRow is one row of the logical-disks dataset.
func logicalDiskRow(drive, device, fsType string, size, free uint64) map[string]any {
	used := 0.0
	if size > 0 {
		used = round1(100 * float64(size-free) / float64(size))
	}
	return map[string]any{
		"drive": drive, "device": nullIfEmpty(device), "fileSystem": nullIfEmpty(fsType),
		"sizeGB": gib(size), "freeGB": gib(free), "usedPercent": used,
	}
}

// adapterRow is one row of the network-adapters dataset.
func adapterRow(a adapter) map[string]any {
	state := "down"
	if a.Up {
		state = "up"
	}
	return map[string]any{
		"name": a.Name, "mac": nullIfEmpty(a.MAC), "ipv4": strings.Join(a.IPv4, ","), "ipv6": strings.Join(a.IPv6, ","),
		"mtu": a.MTU, "state": state, "speedMbps": nil,
	}
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
