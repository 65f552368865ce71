package collect

// Parsers of the history datasets (logon-history, event-log-summary,
// installed-updates) on Linux and macOS. Platform-independent so that they
// are tested on any system against captured files in testdata/.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// logonHistoryDays is how far back logon-history goes (DATASETS.md).
const logonHistoryDays = 14

// maxHistoryRows bounds logon-history and installed-updates: the newest
// rows are kept. A server exposed to the internet can collect hundreds of
// thousands of failed SSH logons in two weeks.
const maxHistoryRows = 2000

// utmpRecord is the part of a glibc utmp record (wtmp, btmp) the agent
// reads.
type utmpRecord struct {
	Type int16
	Line string
	User string
	Host string
	At   time.Time
}

// utmp record types.
const (
	utmpLoginProcess = 6
	utmpUserProcess  = 7
)

// utmpSize is the size of struct utmp on glibc: 384 bytes on every
// platform that keeps 32-bit times in it (x86, x86-64, ARM, arm64: the
// __WORDSIZE_TIME64_COMPAT32 layout), 400 where ut_session and ut_tv are
// 64-bit.
func utmpSize(n int64) int64 {
	if n%384 != 0 && n%400 == 0 {
		return 400
	}
	return 384
}

// parseUtmp decodes wtmp or btmp records (little-endian). Records shorter
// than a whole record at the end are ignored.
//
// Layout (384): ut_type int16 +2 pad, ut_pid int32 @4, ut_line [32] @8,
// ut_id [4] @40, ut_user [32] @44, ut_host [256] @76, ut_exit @332,
// ut_session int32 @336, ut_tv {int32 sec, int32 usec} @340, ut_addr_v6
// @348, unused @364. The 400-byte layout has a 64-bit ut_session @336 and
// a 64-bit tv_sec @344.
func parseUtmp(b []byte) []utmpRecord {
	size := int(utmpSize(int64(len(b))))
	var out []utmpRecord
	for off := 0; off+size <= len(b); off += size {
		r := b[off : off+size]
		var sec int64
		if size == 400 {
			sec = int64(binary.LittleEndian.Uint64(r[344:352]))
		} else {
			sec = int64(int32(binary.LittleEndian.Uint32(r[340:344])))
		}
		out = append(out, utmpRecord{
			Type: int16(binary.LittleEndian.Uint16(r[0:2])),
			Line: cField(r[8:40]),
			User: cField(r[44:76]),
			Host: cField(r[76:332]),
			At:   time.Unix(sec, 0).UTC(),
		})
	}
	return out
}

// cField is a NUL-padded C string field.
func cField(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), ""))
}

// xDisplay matches an X display name written as the host of a local
// graphical logon: ":0", ":1.0".
var xDisplay = regexp.MustCompile(`^:\d+(\.\d+)?$`)

// utmpLogonType names the kind of a logon: a remote host (not an X display)
// means ssh, anything else a logon at the console or a local terminal.
func utmpLogonType(line, host string) string {
	if strings.HasPrefix(line, "ssh") || (host != "" && !xDisplay.MatchString(host)) {
		return "ssh"
	}
	return "Interactive"
}

// logonHistoryRows turns wtmp (successful logons: USER_PROCESS records)
// and btmp (failed logons: every record) into logon-history rows since
// since, newest first, at most maxHistoryRows.
func logonHistoryRows(wtmp, btmp []utmpRecord, since time.Time) []map[string]any {
	rows := []map[string]any{}
	add := func(r utmpRecord, success bool) {
		if r.User == "" || r.At.Before(since) {
			return
		}
		rows = append(rows, logonRow(r.User, utmpLogonType(r.Line, r.Host), r.At, success))
	}
	for _, r := range wtmp {
		// "reboot" and "shutdown" are written as BOOT_TIME and
		// RUN_LVL records; LOGIN_PROCESS is a getty waiting.
		if r.Type == utmpUserProcess {
			add(r, true)
		}
	}
	for _, r := range btmp {
		add(r, false)
	}
	return newestRows(rows, "logonAt")
}

