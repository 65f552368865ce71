package collect

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseOSRelease(t *testing.T) {
	for _, tc := range []struct{ file, name, version, id string }{
		{"os-release-debian12.txt", "Debian GNU/Linux", "12", "debian"},
		{"os-release-rocky.txt", "Rocky Linux", "9.4", "rocky"},
	} {
		rel := parseOSRelease(readTestdata(t, tc.file))
		if osName(rel) != tc.name || rel["VERSION_ID"] != tc.version || rel["ID"] != tc.id {
			t.Errorf("%s: got %q %q %q", tc.file, osName(rel), rel["VERSION_ID"], rel["ID"])
		}
	}
	rel := map[string]string{"PRETTY_NAME": "Example OS 3 (Tiger)", "VERSION": "3 (Tiger)"}
	if got := osName(rel); got != "Example OS" {
		t.Errorf("name from PRETTY_NAME: %q", got)
	}
}

func TestParseCPUInfo(t *testing.T) {
	x := parseCPUInfo(readTestdata(t, "cpuinfo-xeon.txt"))
	if x.Model != "Intel(R) Xeon(R) Processor" || x.Cores != 2 || x.Threads != 2 {
		t.Errorf("xeon: %+v", x)
	}
	arm := parseCPUInfo(readTestdata(t, "cpuinfo-arm64.txt"))
	if arm.Model != "" || arm.Cores != 2 {
		t.Errorf("arm: %+v", arm)
	}
}

func TestParseMemTotal(t *testing.T) {
	total, ok := parseMemTotal(readTestdata(t, "meminfo.txt"))
	if !ok || total != 24682416*1024 {
		t.Fatalf("got %d %v", total, ok)
	}
	if gib(total) != 23.5 {
		t.Errorf("ramGB %v", gib(total))
	}
}

