package collect

import (
	"os"
	"reflect"
	"testing"
	"time"
)

// checkRows compares rows with want and holds every row to the contract's
// keys of dataset.
func checkRows(t *testing.T, dataset string, got, want []map[string]any) {
	t.Helper()
	for _, r := range got {
		assertKeys(t, dataset, r)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s rows:\n got %v\nwant %v", dataset, got, want)
	}
}

func TestLogonHistoryFromWtmpAndBtmp(t *testing.T) {
	wtmp, btmp := parseUtmp(readTestdata(t, "wtmp")), parseUtmp(readTestdata(t, "btmp"))
	if len(wtmp) != 9 || len(btmp) != 4 {
		t.Fatalf("%d wtmp and %d btmp records", len(wtmp), len(btmp))
	}
	if r := wtmp[5]; r.Type != utmpUserProcess || r.User != "alice" || r.Line != "pts/0" || r.Host != "10.20.16.41" ||
		!r.At.Equal(time.Date(2026, 11, 18, 9, 15, 2, 0, time.UTC)) {
		t.Errorf("record %+v", r)
	}
	since := time.Date(2026, 11, 7, 0, 0, 0, 0, time.UTC) // 14 days before 2026-11-21
	checkRows(t, "logon-history", logonHistoryRows(wtmp, btmp, since), []map[string]any{
		logonRow("alice", "ssh", time.Date(2026, 11, 20, 7, 45, 19, 0, time.UTC), true),
		logonRow("alice", "ssh", time.Date(2026, 11, 20, 7, 45, 1, 0, time.UTC), false),
		logonRow("bob", "Interactive", time.Date(2026, 11, 19, 13, 2, 40, 0, time.UTC), true), // an X display, :0
		logonRow("oracle", "ssh", time.Date(2026, 11, 19, 2, 11, 14, 0, time.UTC), false),
		logonRow("admin", "ssh", time.Date(2026, 11, 19, 2, 11, 9, 0, time.UTC), false),
		logonRow("alice", "ssh", time.Date(2026, 11, 18, 9, 15, 2, 0, time.UTC), true),
	})
	// The root logon on tty1 of 2026-11-03 is older than the window.
	all := logonHistoryRows(wtmp, btmp, time.Time{})
	if len(all) != 8 || all[7]["user"] != "root" || all[6]["logonType"] != "Interactive" || all[6]["user"] != "root" {
		t.Errorf("without a window: %v", all)
	}
	if got := parseUtmp(readTestdata(t, "wtmp")[:500]); len(got) != 1 {
		t.Errorf("a cut record was read: %d records", len(got))
	}
}

func TestParseLastISO(t *testing.T) {
	got := logonHistoryRows(parseLastISO(readTestdata(t, "last-iso.txt")), nil, time.Time{})
	checkRows(t, "logon-history", got, []map[string]any{
		logonRow("alice", "ssh", time.Date(2026, 11, 20, 7, 45, 19, 0, time.UTC), true),
		logonRow("bob", "Interactive", time.Date(2026, 11, 19, 13, 2, 40, 0, time.UTC), true),
		logonRow("root", "Interactive", time.Date(2026, 11, 3, 8, 10, 0, 0, time.UTC), true),
	})
}

func TestParseWtmpdbLast(t *testing.T) {
	got := logonHistoryRows(parseLastISO(readTestdata(t, "wtmpdb-last-iso.txt")), nil, time.Time{})
	checkRows(t, "logon-history", got, []map[string]any{
		logonRow("alice", "ssh", time.Date(2026, 11, 20, 7, 45, 19, 0, time.UTC), true),
		logonRow("carol", "ssh", time.Date(2026, 11, 19, 21, 10, 5, 0, time.UTC), true),
	})
}

func TestParseDarwinLast(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	got := logonHistoryRows(parseDarwinLast(readTestdata(t, "last-macos.txt"), now, time.UTC), nil, time.Time{})
	checkRows(t, "logon-history", got, []map[string]any{
		logonRow("bob", "ssh", time.Date(2026, 11, 20, 9, 15, 0, 0, time.UTC), true),
		logonRow("alice", "Interactive", time.Date(2026, 11, 19, 8, 2, 0, 0, time.UTC), true),
		logonRow("alice", "Interactive", time.Date(2026, 11, 18, 8, 5, 0, 0, time.UTC), true),
		// The dates go forward reading backwards: last year's.
		logonRow("alice", "Interactive", time.Date(2025, 12, 29, 9, 0, 0, 0, time.UTC), true),
	})
}

func TestCountJournal(t *testing.T) {
	f, err := os.Open("testdata/journalctl-json.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := countJournal(f)
	if err != nil {
		t.Fatal(err)
	}
	at := func(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339) }
	checkRows(t, "event-log-summary", rows, []map[string]any{
		{"log": "journal", "level": "crit", "count": 1, "lastEventAt": at(1763730000000000), "topSource": "kernel"},
		{"log": "journal", "level": "err", "count": 3, "lastEventAt": at(1763726400000000), "topSource": "systemd"},
		// python3 has no SYSLOG_IDENTIFIER; its binary MESSAGE is ignored.
		{"log": "journal", "level": "warning", "count": 2, "lastEventAt": at(1763733600000000), "topSource": "kernel"},
		{"log": "auth", "level": "crit", "count": 0, "lastEventAt": nil, "topSource": ""},
		{"log": "auth", "level": "err", "count": 1, "lastEventAt": at(1763719200000000), "topSource": "sshd"},
		{"log": "auth", "level": "warning", "count": 0, "lastEventAt": nil, "topSource": ""},
	})
}