func logonRow(user, logonType string, at time.Time, success bool) map[string]any {
	return map[string]any{"user": user, "logonType": logonType, "logonAt": at.UTC().Format(time.RFC3339), "success": success}
}

// newestRows sorts rows by the timestamp key, newest first, and keeps at
// most maxHistoryRows.
func newestRows(rows []map[string]any, key string) []map[string]any {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i][key].(string) > rows[j][key].(string) })
	if len(rows) > maxHistoryRows {
		rows = rows[:maxHistoryRows]
	}
	return rows
}

// parseLastISO reads `last --time-format iso` (util-linux) or `wtmpdb last
// --time-format iso` (systems that replaced wtmp with its database), whose
// offsets have no colon (%FT%T%z):
//
//	alice    pts/0        10.0.0.5         2026-11-20T09:15:02+01:00 - 2026-11-20T09:20:11+01:00  (00:05)
//	alice    tty1                          2026-11-19T08:02:44+0100 - still logged in
//	reboot   system boot  6.1.0-27-amd64   2026-11-19T08:01:10+01:00   still running
//
// The host column may be empty; the logon time is the first field that
// parses as an ISO 8601 time.
func parseLastISO(b []byte) []utmpRecord {
	var out []utmpRecord
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) < 3 || f[0] == "reboot" || f[0] == "shutdown" || strings.HasPrefix(l, "wtmp") {
			continue
		}
		for i := 2; i < len(f); i++ {
			t, err := time.Parse(time.RFC3339, f[i])
			if err != nil {
				if t, err = time.Parse("2006-01-02T15:04:05-0700", f[i]); err != nil {
					continue
				}
			}
			host := ""
			if i == 3 {
				host = f[2]
			}
			out = append(out, utmpRecord{Type: utmpUserProcess, User: f[0], Line: f[1], Host: host, At: t.UTC()})
			break
		}
	}
	return out
}

// parseDarwinLast reads the output of macOS `last`, newest first, which
// prints no year:
//
//	alice     ttys002  10.0.0.5         Thu Nov 20 09:15   still logged in
//	alice     console                   Wed Nov 19 08:02 - 18:40  (10:38)
//	reboot    ~                         Wed Nov 19 08:01
//
// The year is that of now, one less for a date after now, and one less
// again each time the dates go forward while reading backwards in time.
// Terminal windows (a ttys line without a remote host) are not logons and
// are left out; console logons are Interactive, remote ones ssh.
func parseDarwinLast(b []byte, now time.Time, loc *time.Location) []utmpRecord {
	var out []utmpRecord
	year := now.In(loc).Year()
	var prev time.Time
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) < 6 || f[0] == "reboot" || f[0] == "shutdown" || f[0] == "wtmp" {
			continue
		}
		// Find the weekday that starts the date: the host column may be
		// empty.
		i := 2
		for ; i+3 < len(f); i++ {
			if isWeekday(f[i]) {
				break
			}
		}
		if i+3 >= len(f) || !isWeekday(f[i]) {
			continue
		}
		host := ""
		if i == 3 {
			host = f[2]
		}
		if f[1] != "console" && host == "" {
			continue
		}
		t, err := time.ParseInLocation("Jan 2 15:04 2006", f[i+1]+" "+f[i+2]+" "+f[i+3]+" "+strconv.Itoa(year), loc)
		if err != nil {
			continue
		}
		if t.After(now.Add(24 * time.Hour)) {
			year--
			t = t.AddDate(-1, 0, 0)
		}
		if !prev.IsZero() && t.After(prev) {
			year--
			t = t.AddDate(-1, 0, 0)
		}
		prev = t
		out = append(out, utmpRecord{Type: utmpUserProcess, User: f[0], Line: f[1], Host: host, At: t.UTC()})
	}
	return out
}

func isWeekday(s string) bool {
	switch s {
	case "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun":
		return true
	}
	return false
}

// eventCount is one line of event-log-summary being counted.
type eventCount struct {
	count   int
	last    time.Time
	sources map[string]int
}

// eventSummary counts events by log and level.
type eventSummary map[[2]string]*eventCount