func TestParseMounts(t *testing.T) {
	got := parseMounts(readTestdata(t, "mounts-host.txt"))
	want := []mount{
		{"/dev/mapper/vgubuntu-root", "/", "ext4"},
		{"/dev/nvme0n1p2", "/boot", "ext4"},
		{"/dev/nvme0n1p1", "/boot/efi", "vfat"},
		{"/dev/sdb1", "/media/alice/USB", "fuseblk"},
		{"/dev/sda1", "/srv/backup disk", "xfs"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	container := parseMounts(readTestdata(t, "mounts-container.txt"))
	if len(container) != 1 || container[0].Path != "/" {
		t.Errorf("container: %+v", container)
	}
	overlayRoot := parseMounts([]byte("overlay / overlay rw,relatime 0 0\noverlay /var/lib/x overlay rw 0 0\n"))
	if len(overlayRoot) != 1 || overlayRoot[0].Path != "/" {
		t.Errorf("overlay: %+v", overlayRoot)
	}
}

func TestParseBtime(t *testing.T) {
	got, ok := parseBtime([]byte("cpu  1 2 3\nintr 5\nbtime 1732086000\nprocesses 9\n"))
	if !ok || !got.Equal(time.Date(2024, 11, 20, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("got %v %v", got, ok)
	}
}

func TestDpkgSoftware(t *testing.T) {
	pkgs := parseDpkgQuery(readTestdata(t, "dpkg-query.txt"))
	if len(pkgs) != 41 {
		t.Errorf("%d packages", len(pkgs))
	}
	dates := map[string]string{"bash": "2026-05-09", "libc6:amd64": "2026-05-10"}
	sw := dpkgSoftware(pkgs, func(bin, name string) string { return dates[bin] })
	var found int
	for _, s := range sw {
		switch s.Name {
		case "bash":
			found++
			if deref(s.Version) != "5.2.15-2+b8" || deref(s.Publisher) != "Matthias Klose" || deref(s.InstallDate) != "2026-05-09" || deref(s.InstallType) != "deb" {
				t.Errorf("bash: %+v", s)
			}
		case "libc6":
			found++
			if deref(s.InstallDate) != "2026-05-10" {
				t.Errorf("libc6 date from its :amd64 list file: %+v", s)
			}
		}
	}
	if found != 2 {
		t.Errorf("bash and libc6 not both found")
	}
	multi := dpkgSoftware(parseDpkgQuery(readTestdata(t, "dpkg-query-multiarch.txt")), func(string, string) string { return "" })
	if len(multi) != 2 || multi[0].Name != "libc6:i386" || multi[1].Name != "libc6:amd64" || multi[0].InstallDate != nil {
		t.Errorf("multiarch: %+v", multi)
	}
}

func TestParseRPMQuery(t *testing.T) {
	sw := parseRPMQuery(readTestdata(t, "rpm-qa.txt"))
	byName := map[string]string{}
	for _, s := range sw {
		byName[s.Name] = deref(s.Version) + "|" + deref(s.Publisher) + "|" + deref(s.InstallDate) + "|" + deref(s.InstallType)
	}
	want := map[string]string{
		"bash":         "5.1.8-9.el9|Red Hat, Inc.|2024-04-25|rpm",
		"openssl-libs": "1:3.0.7-27.el9|Red Hat, Inc.|2024-04-25|rpm",
		"glibc.x86_64": "2.34-100.el9_4.2|Red Hat, Inc.|2024-04-25|rpm",
		"glibc.i686":   "2.34-100.el9_4.2|Red Hat, Inc.|2024-04-25|rpm",
		"kernel":       "5.14.0-427.13.1.el9_4|Red Hat, Inc.|2024-04-25|rpm",
		"python3.11":   "3.11.7-1.el9|Red Hat, Inc.|2024-04-25|rpm",
		"local-tool":   "1.0-1||2024-04-25|rpm",
	}
	if !reflect.DeepEqual(byName, want) {
		t.Errorf("got  %v\nwant %v", byName, want)
	}
}

func TestParseAptUpgradable(t *testing.T) {
	ups := parseAptUpgradable(readTestdata(t, "apt-list-upgradable.txt"), "debian")
	if len(ups) != 124 {
		t.Fatalf("%d updates, want 124", len(ups))
	}
	by := map[string]int{}
	for i, u := range ups {
		by[*u.PackageName] = i
	}
	apt := ups[by["apt"]]
	if apt.Title != "apt 2.6.2" || deref(apt.InstalledVersion) != "2.6.1" || deref(apt.LatestVersion) != "2.6.2" ||
		apt.Source != "OS - Mandatory" || deref(apt.Severity) != "Important" || !reflect.DeepEqual(apt.Categories, []string{"Security Updates"}) ||
		deref(apt.Distro) != "debian" || apt.RebootRequired || apt.KB != nil {
		t.Errorf("apt: %+v", apt)
	}
	bash := ups[by["bash"]]
	if bash.Source != "OS - Optional" || deref(bash.Severity) != "Unspecified" || !reflect.DeepEqual(bash.Categories, []string{"Updates"}) {
		t.Errorf("bash: %+v", bash)
	}
	// Multiple suites: "oldstable,oldstable-security" is a security update.
	multi := parseAptUpgradable([]byte("Listing...\nlibgcrypt20/oldstable,oldstable-security 1.10.1-3+deb12u1 amd64 [upgradable from: 1.10.1-3]\nlinux-image-amd64/jammy-updates 6.1.0-28 amd64 [upgradable from: 6.1.0-25]\n"), "ubuntu")
	if len(multi) != 2 || multi[0].Source != "OS - Mandatory" || multi[1].Source != "OS - Optional" || !multi[1].RebootRequired {
		t.Errorf("multi: %+v", multi)
	}
}

func TestDnfUpdates(t *testing.T) {
	avail := parseDnfCheckUpdate(readTestdata(t, "dnf-check-update.txt"))
	if len(avail) != 6 {
		t.Fatalf("%d rows: %+v", len(avail), avail)
	}
	if avail[5].Name != "NetworkManager-libnm-with-a-very-long-package-name" || avail[5].Version != "1:1.46.0-8.el9_4" || avail[5].Repo != "baseos" {
		t.Errorf("wrapped row: %+v", avail[5])
	}
	adv := parseDnfUpdateinfo(readTestdata(t, "dnf4-updateinfo-list.txt"))
	if a := adv["kernel"]; !a.Security || a.Severity != "Important" || a.ID != "RHSA-2024:3501" {
		t.Errorf("kernel advisory: %+v", a)
	}
	if a := adv["tzdata"]; a.Security {
		t.Errorf("tzdata: %+v", a)
	}
	installed := map[string]string{"bash": "5.1.8-9.el9", "kernel": "5.14.0-427.13.1.el9_4", "openssl-libs": "1:3.0.7-27.el9"}
	ups := dnfUpdates(avail, adv, installed, "rocky")
	by := map[string]int{}
	for i, u := range ups {
		by[*u.PackageName] = i
	}
	k := ups[by["kernel"]]
	if k.Source != "OS - Mandatory" || deref(k.Severity) != "Important" || !k.RebootRequired || deref(k.InstalledVersion) != "5.14.0-427.13.1.el9_4" || k.Title != "kernel 5.14.0-427.20.1.el9_4" {
		t.Errorf("kernel: %+v", k)
	}
	if o := ups[by["openssl-libs"]]; deref(o.Severity) != "Moderate" || o.Source != "OS - Mandatory" {
		t.Errorf("openssl: %+v", o)
	}
	if b := ups[by["bash"]]; b.Source != "OS - Optional" || deref(b.Severity) != "Unspecified" {
		t.Errorf("bash: %+v", b)
	}
	if p := ups[by["python3.11"]]; p.InstalledVersion != nil || p.Source != "OS - Optional" {
		t.Errorf("python3.11: %+v", p)
	}

	adv5 := parseDnfUpdateinfo(readTestdata(t, "dnf5-updateinfo-list.txt"))
	if a := adv5["kernel"]; !a.Security || a.Severity != "Important" {
		t.Errorf("dnf5 kernel: %+v", a)
	}
	if a := adv5["curl"]; !a.Security || a.Severity != "" {
		t.Errorf("dnf5 curl: %+v", a)
	}
	if a, ok := adv5["tzdata"]; !ok || a.Security {
		t.Errorf("dnf5 tzdata: %+v", a)
	}
	if u := dnfUpdates([]dnfAvailable{{Name: "curl", Version: "8.6.0-9.fc40"}}, adv5, nil, "fedora"); deref(u[0].Severity) != "Important" {
		t.Errorf("security without severity: %+v", u[0])
	}
}

func TestAccounts(t *testing.T) {
	users := parsePasswd(readTestdata(t, "passwd.txt"))
	groups := parseGroup(readTestdata(t, "group.txt"))
	shadow := parseShadow(readTestdata(t, "shadow.txt"))
	rows := localUserRows(users, shadow, map[string]time.Time{"alice": time.Date(2026, 11, 20, 7, 58, 0, 0, time.UTC)})
	var names []string
	for _, r := range rows {
		names = append(names, r["name"].(string))
	}
	if !reflect.DeepEqual(names, []string{"root", "alice", "bob", "svc-backup"}) {
		t.Errorf("users %v", names)
	}
	if rows[1]["fullName"] != "Alice Example" || rows[1]["enabled"] != true || rows[1]["lastLogonAt"] != "2026-11-20T07:58:00Z" ||
		rows[3]["enabled"] != false || rows[2]["lastLogonAt"] != nil {
		t.Errorf("rows %v", rows)
	}
	for _, r := range rows {
		assertKeys(t, "local-users", r)
	}
	admins := localAdministratorRows(users, groups)
	want := []map[string]any{
		{"account": "root", "type": "User", "source": "Local"},
		{"account": "sudo", "type": "Group", "source": "Local"},
		{"account": "alice", "type": "User", "source": "Local"},
		{"account": "bob", "type": "User", "source": "Local"},
	}
	if !reflect.DeepEqual(admins, want) {
		t.Errorf("admins %v", admins)
	}
}

func TestServices(t *testing.T) {
	files := parseUnitFiles(readTestdata(t, "systemctl-list-unit-files-host.txt"))
	account := func(unit string) string {
		if unit == "nginx.service" {
			return "www-data"
		}
		return "root"
	}
	rows := serviceRows(parseSystemctlUnits(readTestdata(t, "systemctl-list-units.txt")), files, true, account)
	by := map[string]map[string]any{}
	for _, r := range rows {
		by[r["name"].(string)] = r
	}
	if _, ok := by["auditd"]; ok {
		t.Error("not-found unit listed")
	}
	if _, ok := by["getty@"]; ok {
		t.Error("template listed")
	}
	if r := by["ssh"]; r["state"] != "running" || r["startMode"] != "enabled" || r["displayName"] != "OpenBSD Secure Shell server" || r["account"] != "root" {
		t.Errorf("ssh %v", r)
	}
	if r := by["nginx"]; r["state"] != "stopped" || r["account"] != "www-data" {
		t.Errorf("nginx %v", r)
	}
	if r := by["rsync"]; r["state"] != "stopped" || r["startMode"] != "disabled" {
		t.Errorf("rsync %v", r)
	}
	if r := by["systemd-fsckd"]; r["startMode"] != "static" {
		t.Errorf("fsckd %v", r)
	}
	for _, r := range rows {
		assertKeys(t, "services", r)
	}
	unknown := serviceRows(nil, parseUnitFiles(readTestdata(t, "systemctl-list-unit-files.txt")), false, account)
	if len(unknown) == 0 || unknown[0]["state"] != "unknown" {
		t.Errorf("without units: %v", unknown)
	}
	startup := enabledUnitRowsForTest(files)
	if !reflect.DeepEqual(startup, []string{"accounts-daemon.service", "apparmor.service", "apt-daily.timer", "cron.service", "nginx.service", "ssh.service", "unattended-upgrades.service"}) {
		t.Errorf("startup %v", startup)
	}
}

func TestWho(t *testing.T) {
	s := parseWho(readTestdata(t, "who.txt"))
	if len(s) != 4 || s[2].Host != "10.1.2.3" || s[3].Host != "" || s[0].Since != "2026-11-20 07:58" {
		t.Errorf("%+v", s)
	}
	if u := consoleUser(s); u != "alice" {
		t.Errorf("console user %q", u)
	}
	if u := consoleUser(parseWho(readTestdata(t, "who-ssh-only.txt"))); u != "deploy" {
		t.Errorf("ssh user %q", u)
	}
	if u := consoleUser(nil); u != "" {
		t.Errorf("nobody: %q", u)
	}
	rows := sessionRows(s, time.UTC)
	if rows[0]["logonAt"] != "2026-11-20T07:58:00Z" || rows[0]["sessionType"] != "console" || rows[2]["sessionType"] != "ssh" || rows[2]["clientAddress"] != "10.1.2.3" {
		t.Errorf("sessions %v", rows)
	}
	for _, r := range rows {
		assertKeys(t, "logged-on-users", r)
	}
}

func TestParseRoutes(t *testing.T) {
	rows := parseRoutes(readTestdata(t, "proc-net-route.txt"))
	if len(rows) != 2 {
		t.Fatalf("%v", rows)
	}
	if rows[0]["destination"] != "0.0.0.0" || rows[0]["gateway"] != "192.0.2.1" || rows[0]["interface"] != "eth0" {
		t.Errorf("default route %v", rows[0])
	}
	if rows[1]["destination"] != "192.0.2.0" || rows[1]["netmask"] != "255.255.255.0" {
		t.Errorf("link route %v", rows[1])
	}
	for _, r := range rows {
		assertKeys(t, "routing-tables", r)
	}
}

func TestCronAndResolv(t *testing.T) {
	rows := parseCronReboot(readTestdata(t, "crontab.txt"), true, "", "/etc/crontab")
	if len(rows) != 1 || rows[0]["user"] != "root" || rows[0]["command"] != "/usr/local/bin/restore-firewall --quiet" || rows[0]["location"] != "/etc/crontab" {
		t.Errorf("%v", rows)
	}
	user := parseCronReboot([]byte("@reboot /home/alice/bin/start.sh\n"), false, "alice", "/var/spool/cron/crontabs/alice")
	if len(user) != 1 || user[0]["user"] != "alice" {
		t.Errorf("%v", user)
	}
	if d := parseResolvDomain(readTestdata(t, "resolv.conf.txt")); d != "corp.example.com" {
		t.Errorf("domain %q", d)
	}
}

func TestParseProc(t *testing.T) {
	st, ok := parseProcStat([]byte("4242 (tmux: server (1)) S 1 4242 4242 0 -1 4194624 1096 0 0 0 250 130 0 0 20 0 1 0 12345 9814016 1161 18446744073709551615\n"))
	if !ok || st.Name != "tmux: server (1)" || st.UTime != 250 || st.STime != 130 || st.StartTicks != 12345 {
		t.Errorf("%+v %v", st, ok)
	}
	uid, rss := parseProcStatus([]byte("Name:\tbash\nUid:\t1000\t1000\t1000\t1000\nVmRSS:\t    5120 kB\n"))
	if uid != 1000 || rss != 5120*1024 {
		t.Errorf("%d %d", uid, rss)
	}
}

func TestEnvironmentRowsHideSecrets(t *testing.T) {
	rows := environmentRows([]string{"PATH=/usr/bin", "AWS_SECRET_ACCESS_KEY=x", "GITHUB_TOKEN=y", "DB_PASSWORD=z", "LANG=C", "broken"})
	if len(rows) != 2 || rows[0]["name"] != "LANG" || rows[1]["name"] != "PATH" {
		t.Errorf("%v", rows)
	}
}

func enabledUnitRowsForTest(files map[string]string) []string {
	var names []string
	for _, r := range enabledUnitRows(files, func(string) (string, string, string) { return "", "", "" }) {
		names = append(names, r["name"].(string))
	}
	return names
}