func TestCountDarwinLog(t *testing.T) {
	f, err := os.Open("testdata/log-show-ndjson.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := countDarwinLog(f)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "event-log-summary", rows, []map[string]any{
		{"log": "system", "level": "fault", "count": 1, "lastEventAt": "2026-11-20T11:00:00Z", "topSource": "kernel"},
		{"log": "system", "level": "error", "count": 3, "lastEventAt": "2026-11-20T10:30:00Z", "topSource": "WindowServer"},
	})
}

func TestDpkgInstalledUpdates(t *testing.T) {
	ups := parseDpkgLog(readTestdata(t, "dpkg.log"), time.UTC)
	if len(ups) != 7 {
		t.Fatalf("%d upgrades: %+v", len(ups), ups)
	}
	by := parseAptHistory(readTestdata(t, "apt-history.log"))
	day := func(d, h, m, s int) time.Time { return time.Date(2026, 11, d, h, m, s, 0, time.UTC) }
	checkRows(t, "installed-updates", dpkgInstalledUpdates(ups, by, "amd64"), []map[string]any{
		// A DEPLOY_UPDATES command of patchd (its apt marker).
		installedUpdateRow("", "libcurl4 7.88.1-10+deb12u8", "Package Upgrade", day(20, 10, 2, 13), "patchd"),
		installedUpdateRow("", "curl 7.88.1-10+deb12u8", "Package Upgrade", day(20, 10, 2, 12), "patchd"),
		installedUpdateRow("", "tzdata 2024b-0+deb12u1", "Package Upgrade", day(19, 22, 5, 22), "alice"),
		installedUpdateRow("", "libc6:i386 2.36-9+deb12u9", "Package Upgrade", day(19, 22, 5, 21), "alice"),
		installedUpdateRow("", "linux-image-amd64 6.1.119-1", "Package Upgrade", day(19, 22, 5, 20), "alice"),
		installedUpdateRow("", "openssl 3.0.15-1~deb12u1", "Package Upgrade", time.Date(2026, 10, 14, 6, 25, 13, 0, time.UTC), "unattended-upgrades"),
		installedUpdateRow("", "libssl3 3.0.15-1~deb12u1", "Package Upgrade", time.Date(2026, 10, 14, 6, 25, 12, 0, time.UTC), "unattended-upgrades"),
	})
	// Without apt's history dpkg's upgrades are root's.
	if rows := dpkgInstalledUpdates(ups, nil, "amd64"); rows[0]["installedBy"] != "root" || rows[0]["kb"] != nil {
		t.Errorf("%v", rows[0])
	}
	// dpkg.log times are local.
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if berlin != nil {
		if u := parseDpkgLog(readTestdata(t, "dpkg.log"), berlin); !u[0].At.Equal(time.Date(2026, 10, 14, 4, 25, 12, 0, time.UTC)) {
			t.Errorf("local time: %v", u[0].At)
		}
	}
}

func TestRPMInstalledUpdates(t *testing.T) {
	checkRows(t, "installed-updates", parseDnfRPMLog(readTestdata(t, "dnf.rpm.log")), []map[string]any{
		installedUpdateRow("", "tzdata 2024b-2.el9", "Package Upgrade", time.Date(2026, 11, 12, 3, 14, 10, 0, time.UTC), "root"),
		installedUpdateRow("", "openssl-libs 3.2.2-6.el9_5", "Package Upgrade", time.Date(2026, 11, 12, 3, 14, 9, 0, time.UTC), "root"),
	})
	mod := time.Date(2026, 11, 12, 3, 14, 11, 0, time.UTC)
	checkRows(t, "installed-updates", parseYumLog(readTestdata(t, "yum.log"), mod, time.UTC), []map[string]any{
		installedUpdateRow("", "openssl-libs 1.0.2k-26.el7_9", "Package Upgrade", time.Date(2026, 11, 12, 3, 14, 9, 0, time.UTC), "root"),
		// December is after the file was last written: last year's.
		installedUpdateRow("", "tzdata 2023c-1.el7", "Package Upgrade", time.Date(2025, 12, 3, 10, 1, 44, 0, time.UTC), "root"),
	})
	for in, want := range map[string]string{
		"kernel-core-5.14.0-503.14.1.el9_5.x86_64": "kernel-core 5.14.0-503.14.1.el9_5",
		"openssl-libs-1:3.2.2-6.el9_5.x86_64":      "openssl-libs 3.2.2-6.el9_5",
		"noversion":                                "noversion",
	} {
		if got := nevraTitle(in); got != want {
			t.Errorf("nevraTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewestRowsKeepsTheNewest(t *testing.T) {
	var rows []map[string]any
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range maxHistoryRows + 10 {
		rows = append(rows, logonRow("x", "ssh", start.Add(time.Duration(i)*time.Minute), false))
	}
	got := newestRows(rows, "logonAt")
	if len(got) != maxHistoryRows || got[0]["logonAt"] != start.Add((maxHistoryRows+9)*time.Minute).Format(time.RFC3339) {
		t.Errorf("%d rows, first %v", len(got), got[0])
	}
}