func (s eventSummary) add(log, level, source string, at time.Time) {
	k := [2]string{log, level}
	c := s[k]
	if c == nil {
		c = &eventCount{sources: map[string]int{}}
		s[k] = c
	}
	c.count++
	if at.After(c.last) {
		c.last = at
	}
	c.sources[source]++
}

// rows gives one row per log and level of want (in that order, counted or
// not: a zero count is data too), then any other counted pair.
func (s eventSummary) rows(want [][2]string) []map[string]any {
	rows := []map[string]any{}
	done := map[[2]string]bool{}
	emit := func(k [2]string) {
		done[k] = true
		c := s[k]
		if c == nil {
			rows = append(rows, map[string]any{"log": k[0], "level": k[1], "count": 0, "lastEventAt": nil, "topSource": ""})
			return
		}
		rows = append(rows, map[string]any{"log": k[0], "level": k[1], "count": c.count, "lastEventAt": timeOrNil(c.last), "topSource": topSource(c.sources)})
	}
	for _, k := range want {
		emit(k)
	}
	var rest [][2]string
	for k := range s {
		if !done[k] {
			rest = append(rest, k)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i][0]+rest[i][1] < rest[j][0]+rest[j][1] })
	for _, k := range rest {
		emit(k)
	}
	return rows
}

// topSource is the source with the most events (the first by name on a
// tie).
func topSource(sources map[string]int) string {
	best, n := "", -1
	for s, c := range sources {
		if c > n || (c == n && s < best) {
			best, n = s, c
		}
	}
	return best
}

// journalLevels are the rows of a journal summary.
var journalLevels = [][2]string{
	{"journal", "crit"}, {"journal", "err"}, {"journal", "warning"},
	{"auth", "crit"}, {"auth", "err"}, {"auth", "warning"},
}

// countJournal reads `journalctl -o json` lines (one object per line,
// values strings, or arrays of bytes for binary ones) of priority 0-4 and
// counts them: priorities 0-2 as crit, 3 err, 4 warning; facility auth (4)
// and authpriv (10) under the log "auth", the rest under "journal". The
// source is SYSLOG_IDENTIFIER, else _COMM.
func countJournal(r io.Reader) ([]map[string]any, error) {
	s := eventSummary{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e map[string]json.RawMessage
		if err := json.Unmarshal(line, &e); err != nil {
			continue
		}
		prio, err := strconv.Atoi(jsonString(e["PRIORITY"]))
		if err != nil || prio > 4 {
			continue
		}
		level := map[int]string{3: "err", 4: "warning"}[prio]
		if level == "" {
			level = "crit"
		}
		log := "journal"
		if f := jsonString(e["SYSLOG_FACILITY"]); f == "4" || f == "10" {
			log = "auth"
		}
		source := jsonString(e["SYSLOG_IDENTIFIER"])
		if source == "" {
			source = jsonString(e["_COMM"])
		}
		var at time.Time
		if us, err := strconv.ParseInt(jsonString(e["__REALTIME_TIMESTAMP"]), 10, 64); err == nil {
			at = time.UnixMicro(us).UTC().Truncate(time.Second)
		}
		s.add(log, level, source, at)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return s.rows(journalLevels), nil
}

// jsonString is a JSON string value, or "" for anything else (journalctl
// writes binary or repeated fields as arrays).
func jsonString(m json.RawMessage) string {
	var s string
	if json.Unmarshal(m, &s) != nil {
		return ""
	}
	return s
}

// darwinLogLevels are the rows of a macOS unified-log summary.
var darwinLogLevels = [][2]string{{"system", "fault"}, {"system", "error"}}

// countDarwinLog reads `log show --style ndjson` lines and counts the
// Fault and Error messages; the source is the process's executable name.
// Lines that are not JSON objects (the "Filtering the log data…" header)
// are skipped.
func countDarwinLog(r io.Reader) ([]map[string]any, error) {
	s := eventSummary{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e struct {
			MessageType      string `json:"messageType"`
			ProcessImagePath string `json:"processImagePath"`
			Timestamp        string `json:"timestamp"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			continue
		}
		level := strings.ToLower(e.MessageType)
		if level != "fault" && level != "error" {
			continue
		}
		source := e.ProcessImagePath
		if i := strings.LastIndexByte(source, '/'); i >= 0 {
			source = source[i+1:]
		}
		// 2026-11-20 09:15:01.123456+0100
		at, _ := time.Parse("2006-01-02 15:04:05.999999-0700", e.Timestamp)
		s.add("system", level, source, at.UTC().Truncate(time.Second))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return s.rows(darwinLogLevels), nil
}

// dpkgUpgrade is one "upgrade" line of /var/log/dpkg.log.
type dpkgUpgrade struct {
	At                     time.Time
	Package, Arch          string
	OldVersion, NewVersion string
}

// parseDpkgLog reads the upgrades of dpkg.log, whose times are local:
//
//	2026-11-20 09:15:01 upgrade libssl3:amd64 3.0.14-1~deb12u2 3.0.15-1~deb12u1
//
// A first installation ("install") is not an update and is left out.
func parseDpkgLog(b []byte, loc *time.Location) []dpkgUpgrade {
	var out []dpkgUpgrade
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) != 6 || f[2] != "upgrade" {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05", f[0]+" "+f[1], loc)
		if err != nil {
			continue
		}
		pkg, arch, _ := strings.Cut(f[3], ":")
		out = append(out, dpkgUpgrade{At: at.UTC(), Package: pkg, Arch: arch, OldVersion: f[4], NewVersion: f[5]})
	}
	return out
}

// AptDeployMarker is the apt option (-o) patchd-agent adds to the apt-get
// run of a DEPLOY_UPDATES command. apt keeps it in the Commandline of its
// history, which tells those upgrades apart as installed by patchd.
const AptDeployMarker = "Patchd::Deployment=true"

// parseAptHistory maps "package:arch new-version" to who asked apt for
// each upgrade of /var/log/apt/history.log:
//
//	Start-Date: 2026-11-20  09:14:58
//	Commandline: apt-get install --only-upgrade openssl
//	Requested-By: alice (1000)
//	Upgrade: openssl:amd64 (3.0.14-1~deb12u2, 3.0.15-1~deb12u1), libssl3:amd64 (…)
//	End-Date: 2026-11-20  09:15:03
//
// A run without Requested-By was started by root itself (not through
// sudo); unattended-upgrades names itself in Commandline, and patchd's
// deployments carry AptDeployMarker there.
func parseAptHistory(b []byte) map[string]string {
	out := map[string]string{}
	by := "root"
	for _, l := range lines(b) {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		switch k {
		case "Start-Date":
			by = "root"
		case "Commandline":
			switch {
			case strings.Contains(v, AptDeployMarker):
				by = "patchd"
			case strings.Contains(v, "unattended-upgrade"):
				by = "unattended-upgrades"
			}
		case "Requested-By":
			if by == "patchd" {
				continue
			}
			if name, _, _ := strings.Cut(strings.TrimSpace(v), " ("); name != "" {
				by = name
			}
		case "Upgrade":
			// pkg:arch (old, new), pkg:arch (old, new)
			for _, item := range strings.Split(v, "), ") {
				name, vers, ok := strings.Cut(strings.TrimSpace(item), " (")
				if !ok {
					continue
				}
				_, newV, ok := strings.Cut(strings.TrimSuffix(vers, ")"), ", ")
				if ok {
					// dpkg.log writes arch-independent packages as :all,
					// apt as the native architecture: keep the bare name too.
					newV = strings.TrimSpace(newV)
					out[name+" "+newV] = by
					bare, _, _ := strings.Cut(name, ":")
					out[bare+" "+newV] = by
				}
			}
		}
	}
	return out
}

// dpkgInstalledUpdates turns dpkg upgrades into installed-updates rows,
// newest first. The title is the package and its new version; the
// architecture is kept only when it is not the native one (or all), so
// that libc6 and libc6:i386 stay apart. installedBy is who asked apt (from
// its history), root otherwise: dpkg itself always runs as root.
func dpkgInstalledUpdates(ups []dpkgUpgrade, requestedBy map[string]string, nativeArch string) []map[string]any {
	rows := []map[string]any{}
	for _, u := range ups {
		name := u.Package
		if u.Arch != "" && u.Arch != nativeArch && u.Arch != "all" {
			name += ":" + u.Arch
		}
		by := requestedBy[u.Package+":"+u.Arch+" "+u.NewVersion]
		if by == "" {
			by = requestedBy[u.Package+" "+u.NewVersion]
		}
		if by == "" {
			by = "root"
		}
		rows = append(rows, installedUpdateRow("", name+" "+u.NewVersion, "Package Upgrade", u.At, by))
	}
	return newestRows(rows, "installedAt")
}

func installedUpdateRow(kb, title, typ string, at time.Time, by string) map[string]any {
	return map[string]any{"kb": nullIfEmpty(kb), "title": title, "type": typ, "installedAt": at.UTC().Format(time.RFC3339), "installedBy": by}
}

// dpkgArch is dpkg's name of a Go architecture.
func dpkgArch(goarch string) string {
	switch goarch {
	case "386":
		return "i386"
	case "arm":
		return "armhf"
	case "ppc64le":
		return "ppc64el"
	}
	return goarch
}

// parseDnfRPMLog reads the upgrades of /var/log/dnf.rpm.log (dnf 4: RHEL
// and clones 8-10, Fedora before 41):
//
//	2026-11-20T09:15:01+0000 SUBDEBUG Upgrade: openssl-libs-1:3.0.7-27.el9.x86_64
//	2026-11-20T09:15:02+0000 SUBDEBUG Upgraded: openssl-libs-1:3.0.7-25.el9.x86_64
//
// "Upgrade:" names the package installed; "Upgraded:" the one it replaced.
func parseDnfRPMLog(b []byte) []map[string]any {
	rows := []map[string]any{}
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) != 4 || f[2] != "Upgrade:" {
			continue
		}
		at, err := time.Parse("2006-01-02T15:04:05-0700", f[0])
		if err != nil {
			continue
		}
		rows = append(rows, installedUpdateRow("", nevraTitle(f[3]), "Package Upgrade", at, "root"))
	}
	return newestRows(rows, "installedAt")
}

// parseYumLog reads the updates of /var/log/yum.log (RHEL and CentOS 7),
// whose lines carry no year: the file's modification year, one less for a
// date after it.
//
//	Nov 20 09:15:01 Updated: 1:openssl-libs-1.0.2k-26.el7_9.x86_64
func parseYumLog(b []byte, modTime time.Time, loc *time.Location) []map[string]any {
	rows := []map[string]any{}
	for _, l := range lines(b) {
		f := strings.Fields(l)
		if len(f) != 5 || f[3] != "Updated:" {
			continue
		}
		at, err := time.ParseInLocation("Jan 2 15:04:05 2006", f[0]+" "+f[1]+" "+f[2]+" "+strconv.Itoa(modTime.Year()), loc)
		if err != nil {
			continue
		}
		if at.After(modTime.Add(24 * time.Hour)) {
			at = at.AddDate(-1, 0, 0)
		}
		pkg := f[4]
		if e, rest, ok := strings.Cut(pkg, ":"); ok && isDigits(e) {
			pkg = rest // yum writes the epoch first
		}
		rows = append(rows, installedUpdateRow("", nevraTitle(pkg), "Package Upgrade", at, "root"))
	}
	return newestRows(rows, "installedAt")
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// nevraTitle turns name-[epoch:]version-release.arch into
// "name version-release", the form the Debian rows have.
func nevraTitle(nevra string) string {
	s := nevra
	if i := strings.LastIndexByte(s, '.'); i > 0 {
		switch s[i+1:] {
		case "x86_64", "noarch", "i686", "aarch64", "ppc64le", "s390x", "src":
			s = s[:i]
		}
	}
	rel := strings.LastIndexByte(s, '-')
	if rel <= 0 {
		return nevra
	}
	ver := strings.LastIndexByte(s[:rel], '-')
	if ver <= 0 {
		return nevra
	}
	v := s[ver+1:]
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	return s[:ver] + " " + v
}
